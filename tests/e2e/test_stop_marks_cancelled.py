"""A run stopped by SIGTERM (a CI runner's cancel) or SIGINT (Ctrl-C) is Cancelled in the
Prefect UI (issue 44, item 7): before, the process ended with os._exit and its flow run
stayed Running (or turned Crashed when the server noticed), as if it were still going or
aeval had broken. Real ``aeval run`` and ``aeval sweep`` processes against a Prefect server
that outlives them, so the test can read the states they left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_stop_on_signal import alive, descendants, sleepy_marketplace

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def stop_when_running(argv: list[str], env: dict[str, str], sig: int) -> tuple[int, str]:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not any(
                "report.py" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
                for p in descendants(proc.pid) if Path(f"/proc/{p}/cmdline").exists()):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
        started = descendants(proc.pid) | {proc.pid}
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        gone_by = time.monotonic() + 10
        while time.monotonic() < gone_by and alive(started):
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize("command,sig", [("run", signal.SIGTERM), ("sweep", signal.SIGINT)])
def test_a_run_stopped_by_a_signal_is_cancelled_in_prefect(tmp_path, command, sig):
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL

    aeval = os.path.join(os.path.dirname(sys.executable), "aeval")
    market = sleepy_marketplace(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_API_URL=PREFECT_API_URL.value(), AEVAL_WARM="0",
               PREFECT_HOME=str(tmp_path / "prefect-home"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    store = tmp_path / "store"
    extra = ["--epochs", "1"] if command == "sweep" else ["--runtime", "literal"]
    code, err = stop_when_running(
        [aeval, command, str(market), *extra, "--out", str(store), "--concurrency", "2",
         "--sandbox", "none"] if command == "run" else
        [aeval, command, str(market), *extra, "--out", str(store), "--concurrency", "2"],
        env, sig)
    assert code == 128 + sig, err[-2000:]
    (run_dir,) = (store / "runs").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "cancelled", manifest
    ids = [manifest["flow_run_id"]]
    if command == "sweep":
        assert manifest["parent_flow_run_id"], manifest
        ids.append(manifest["parent_flow_run_id"])
    with get_client(sync_client=True) as client:
        states = {i: client.read_flow_run(i).state for i in ids}
    for fid, state in states.items():
        assert state is not None and state.type.value == "CANCELLED", (fid, state)
        assert signal.Signals(sig).name in (state.message or ""), state
