"""An agent CLI (codex, opencode) SIGKILLed from outside the case is an environment error
(issue 44, item 4), as a literal step killed so already is: before, codex's and opencode's
adapters read its exit status 137 / -9 as "the CLI failed" (RuntimeUnavailable, never
retried). A real process, streamed as the adapters stream their CLI, killed by a thread of
the test; a CLI aeval itself killed at its timeout stays a timeout."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from aeval.adapters.runtimes._cli import (
    killed_from_outside,
    raise_if_killed_from_outside,
    stream_jsonl,
)
from aeval.errors import KilledFromOutside, TransientError
from aeval.events import ErrorEvent, read_events
from aeval.isolation.redact import Redactor
from aeval.runtime.protocol import EventRecorder

FAKE_CLI = """import json, sys, time
print(json.dumps({"type": "thread.started", "thread_id": "t-1"}), flush=True)
print(json.dumps({"type": "turn.started"}), flush=True)
time.sleep(60)
"""


def run_cli(tmp_path, timeout_s: float, kill_after: float | None):
    """Stream the fake CLI; ``kill_after`` seconds in, SIGKILL it from outside (found in
    /proc by its marker, as an operator finds a process)."""
    marker = f"fake-codex-{uuid.uuid4().hex[:12]}"

    def killer() -> None:
        time.sleep(kill_after)
        deadline = time.monotonic() + 60  # a loaded machine may not have started it yet
        while time.monotonic() < deadline:
            for proc in Path("/proc").iterdir():
                try:
                    if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                        os.kill(int(proc.name), signal.SIGKILL)
                        return
                except OSError:
                    continue
            time.sleep(0.1)

    if kill_after is not None:
        threading.Thread(target=killer, daemon=True).start()
    return stream_jsonl([sys.executable, "-c", FAKE_CLI, marker], tmp_path, dict(os.environ),
                        timeout_s, tmp_path / "raw.jsonl", lambda record: False)


def test_a_cli_killed_from_outside_is_a_retried_environment_error(tmp_path):
    outcome = run_cli(tmp_path, timeout_s=120, kill_after=1.0)
    assert outcome.returncode == -signal.SIGKILL and not outcome.timed_out
    assert killed_from_outside(outcome)
    recorder = EventRecorder(tmp_path / "events.jsonl", Redactor())
    with pytest.raises(KilledFromOutside) as got:
        raise_if_killed_from_outside("codex", outcome, recorder)
    recorder.close()
    assert isinstance(got.value, TransientError)  # retried, never reused
    assert "codex was killed by SIGKILL" in str(got.value)
    (error,) = [e for e in read_events(tmp_path / "events.jsonl") if isinstance(e, ErrorEvent)]
    assert error.transient


@pytest.mark.parametrize("timeout_s", [1.0])
def test_a_cli_aeval_killed_at_its_timeout_is_not_from_outside(tmp_path, timeout_s):
    outcome = run_cli(tmp_path, timeout_s=timeout_s, kill_after=None)
    assert outcome.timed_out and not killed_from_outside(outcome)
    recorder = EventRecorder(tmp_path / "events.jsonl", Redactor())
    raise_if_killed_from_outside("opencode", outcome, recorder)  # nothing raised
    recorder.close()
