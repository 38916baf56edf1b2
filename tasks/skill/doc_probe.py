"""The doc test of a skill that has no contract yet (`aeval init` without a model): SKILL.md's
shell blocks run once, as the doc test runs them in a case (the `literal` runtime's
`run_doc_test`: from a copy of the skill in a fresh workspace, in the attempt's sandbox, each
block bounded), so that the template's `steps` hold only what the doc test found
self-contained (`aeval.skill.contract_draft.template_config`). Then the steps themselves are
rehearsed (`rehearse_steps`) as the `literal` runtime runs a contract's steps: from the
workspace root, the case's files copied in. A block that ran from the skill folder may not
run from there (``validate.py .`` names the folder it runs in): the step tells.

A plain function: `aeval init` is no pipeline phase and runs no flow of its own. Nothing is
kept: the workspace is a temporary folder, removed at the end; the original skill is never
written to.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aeval.adapters.git import left_out
from aeval.adapters.runtimes.literal import LiteralRuntime
from aeval.adapters.sandbox.bwrap import make_sandbox
from aeval.isolation.redact import Redactor
from aeval.isolation.sandbox import SandboxPolicy
from aeval.isolation.shell import base_env, run_command
from aeval.isolation.workspace import prepare_workspace
from aeval.run.layout import EVENTS
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, Limits
from aeval.skill.contract_draft import documented_blocks
from aeval.skill.skill_md import Skill
from aeval.verdicts.doctest import DocTestReport

PROBE_TIMEOUT_S = 600.0  # the whole doc test of one skill (each block: the runtime's bound)
OUTPUT_CAP = 16_000


class _Progress(EventRecorder):
    """The doc test's events, with a line on the console as each block starts."""

    def __init__(self, path: Path, lines: list[int], say: Callable[[str], None]):
        super().__init__(path, Redactor())
        self._lines, self._say = lines, say

    def tool_call(self, call_id: str, tool: str, input: dict):
        n = int(call_id.rsplit("-", 1)[-1]) if call_id.startswith("block-") else 0
        if 0 < n <= len(self._lines):
            self._say(f"    doc test [{n}/{len(self._lines)}] SKILL.md line "
                      f"{self._lines[n - 1]} ...")
        return super().tool_call(call_id, tool, input)


def _sandboxed(skill: Skill, files: list[str], sandbox: str, root: Path):
    ws = prepare_workspace(root / "attempt", skill.path, skill.name,
                           LiteralRuntime.skills_subdir, files, (), True, skill.left_out)
    box = make_sandbox(sandbox, SandboxPolicy(root=ws.root, output_cap=OUTPUT_CAP))  # type: ignore[arg-type]
    box.policy = box.policy.model_copy(update={"pinned": [ws.skill_dir]})
    return ws, box


def probe_doc_test(skill: Skill, sandbox: str = "auto",
                   say: Callable[[str], None] = print,
                   timeout_s: float = PROBE_TIMEOUT_S) -> DocTestReport:
    """Run ``skill``'s SKILL.md blocks as the doc test does and report what each did (one
    `BlockOutcome` per planned block, in order, up to the last one reached). ``sandbox``: as
    `aeval run --sandbox` (SandboxUnavailable under ``require`` without bubblewrap).
    ``say`` gets one line per block as it starts."""
    blocks = documented_blocks(skill)
    if not blocks:
        return DocTestReport(nothing="SKILL.md has no shell block")
    skill = skill.model_copy(update={"left_out": left_out(skill.path)})
    runtime = LiteralRuntime()
    root = Path(tempfile.mkdtemp(prefix="aeval-init-"))
    try:
        ws, box = _sandboxed(skill, [], sandbox, root)
        recorder = _Progress(root / EVENTS, [b.line for b in blocks], say)
        request = ExecutionRequest(
            prompt=f"Run the shell blocks of {skill.name}'s SKILL.md as documented.",
            case_id="aeval-init", workspace=ws.path, home=ws.home, skill_name=skill.name,
            skill_description=skill.description, skill_dir=ws.skill_dir,
            env=base_env(ws.home, {"SKILL_DIR": str(ws.skill_dir)}),
            steps=[b.code for b in blocks], doc_test=True, doc_blocks=blocks,
            limits=Limits(timeout_s=timeout_s, output_cap=OUTPUT_CAP),
            raw_log=root / "raw.jsonl", sandbox=box)
        try:
            result = runtime.run(request, recorder)
        finally:
            recorder.close()
        return result.doc_test or DocTestReport(nothing=result.final_text)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def rehearse_steps(skill: Skill, steps: list[str], files: list[str], sandbox: str = "auto",
                   timeout_s: float = PROBE_TIMEOUT_S) -> list[str | None]:
    """Run ``steps`` in order as the `literal` runtime runs a contract's (each from the
    workspace root, ``files`` of the skill copied there, ``$SKILL_DIR`` the skill copy), but
    past a failure: for each, None (it succeeded, or is a comment and runs nothing) or how
    it failed (``exited 2: <its last output line>``)."""
    from aeval.adapters.runtimes.literal import comment_only

    skill = skill.model_copy(update={"left_out": left_out(skill.path)})
    root = Path(tempfile.mkdtemp(prefix="aeval-init-"))
    out: list[str | None] = []
    try:
        ws, box = _sandboxed(skill, files, sandbox, root)
        env = base_env(ws.home, {"SKILL_DIR": str(ws.skill_dir)})
        deadline = time.monotonic() + timeout_s
        for step in steps:
            if comment_only(step):
                out.append(None)
                continue
            remaining = min(deadline - time.monotonic(), LiteralRuntime.block_timeout_s)
            if remaining <= 0:
                out.append("not run: the rehearsal ran out of time")
                continue
            r = run_command(step, ws.path, env, remaining, OUTPUT_CAP, sandbox=box)
            if r.ok:
                out.append(None)
                continue
            last = next((ln.strip() for ln in reversed(r.combined().splitlines())
                         if ln.strip()), "")
            out.append(f"exited {r.exit_code}" + (f": {last[:200]}" if last else "")
                       if not r.timed_out else f"did not finish in {r.duration_s:.0f}s")
        return out
    finally:
        shutil.rmtree(root, ignore_errors=True)
