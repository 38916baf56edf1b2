"""Re-record the raw Claude Code streams the parser tests read (run after upgrading the SDK):

    python tests/data/claude-code/capture.py

Runs the real `claude-code` runtime (the CLI bundled with claude-agent-sdk) against the
scripted model server on loopback, in a throw-away workspace under /tmp/aeval-cc-capture, and
copies each run's raw.jsonl (and the events.jsonl the live run emitted from it) here.
Nothing leaves the machine; no key is needed.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from aeval.adapters.runtimes.claude_code import ClaudeCodeRuntime  # noqa: E402
from aeval.errors import EnvironmentFailure  # noqa: E402
from aeval.isolation.redact import Redactor  # noqa: E402
from aeval.isolation.shell import base_env  # noqa: E402
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, Limits  # noqa: E402
from aeval.testing import Script, ScriptedModelServer, ToolCall, Turn  # noqa: E402

HERE = Path(__file__).resolve().parent
WORK = Path("/tmp/aeval-cc-capture")
SKILL = ".claude/skills/segmentation"
PROMPT = "Train a segmentation model on fixtures/ with the segmentation skill, writing to outputs/."


def bash(cmd: str) -> ToolCall:
    return ToolCall(name="Bash", arguments={"command": cmd, "description": "run"})


RUNS = {
    "edits-skill": (Script(name="edits-skill", match="Train a segmentation model", turns=[
        Turn(text="Reading the skill first.",
             tool_calls=[ToolCall(name="Read", arguments={"file_path": f"{SKILL}/SKILL.md"})]),
        Turn(tool_calls=[ToolCall(name="Glob", arguments={"pattern": "**/*.py"}),
                         ToolCall(name="Grep", arguments={"pattern": "segment_train",
                                                          "path": "."})]),
        Turn(tool_calls=[bash(f"python3 {SKILL}/scripts/run.py segment_train --data fixtures "
                              "--out outputs")]),
        Turn(text="The runner only knows `train`; fixing the documented action name.",
             tool_calls=[ToolCall(name="Edit", arguments={
                 "file_path": f"{SKILL}/SKILL.md", "old_string": "| `segment_train` |",
                 "new_string": "| `train` |"})]),
        Turn(tool_calls=[bash(f"python3 {SKILL}/scripts/run.py train --data fixtures "
                              "--out outputs")]),
        Turn(tool_calls=[ToolCall(name="Write", arguments={
            "file_path": "outputs/notes.md", "content": "trained with `train`\n"})]),
        Turn(text="Done: trained, mIoU=0.8125. I changed SKILL.md (segment_train -> train)."),
    ]), 60.0),
    "overloaded-529": (Script(name="overloaded", match="Train a segmentation model", turns=[
        Turn(fault=529, fault_times=5, text="never")]), 60.0),
    "timeout": (Script(name="slow", match="Train a segmentation model", turns=[
        Turn(tool_calls=[bash("python3 -c 'import time; time.sleep(60)'")])]), 4.0),
}


def capture(name: str, script: Script, timeout_s: float) -> None:
    root = WORK / name
    shutil.rmtree(root, ignore_errors=True)
    ws, home = root / "workspace", root / "home"
    home.mkdir(parents=True)
    skill = ws / SKILL
    shutil.copytree(ROOT / "examples/marketplace/skills/segmentation", skill)
    shutil.copytree(skill / "fixtures", ws / "fixtures")
    with ScriptedModelServer([script]) as srv:
        request = ExecutionRequest(
            prompt=PROMPT, case_id="train", workspace=ws, home=home,
            skill_name="segmentation", skill_description="segmentation", skill_dir=skill,
            env=base_env(home, {"SKILL_DIR": str(skill)}), model="claude-sonnet-4-5",
            api_base=srv.url, limits=Limits(timeout_s=timeout_s, max_turns=12),
            system_prompt="You are the EXECUTOR. The skill is at `{skill_path}`.",
            raw_log=root / "raw.jsonl")
        recorder = EventRecorder(root / "events.jsonl", Redactor())
        try:
            result = ClaudeCodeRuntime().run(request, recorder)
            print(f"{name}: {result.status}")
        except EnvironmentFailure as exc:
            print(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            recorder.close()
    shutil.copyfile(root / "raw.jsonl", HERE / f"{name}.raw.jsonl")
    shutil.copyfile(root / "events.jsonl", HERE / f"{name}.events.jsonl")


if __name__ == "__main__":
    for run_name, (run_script, limit) in RUNS.items():
        if len(sys.argv) < 2 or run_name in sys.argv[1:]:
            capture(run_name, run_script, limit)
