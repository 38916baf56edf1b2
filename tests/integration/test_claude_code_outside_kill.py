"""The Claude Code CLI SIGKILLed from outside the case (an operator, the host's OOM killer)
is an environment `error`, retried from a fresh workspace (issue 44, item 4), as a literal
step killed so is: before, the SDK's ProcessError (exit -9 / 137) ended the attempt as an
error that was never retried. The real bundled CLI against the scripted model server; a
thread of the test finds the CLI as the ancestor of the tool process it started and kills
it."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

from aeval.testing.model_server import Script, ScriptedModelServer, Turn
from tests.integration.test_claude_code_runtime import (
    API_KEY,
    MATCH,
    READ,
    bash,
    pytestmark,  # noqa: F401  (the same marks: integration, prefect, claude-agent-sdk)
    run,
)
from tests.segmentation_case import TRAIN_CASE, segmentation_copy


def ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


class CliKiller:
    """SIGKILLs the claude CLI that started a tool process holding ``marker``."""

    def __init__(self, marker: str):
        self.marker = marker.encode()
        self.killed = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _cli_of(self, pid: int) -> int | None:
        for _ in range(12):
            try:
                pid = ppid(pid)
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                return None
            if b"_bundled/claude" in cmdline and b"bwrap" not in cmdline:
                return pid
        return None

    def _loop(self) -> None:
        while not self.done.wait(0.1):
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit():
                    continue
                try:
                    if self.marker not in (proc / "cmdline").read_bytes():
                        continue
                except OSError:
                    continue
                cli = self._cli_of(int(proc.name))
                if cli is not None:
                    try:
                        os.kill(cli, signal.SIGKILL)
                        self.killed += 1
                    except OSError:
                        pass

    def __enter__(self) -> CliKiller:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()


def test_the_cli_killed_from_outside_is_a_retried_environment_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    monkeypatch.setenv("AEVAL_RETRIES", "1")
    skill_copy = segmentation_copy(tmp_path)
    md = skill_copy / "SKILL.md"  # the repaired skill: nothing of it is at fault here
    md.write_text(md.read_text().replace("segment_", ""))
    (skill_copy / "eval.config").write_text(json.dumps({"evals": [{**TRAIN_CASE,
                                                                   "timeout_s": 120}]}))
    marker = f"aeval-slow-train-{tmp_path.name}"
    slow = Script(name="slow", match=MATCH, turns=[
        READ, Turn(tool_calls=[bash(f"python3 -c 'import time; time.sleep(60)' {marker}")])])
    with ScriptedModelServer([slow]) as srv, CliKiller(marker) as killer:
        code, case = run(skill_copy, srv, tmp_path / "s")
    assert killer.killed >= 2  # both attempts' CLIs
    assert code == 3
    grading = json.loads((case / "grading.json").read_text())
    assert grading["status"] == "error", grading["status_reason"]
    assert "claude-code was killed by SIGKILL" in grading["status_reason"]
    attempts = sorted(case.glob("attempts/*/attempt.json"))
    assert len(attempts) == 2
    assert all(json.loads(a.read_text())["outcome"] == "transient_error" for a in attempts)
