"""The doc test of a skill that has no contract yet (`aeval init` without a model): SKILL.md's
shell blocks run once, as the doc test runs them in a case (the `literal` runtime's
`run_doc_test`: from a copy of the skill in a fresh workspace, in the attempt's sandbox, each
block bounded), so that the template's `steps` hold only what the doc test found
self-contained (`aeval.skill.contract_draft.template_config`).

A plain function: `aeval init` is no pipeline phase and runs no flow of its own. Nothing is
kept: the workspace is a temporary folder, removed at the end; the original skill is never
written to.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from aeval.adapters.git import left_out
from aeval.adapters.runtimes.literal import LiteralRuntime
from aeval.adapters.sandbox.bwrap import make_sandbox
from aeval.isolation.redact import Redactor
from aeval.isolation.sandbox import SandboxPolicy
from aeval.isolation.shell import base_env
from aeval.isolation.workspace import prepare_workspace
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
        ws = prepare_workspace(root / "attempt", skill.path, skill.name,
                               runtime.skills_subdir, [], (), True, skill.left_out)
        policy = SandboxPolicy(root=ws.root, output_cap=OUTPUT_CAP)
        box = make_sandbox(sandbox, policy)  # type: ignore[arg-type]
        box.policy = box.policy.model_copy(update={"pinned": [ws.skill_dir]})
        recorder = _Progress(root / "events.jsonl", [b.line for b in blocks], say)
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
