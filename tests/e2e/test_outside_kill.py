"""A kill from outside is not a skill defect (issue 44, item 4): a step's process SIGKILLed
by someone else on the host (an operator's ``kill -9``, the host's OOM killer) makes the case
an environment `error` (exit 3), retried per the run's retries, and a later sweep of the same
store runs it again instead of reusing a verdict. Real sweeps, a real signal sent from a
thread of the test to the step's process, found in /proc by its command line."""

from __future__ import annotations

import json
import os
import signal
import threading
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_reuse_inputs import sweep, write_skill

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

INDEXER = '''#!/usr/bin/env python3
"""Index a folder of notes: wait for the notes service's lock to clear, then write the index."""
import pathlib, sys, time

notes, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for _ in range(600):  # the lock clears within a minute
    if not (notes / ".lock").exists():
        break
    time.sleep(0.1)
out.write_text("\\n".join(sorted(p.name for p in notes.glob("*.md"))) + "\\n")
'''


class Killer:
    """SIGKILLs, from the host, every process whose command line holds ``marker``."""

    def __init__(self, marker: str):
        self.marker = marker.encode()
        self.killed = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.done.wait(0.05):
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit() or int(proc.name) == os.getpid():
                    continue
                try:
                    cmdline = (proc / "cmdline").read_bytes()
                except OSError:
                    continue
                if self.marker in cmdline and b"index_notes.py" in cmdline:
                    try:
                        os.kill(int(proc.name), signal.SIGKILL)
                        self.killed += 1
                    except OSError:
                        pass

    def __enter__(self) -> Killer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()


def test_a_step_killed_from_outside_is_an_environment_error_and_is_never_reused(
        tmp_path, monkeypatch):
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    marker = f"notes-{uuid.uuid4().hex[:12]}"
    mp = tmp_path / "mp"
    skill = write_skill(
        mp, "notes-index", "Index a folder of markdown notes into outputs/index.txt.",
        "Run `python3 $SKILL_DIR/scripts/index_notes.py <notes> outputs/index.txt`.",
        {"id": "index", "prompt": "Index the notes in fixtures/notes.",
         "expected_outcome": "outputs/index.txt lists every note.",
         "files": ["fixtures/"],
         "steps": [f"mkdir -p outputs && python3 $SKILL_DIR/scripts/index_notes.py "
                   f"fixtures/notes outputs/index.txt {marker}"],
         "assertions": [{"type": "file_contains", "path": "outputs/index.txt",
                         "pattern": "^standup\\.md$"}]})
    (skill / "scripts").mkdir()
    (skill / "scripts" / "index_notes.py").write_text(INDEXER)
    notes = skill / "fixtures" / "notes"
    notes.mkdir(parents=True)
    (notes / "standup.md").write_text("# Standup\n")
    (notes / ".lock").write_text("held by the notes service\n")  # the step waits on it
    store = tmp_path / "store"

    with Killer(marker) as killer:
        code, first = sweep(mp, store)
        assert killer.killed >= 3  # every attempt was killed
        assert first["status"] == "error", first
        assert code == 3
        case = store / "runs" / next(iter(os.listdir(store / "runs"))) / "notes-index"
        attempts = sorted(case.rglob("attempts/*/attempt.json"))
        assert len(attempts) == first["attempts"] == 3  # the first and the 2 default retries
        assert all(json.loads(a.read_text())["outcome"] == "transient_error" for a in attempts)

        code, second = sweep(mp, store)
    assert second["reused_from"] is None, "an environment error was reused as a verdict"
    assert second["status"] == "error" and code == 3
    assert "SIGKILL" in second["reason"], second["reason"]

    (notes / ".lock").unlink()  # unkilled, the same skill passes: it was never its defect
    code, third = sweep(mp, store)
    assert code == 0 and third["status"] == "pass", third
