"""`literal`: no model. Runs the case's `steps` verbatim, in order, in the workspace.

Each step is one bash tool call and its result. It stops at the first failing step and
records it; it never retries and never edits anything. This is the zero-key, deterministic
mode: it tests the documented workflow exactly as documented.

A doc-test case (the generic tier: `steps` are SKILL.md's shell blocks) runs differently,
by the rules of `aeval.verdicts.doctest`: each block from the skill copy (paths in SKILL.md are
relative to the skill folder), placeholder blocks skipped with the reason. It reports what
each block did (`DocTestReport`); the judge decides the verdict from that report (`failed`
only on a defect in the skill's own code or interface, `untested: needs X` for a missing
host tool). A case with no `steps` is `untested`: nothing to run, and a retry
cannot change that. A step that is only comments runs nothing (``aeval init`` writes a block
the author must make runnable as one, its first line saying what it needs): it is not
started, and a case whose every step is a comment is `untested` with the first one's words.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from aeval.errors import KilledFromOutside, RuntimeUnavailable
from aeval.isolation.shell import CommandResult, run_command
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, ExecutionResult
from aeval.skill.shell_blocks import BlockPlan, DocBlock, plan_blocks
from aeval.skill.shellparse import as_skill_var, follow_skill_dir, skill_dir_sets_in
from aeval.verdicts.diagnosis import diagnose
from aeval.verdicts.doctest import (
    BlockOutcome,
    DocTestReport,
    did_nothing,
    discounted,
    not_run,
    promised,
    taints,
)
from aeval.verdicts.documented import skill_files

NO_STEPS = "no steps: the literal runtime has nothing to run (add `steps` to eval.config, " \
           "or use an agent runtime with --model)"
EVIDENCE_CAP = 2_000
# the skill folder's spellings other than its variables (`{baseDir}`, the install path, a
# plugin root's skills/<name>) run as this variable: the copy, whatever the skill later
# assigns to $SKILL_DIR (which bash, with it set, follows as written)
ROOT_VAR = "AEVAL_SKILL_ROOT"
ROOT_REF = "${" + ROOT_VAR + "}"


def comment_only(step: str) -> bool:
    """Whether a step is only comments and blank lines: it runs nothing."""
    return all(not ln.strip() or ln.lstrip().startswith("#") for ln in step.splitlines())


def outside(where: str, r: CommandResult) -> str:
    """The reason of a case whose command was SIGKILLed from outside (`outside_kill`)."""
    return (f"{where} was killed by SIGKILL that neither the case nor aeval sent (exit "
            f"{r.exit_code}; an operator or the host's OOM killer): an environment error, "
            "retried")


class LiteralRuntime:
    name: ClassVar[str] = "literal"
    skills_subdir: ClassVar[str | None] = ".agents/skills"
    needs_model: ClassVar[bool] = False
    runs_steps_verbatim: ClassVar[bool] = True
    config_dirs: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = "nothing to install: part of aeval"
    block_timeout_s: ClassVar[float] = 300.0  # one doc block (a server it starts is killed)

    def version(self) -> str | None:
        return "aeval"

    def check_available(self) -> None:
        return None

    def _run(self, command: str, cwd: Path, env: dict[str, str], timeout_s: float,
             cap: int, request: ExecutionRequest, recorder: EventRecorder) -> CommandResult:
        """The one place a command is started: in the attempt's sandbox, its output redacted
        before it is capped."""
        return run_command(command, cwd, env, timeout_s, cap=cap, redactor=recorder.redactor,
                           sandbox=request.sandbox)

    def run(self, request: ExecutionRequest, recorder: EventRecorder) -> ExecutionResult:
        if request.doc_test:  # the generic tier: SKILL.md's blocks, from the skill folder
            return self.run_doc_test(request, recorder, host_tools=tuple(request.host_tools))
        return self.run_steps(request, recorder)

    def run_steps(self, request: ExecutionRequest, recorder: EventRecorder) -> ExecutionResult:
        """The contract's steps verbatim, from the workspace root; stop at the first failure."""
        start = time.monotonic()
        recorder.message("user", request.prompt)
        if not request.steps:
            recorder.end("untested", NO_STEPS)
            return ExecutionResult(status="untested", final_text=NO_STEPS)
        if all(comment_only(s) for s in request.steps):
            first = next(ln for ln in request.steps[0].splitlines() if ln.strip())
            final = (f"no runnable step: every step is a comment; the first says: "
                     f"{first.strip().lstrip('#').strip()[:300]}")
            recorder.end("untested", final)
            return ExecutionResult(status="untested", final_text=final)
        deadline = start + request.limits.timeout_s
        ran = sum(not comment_only(s) for s in request.steps)
        status, final = "completed", f"all {ran} step(s) succeeded"
        for i, step in enumerate(request.steps, 1):
            if comment_only(step):
                recorder.message("system", f"step {i}: a comment, nothing to run: "
                                           f"{step.strip().splitlines()[0][:300]}")
                continue
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
            if r.exceeded:
                status, final = "failed", f"step {i} of {len(request.steps)} killed: {r.exceeded}"
                break
            if r.killed_from_outside:
                recorder.end("failed", outside(f"step {i} of {len(request.steps)}", r))
                raise KilledFromOutside(outside(f"step {i} of {len(request.steps)}", r))
            if not r.ok:
                status, final = "failed", f"step {i} of {len(request.steps)} exited {r.exit_code}"
                break
        recorder.end(status, final)
        return ExecutionResult(status=status, final_text=final, wall_s=time.monotonic() - start)

    def run_doc_test(self, request: ExecutionRequest, recorder: EventRecorder,
                     host_tools: tuple[str, ...] = ()) -> ExecutionResult:
        """SKILL.md's shell blocks as a doc test (see `aeval.verdicts.doctest`).

        Every runnable block runs (a failure does not stop the others: each is its own
        evidence), from the skill copy with ``$SKILL_DIR`` and ``$CLAUDE_SKILL_DIR`` set and
        the other spellings of the skill folder (``{baseDir}``, ``/mnt/skills/user/<name>``)
        read as ``$SKILL_DIR``, under an ERR trap that names
        the simple command that failed. A failure is discounted only when the block depends
        on one that did not run cleanly. Raises RuntimeUnavailable when a tool the contract
        declares in ``host_tools`` is missing: the environment, not the skill, is at fault.
        """
        start = time.monotonic()
        recorder.message("user", request.prompt)
        blocks = request.doc_blocks or [DocBlock(0, code) for code in request.steps]
        if not blocks:
            final = "no self-contained block: SKILL.md has no shell block"
            recorder.end("untested", final)
            return ExecutionResult(status="untested", final_text=final,
                                   doc_test=DocTestReport(nothing=final))
        deadline = start + request.limits.timeout_s
        skill_dir = Path(request.skill_dir)
        names = tuple(dict.fromkeys((request.skill_name, skill_dir.name)))
        shipped = skill_files(skill_dir)
        # Claude Code's variable too: a block that names ${CLAUDE_SKILL_DIR}, or a script of
        # the skill that reads it, finds the copy
        env = {**request.env, "SKILL_DIR": str(skill_dir), "CLAUDE_SKILL_DIR": str(skill_dir),
               ROOT_VAR: str(skill_dir)}
        plans = plan_blocks(blocks)
        declared = frozenset(host_tools)
        outcomes: list[BlockOutcome] = []
        unclean: list[tuple[BlockPlan, BlockOutcome]] = []  # what later blocks may lack
        timed_out = False
        quiet: set[int] = set()  # clean blocks that said they did nothing
        skill_vars: dict[str, str] = {}  # what the skill set $SKILL_DIR to, block to block
        for i, plan in enumerate(plans, 1):
            where = f"SKILL.md line {plan.line}" if plan.line else f"block {i}"
            if plan.action == "skip":
                recorder.message("system", f"{where}: block skipped, {plan.reason}:\n{plan.code}")
                outcomes.append(BlockOutcome(plan.line, "skipped", plan.reason or ""))
                if taints(plan, outcomes[-1]):
                    unclean.append((plan, outcomes[-1]))
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            call_id = f"block-{i}"
            recorder.tool_call(call_id, "bash", {"command": plan.code})
            nonce = secrets.token_hex(8)
            # `{baseDir}/x`, `/mnt/skills/user/<name>/x`, `${CLAUDE_PLUGIN_ROOT}/skills/<name>/x`:
            # the copy's x, whatever the skill assigned to $SKILL_DIR in an earlier block
            # (`SKILL_DIR="${CLAUDE_PLUGIN_ROOT}/skills/<name>/scripts"` twice is not
            # scripts/scripts); $SKILL_DIR itself stays for bash (the line count holds)
            code = as_skill_var(plan.code, names, to=ROOT_REF, variables=False)
            # the skill's own `SKILL_DIR=~/.claude/skills/<name>/scripts` is followed: bash
            # gets the copy's folder, the diagnosis reads the words as the skill meant them
            read, after = follow_skill_dir(plan.code, names, skill_vars)
            read = as_skill_var(read, names)
            ran_code = skill_dir_sets_in(code, names, str(skill_dir))
            block_env = {**env, **{var: str(skill_dir) + value.removeprefix("$SKILL_DIR")
                                   for var, value in skill_vars.items()
                                   if value.startswith("$SKILL_DIR/")}}
            skill_vars = after
            r = self._run(_with_err_trap(ran_code, nonce), skill_dir, block_env,
                          min(remaining, self.block_timeout_s), request.limits.output_cap,
                          request, recorder)
            output, failed = _take_marker(r.combined(), nonce)
            recorder.tool_result(call_id, "bash", r.ok, exit_code=r.exit_code, output=output,
                                 duration_s=round(r.duration_s, 3), truncated=r.truncated)
            if r.ok:
                outcomes.append(BlockOutcome(plan.line, "ok"))
                if did_nothing(output):
                    quiet.add(i - 1)
                if taints(plan, outcomes[-1]):
                    unclean.append((plan, outcomes[-1]))
                continue
            if r.exceeded:  # the attempt is over its disk bound: no later block could run
                outcomes.append(BlockOutcome(plan.line, "defect", f"killed: {r.exceeded}",
                                             evidence=output[-EVIDENCE_CAP:]))
                recorder.message("system", f"{where}: killed: {r.exceeded}")
                break
            if r.killed_from_outside:
                recorder.end("failed", outside(where, r))
                raise KilledFromOutside(outside(where, r))
            if r.timed_out:
                outcome = BlockOutcome(plan.line, "timeout",
                                       f"did not finish in {r.duration_s:.0f}s")
                if time.monotonic() >= deadline:
                    timed_out = True
            else:
                # the code that ran: its words are what bash's ERR trap names
                if failed is not None:
                    failed = follow_skill_dir(failed, names, after)[0].replace(
                        ROOT_REF, "$SKILL_DIR")
                code = read
                d = diagnose(code, r.exit_code, output, skill_dir, declared, failed, names,
                             blocks[i - 1].results)
                if d.tool is not None and d.tool in declared:
                    recorder.end("failed", d.reason)
                    raise RuntimeUnavailable(f"{where}: host tool {d.tool} is missing although "
                                             "the case declares it in host_tools")
                line = plan.line + d.at if plan.line and d.at is not None else plan.line
                ran = [b for k, (b, o) in enumerate(zip(blocks, outcomes, strict=False))
                       if o.outcome == "ok" and k not in quiet]
                said = promised(d.input, ran) if d.input and not unclean else None
                if said is not None:  # SKILL.md said an earlier, clean block writes it
                    d = replace(d, kind="defect", reason=f"SKILL.md says an earlier block, "
                                f"which ran cleanly, writes {d.input} ({said!r}); this block "
                                f"does not find it: {d.reason}")
                rest = not_run(code, d.at, plan.line)
                if rest is not None:  # bash -e stopped the block: say what it never reached
                    d = replace(d, reason=f"{d.reason}; {rest}")
                # a status SKILL.md gives as the skill's answer: the block ran, if all of it did
                kind = d.kind if d.kind != "result" else "inconclusive" if rest else "ok"
                outcome = BlockOutcome(line, kind, d.reason, d.tool,
                                       evidence=output[-EVIDENCE_CAP:])
                if d.kind == "defect":
                    why = discounted(plan, d, unclean, shipped)
                    if why is not None:
                        outcome = BlockOutcome(line, "not_evidence",
                                               f"{d.reason}; not evidence: {why}")
            outcomes.append(outcome)
            if taints(plan, outcome):
                unclean.append((plan, outcome))
            recorder.message("system", f"{where}: {outcome.outcome}: {outcome.reason}")
            if timed_out:
                break
        report = DocTestReport(blocks=outcomes, planned=len(plans), timed_out=timed_out)
        summary = report.summary()  # the transcript's last words; the judge decides from report
        recorder.end(summary.status, summary.final_text)
        return ExecutionResult(status="timeout" if timed_out else "completed",
                               final_text=summary.final_text, wall_s=time.monotonic() - start,
                               doc_test=report)


_MARKER = "@@aeval-failed-"


def _with_err_trap(code: str, nonce: str) -> str:
    """The block with an ERR trap that prints the failing simple command on stderr behind a
    per-block marker (``set -E``: functions and subshells report too)."""
    trap = f'printf "\\n{_MARKER}{nonce} %s\\n" "${{BASH_COMMAND//[[:cntrl:]]/ }}" >&2'
    return f"set -E; trap '{trap}' ERR\n{code}"


def _take_marker(output: str, nonce: str) -> tuple[str, str | None]:
    """The output without the trap's lines, and the last command the trap named (the one
    that ended the block: an earlier one may have failed inside a command substitution)."""
    tag = f"{_MARKER}{nonce} "
    failed = None
    kept = []
    lines = output.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(tag):
            failed = line[len(tag):]
            if kept and kept[-1] == "" and i and lines[i - 1] == "":
                kept.pop()
            continue
        kept.append(line)
    return "\n".join(kept), failed
