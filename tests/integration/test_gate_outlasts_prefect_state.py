"""The exit code is aeval's gate even when someone else changes the Prefect flow run's state
(DESIGN: "The exit code comes from aeval's own gate, never from a Prefect state").

A case can no longer reach a Prefect server (tests/e2e/test_reachable_*.py), but whoever
else holds the API can: another user of a shared server, an automation, someone in the UI.
Here that is a thread of the test, on the host: while a real `aeval run` (reporting to a
Prefect server the test started, through PREFECT_API_URL) is in the middle of its cases, it
forces the running flow runs to Completed, or deletes them, through Prefect's REST API. The
run has a failing case, so its gate is 1: a forced Completed must not turn it into 0, and a
deleted flow run must not turn it into an internal error (4) or an environment error (3)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.api_proxy import prefect_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

AEVAL = str(Path(sys.executable).parent / "aeval")
SLOW_S = 12  # how long the slow case keeps the run going after the attack


def marketplace(root: Path) -> Path:
    """Two skills: one whose case fails (the gate: exit 1), one whose case takes a while."""
    mp = root / "marketplace"
    for name, script, expected in (
            ("csv-check", "echo 'rows: 3'", "rows: 4"),
            ("slow-report", f"sleep {SLOW_S}; echo 'report done'", "report done")):
        d = mp / name
        (d / "scripts").mkdir(parents=True)
        (d / "scripts" / "run.sh").write_text(f"#!/bin/bash\n{script}\n")
        (d / "scripts" / "run.sh").chmod(0o755)
        (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Prints a line the "
                                    f"caller checks.\n---\n\nRun `scripts/run.sh`.\n")
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": "main", "prompt": f"Use {name}.", "expected_outcome": expected,
            "steps": ["$SKILL_DIR/scripts/run.sh"],
            "assertions": [{"type": "transcript_contains", "text": expected}]}]}))
    return mp


class Meddler(threading.Thread):
    """Waits for a running flow run on the server, then, ``delay_s`` later, forces every
    running flow run to Completed (``action`` "complete") or deletes it ("delete"); records
    what the API answered and when."""

    def __init__(self, api: str, action: str, delay_s: float = 2.0):
        super().__init__(daemon=True)
        self.api, self.action, self.delay_s = api, action, delay_s
        self.done: list[tuple[str, int]] = []
        self.at: float | None = None
        self.stop = threading.Event()

    @staticmethod
    def ask(send) -> httpx.Response:
        """``send()`` again while a busy SQLite server answers 429/503, as Prefect's client
        does (20 tries, 0.25 s apart); the last answer."""
        for _ in range(20):
            r = send()
            if r.status_code not in (429, 503):
                break
            time.sleep(0.25)
        return r

    def running(self, client: httpx.Client) -> list[dict]:
        r = self.ask(lambda: client.post(f"{self.api}/flow_runs/filter", json={
            "flow_runs": {"state": {"type": {"any_": ["RUNNING"]}}}}))
        r.raise_for_status()
        return r.json()

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.stop.is_set() and not self.running(client):
                time.sleep(0.2)
            if self.stop.wait(self.delay_s):
                return
            self.at = time.monotonic()
            for fr in self.running(client):
                url = f"{self.api}/flow_runs/{fr['id']}"
                if self.action == "complete":
                    r = self.ask(lambda url=url: client.post(f"{url}/set_state", json={
                        "state": {"type": "COMPLETED", "message": "done, says someone"},
                        "force": True}))
                else:
                    r = self.ask(lambda url=url: client.delete(url))
                self.done.append((fr["name"], r.status_code))


@pytest.mark.parametrize("action", ["complete", "delete"])
def test_the_exit_code_is_the_gate_whatever_someone_does_to_the_flow_run(tmp_path, action):
    mp = marketplace(tmp_path)
    with prefect_server(tmp_path / "server-home") as (port, env):
        api = f"http://127.0.0.1:{port}/api"
        meddler = Meddler(api, action)
        meddler.start()
        store = tmp_path / "store"
        env = {**env, "PREFECT_API_URL": api, "AEVAL_RETRIES": "0"}
        start = time.monotonic()
        try:
            proc = subprocess.run([AEVAL, "run", str(mp), "--out", str(store), "--runtime",
                                   "literal", "--no-grader", "--concurrency", "2"],
                                  env=env, capture_output=True, text=True, timeout=200,
                                  stdin=subprocess.DEVNULL)
        finally:
            ended = time.monotonic()
            meddler.stop.set()
            meddler.join(timeout=15)
    out = f"exit {proc.returncode}\n{proc.stdout[-2500:]}\n{proc.stderr[-2500:]}"
    # the meddling happened, was accepted, and came while the cases were still running
    assert meddler.done, f"no running flow run was found to {action}: {out}"
    assert all(code in (200, 201, 204) for _, code in meddler.done), (meddler.done, out)
    assert meddler.at is not None and ended - meddler.at > SLOW_S / 2, (
        f"the run ended {ended - meddler.at:.1f} s after the {action}: it was not mid-run")
    assert ended - start > SLOW_S, out

    assert proc.returncode == 1, out
    assert "internal error" not in proc.stderr, out
    (manifest,) = (store / "runs").glob("*/run.json")
    run = json.loads(manifest.read_text())
    assert run["gate"]["exit_code"] == 1, run["gate"]
    verdicts = {s["name"]: [c["status"] for c in s["cases"]] for s in run["skills"]}
    assert verdicts["csv-check"] == ["fail"] and verdicts["slow-report"] == ["pass"], verdicts
