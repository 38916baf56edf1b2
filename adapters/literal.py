"""`literal`: no model. Runs the case's `steps` verbatim, in order, in the workspace.

Each step is one bash tool call and its result. It stops at the first failing step and
records it; it never retries and never edits anything. This is the zero-key, deterministic
mode: it tests the documented workflow exactly as documented.

A doc-test case (the generic tier: `steps` are SKILL.md's shell blocks) runs differently,
by the rules of `aeval.doctest`: each block from the skill copy (paths in SKILL.md are
relative to the skill folder), placeholder blocks skipped with the reason, and the case
`failed` only on a defect in the skill's own code or interface; a missing host tool makes
it `untested: needs X`. A case with no `steps` is `untested`: nothing to run, and a retry
cannot change that.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from aeval.doctest import BlockOutcome, diagnose, plan_blocks, summarize, taints
from aeval.errors import RuntimeUnavailable
from aeval.runtime import EventRecorder, RunRequest, RunResult
from aeval.shell import CommandResult, run_command
from aeval.skill import load_skill

NO_STEPS = "no steps: the literal runtime has nothing to run (add `steps` to eval.config, " \
           "or use an agent runtime with --model)"
EVIDENCE_CAP = 2_000


class LiteralRuntime:
    name: ClassVar[str] = "literal"
    skills_subdir: ClassVar[str | None] = ".agents/skills"
    needs_model: ClassVar[bool] = False
    config_dirs: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = "nothing to install: part of aeval"
    block_timeout_s: ClassVar[float] = 300.0  # one doc block (a server it starts is killed)

    def version(self) -> str | None:
        return "aeval"

    def check_available(self) -> None:
        return None

    def _run(self, command: str, cwd: Path, env: dict[str, str], timeout_s: float,
             cap: int, request: RunRequest, recorder: EventRecorder) -> CommandResult:
        """The one place a command is started: in the attempt's sandbox, its output redacted
        before it is capped."""
        return run_command(command, cwd, env, timeout_s, cap=cap, redactor=recorder.redactor,
                           sandbox=request.sandbox)

    def run(self, request: RunRequest, recorder: EventRecorder) -> RunResult:
        if request.doc_test:  # the generic tier: SKILL.md's blocks, from the skill folder
            return self.run_doc_test(request, recorder, host_tools=tuple(request.host_tools))
        return self.run_steps(request, recorder)

    def run_steps(self, request: RunRequest, recorder: EventRecorder) -> RunResult:
        """The contract's steps verbatim, from the workspace root; stop at the first failure."""
        start = time.monotonic()
        recorder.message("user", request.prompt)
        if not request.steps:
            recorder.end("untested", NO_STEPS)
            return RunResult(status="untested", final_text=NO_STEPS)
        deadline = start + request.limits.timeout_s
        status, final = "completed", f"all {len(request.steps)} step(s) succeeded"
        for i, step in enumerate(request.steps, 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                status, final = "timeout", f"timeout before step {i}"
                break
            call_id = f"step-{i}"
            recorder.tool_call(call_id, "bash", {"command": step})
            r = self._run(step, request.workspace, request.env, remaining,
                          request.limits.output_cap, request, recorder)
            recorder.tool_result(call_id, "bash", r.ok, exit_code=r.exit_code,
                                 output=r.combined(), duration_s=round(r.duration_s, 3),
                                 truncated=r.truncated)
            if r.timed_out:
                status, final = "timeout", f"step {i} killed by the case timeout"
                break
            if not r.ok:
                status, final = "failed", f"step {i} of {len(request.steps)} exited {r.exit_code}"
                break
        recorder.end(status, final)
        return RunResult(status=status, final_text=final, wall_s=time.monotonic() - start)

    def run_doc_test(self, request: RunRequest, recorder: EventRecorder,
                     host_tools: tuple[str, ...] = ()) -> RunResult:
        """SKILL.md's shell blocks as a doc test (see `aeval.doctest`).

        Every runnable block runs (a failure does not stop the others: each is its own
        evidence), from the skill copy with ``$SKILL_DIR`` set. Raises RuntimeUnavailable
        when a tool the contract declares in ``host_tools`` is missing: the environment, not
        the skill, is then at fault.
        """
        start = time.monotonic()
        recorder.message("user", request.prompt)
        if not request.steps:
            final = "no self-contained block: SKILL.md has no shell block"
            recorder.end("untested", final)
            return RunResult(status="untested", final_text=final)
        deadline = start + request.limits.timeout_s
        skill_dir = Path(request.skill_dir)
        env = {**request.env, "SKILL_DIR": str(skill_dir)}
        lines = _block_lines(skill_dir)
        plans = plan_blocks([(lines.get(code, 0), code) for code in request.steps])
        declared = frozenset(host_tools)
        outcomes: list[BlockOutcome] = []
        tainted: BlockOutcome | None = None
        timed_out = False
        for i, plan in enumerate(plans, 1):
            where = f"SKILL.md line {plan.line}" if plan.line else f"block {i}"
            if plan.action == "skip":
                recorder.message("system", f"{where}: block skipped, {plan.reason}:\n{plan.code}")
                outcomes.append(BlockOutcome(plan.line, "skipped", plan.reason or ""))
                if plan.taints:
                    tainted = tainted or outcomes[-1]
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            call_id = f"block-{i}"
            recorder.tool_call(call_id, "bash", {"command": plan.code})
            r = self._run(plan.code, skill_dir, env, min(remaining, self.block_timeout_s),
                          request.limits.output_cap, request, recorder)
            output = r.combined()
            recorder.tool_result(call_id, "bash", r.ok, exit_code=r.exit_code, output=output,
                                 duration_s=round(r.duration_s, 3), truncated=r.truncated)
            if r.ok:
                outcomes.append(BlockOutcome(plan.line, "ok"))
                continue
            if r.timed_out:
                outcome = BlockOutcome(plan.line, "timeout",
                                       f"did not finish in {r.duration_s:.0f}s")
                if time.monotonic() >= deadline:
                    timed_out = True
            else:
                d = diagnose(plan.code, r.exit_code, output, skill_dir, declared)
                if d.tool is not None and d.tool in declared:
                    recorder.end("failed", d.reason)
                    raise RuntimeUnavailable(f"{where}: host tool {d.tool} is missing although "
                                             "the case declares it in host_tools")
                outcome = BlockOutcome(plan.line, d.kind, d.reason, d.tool,
                                       evidence=output[-EVIDENCE_CAP:])
                if outcome.outcome == "defect" and tainted is not None:
                    outcome = BlockOutcome(
                        plan.line, "not_evidence",
                        f"{d.reason}; not evidence: may depend on line {tainted.line} "
                        f"({tainted.outcome})")
            outcomes.append(outcome)
            if outcome.outcome != "not_evidence" and taints(outcome):
                tainted = tainted or outcome
            recorder.message("system", f"{where}: {outcome.outcome}: {outcome.reason}")
            if timed_out:
                break
        if timed_out:
            final = f"timeout after {len(outcomes)} of {len(plans)} block(s)"
            recorder.end("timeout", final)
            return RunResult(status="timeout", final_text=final,
                             wall_s=time.monotonic() - start)
        summary = summarize(outcomes)
        recorder.end(summary.status, summary.final_text)
        return RunResult(status=summary.status, final_text=summary.final_text,
                         wall_s=time.monotonic() - start)


def _block_lines(skill_dir: Path) -> dict[str, int]:
    """Block code -> the SKILL.md line it starts on (for messages; empty when unreadable)."""
    try:
        return {code: line for line, code in reversed(load_skill(skill_dir).shell_blocks())}
    except Exception:
        return {}
