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

import pytest

from tests.e2e.test_stop_on_signal import a_case_step_runs, alive, descendants, sleepy_marketplace

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def stop_when_running(argv: list[str], env: dict[str, str], sig: int) -> tuple[int, str]:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not a_case_step_runs(proc.pid):
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


def test_an_uplift_stopped_by_sigterm_is_cancelled_in_prefect(tmp_path):
    """`aeval uplift` (two arms, the builtin runtime against the scripted model server) is
    stopped by SIGTERM while the agent runs the skill's slow script: it exits 143 and no flow
    run it made is left Running or Completed; the uplift's own flow run is Cancelled and
    names the signal."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterParentFlowRunId,
    )
    from prefect.settings import PREFECT_API_URL

    from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn

    aeval = os.path.join(os.path.dirname(sys.executable), "aeval")
    market = sleepy_marketplace(tmp_path)
    run = ToolCall(name="bash", arguments={
        "command": "python3 .agents/skills/slow-report/scripts/report.py out.txt || "
                   "python3 \"$SKILL_DIR/scripts/report.py\" out.txt"})
    scripts = [Script(name="report", match="Write the report", turns=[
        Turn(tool_calls=[run]), Turn(text="The report is in out.txt.")])]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_API_URL=PREFECT_API_URL.value(), AEVAL_WARM="0",
               PREFECT_HOME=str(tmp_path / "prefect-home"), OPENAI_API_KEY="sk-test",
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    with get_client(sync_client=True) as client:
        before = {r.id for r in client.read_flow_runs(flow_filter=FlowFilter(
            name=FlowFilterName(any_=["aeval-uplift"])))}
    with ScriptedModelServer(scripts) as srv:
        code, err = stop_when_running(
            [aeval, "uplift", str(market), "--runtime", "builtin", "--model", "openai/scripted",
             "--api-base", srv.base_url_openai, "--no-grader", "--epochs", "1",
             "--concurrency", "2", "--out", str(tmp_path / "store")], env, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, err[-2000:]
    with get_client(sync_client=True) as client:
        runs = [r for r in client.read_flow_runs(flow_filter=FlowFilter(
            name=FlowFilterName(any_=["aeval-uplift"]))) if r.id not in before]
        assert len(runs) == 1, runs
        (up,) = runs
        children = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[up.id])))
    assert up.state is not None and up.state.type.value == "CANCELLED", up.state
    assert "SIGTERM" in (up.state.message or ""), up.state
    assert children, "the arms' evaluate runs are the uplift's subflows"
    for child in children:  # the arms' evaluate runs: none still Running, none a green pass
        assert child.state is not None and child.state.type.value in (
            "CANCELLED", "FAILED", "CRASHED"), (child.name, child.state)
