"""Issue 29: what a case costs on Dask. prefect-dask sends each task with the flow's context and
the worker rebuilds it; aeval's Dask task runner sends the flow's settings as the models
(`SettingsSentAsModels`) and each worker keeps one Prefect client for all its task runs
(`share_prefect_client`, from the `dask_setup` preload). A 440-case literal run on a local
cluster went from 69.5 s to 37.5 s of wall (benchmarks/README.md).

What must not change for that: every task run on a worker still runs under the flow's own
settings (not the worker's environment), is recorded on the flow's Prefect server, and a
worker process uses one client, its shared one, for every task run, on aeval's LocalCluster
and on a real `dask worker` process started with the preload as deployments/README says."""

from __future__ import annotations

import os

import pytest
from prefect import flow, task

from tests.integration.test_dask import scheduler  # noqa: F401 (fixture)

pytest.importorskip("prefect_dask",
                    reason="prefect-dask not installed: pip install 'aeval-skills[dask]'")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300),
              pytest.mark.usefixtures("prefect_harness")]

FLOW_ONLY_DELAY = 17
"""A setting the flow process has (temporary_settings) and no worker's environment has."""


@task(name="where-am-i")
def where_am_i(i: int) -> dict:
    """Run on a Dask worker: its process, whether Prefect's engine gave this task run the
    worker's shared client, and a setting as the task run sees it."""
    from distributed import get_worker
    from prefect.client.orchestration import get_client
    from prefect.context import SettingsContext

    from aeval.tasks._engine.runners import SHARED_CLIENT_ATTR

    shared = getattr(get_worker(), SHARED_CLIENT_ATTR, None)
    return {"pid": os.getpid(),
            "shared": shared is not None and get_client(sync_client=True) is shared.client,
            "delay": SettingsContext.get().settings.tasks.default_retry_delay_seconds}


def probe(runner, n: int) -> tuple[list[dict], str]:
    """Map ``where_am_i`` over ``n`` items on ``runner`` inside a flow whose settings carry
    FLOW_ONLY_DELAY; the answers and the flow run's id."""
    from prefect.runtime import flow_run
    from prefect.settings import PREFECT_TASKS_DEFAULT_RETRY_DELAY_SECONDS, temporary_settings

    @flow(name="dask-context-probe", task_runner=runner)
    def probe_flow() -> tuple[list[dict], str]:
        return where_am_i.map(range(n)).result(), flow_run.id

    with temporary_settings(updates={PREFECT_TASKS_DEFAULT_RETRY_DELAY_SECONDS:
                                     FLOW_ONLY_DELAY}):
        return probe_flow()


def recorded_task_runs(flow_run_id: str) -> list[str]:
    """The state names of the flow run's task runs on the server (the task-run recorder
    writes them from events: wait until all are there)."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as client:
        while True:
            runs = client.read_task_runs(flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[flow_run_id])))
            names = sorted(r.state.name for r in runs if r.state is not None)
            if (all(n == "Completed" for n in names) and len(names) >= 8) \
                    or time.monotonic() > deadline:
                return names
            time.sleep(0.5)


def assert_settled(answers: list[dict], flow_run_id: str, workers: int) -> None:
    assert len(answers) == 8
    assert {a["delay"] for a in answers} == {FLOW_ONLY_DELAY}, answers
    assert all(a["shared"] for a in answers), answers
    assert len({a["pid"] for a in answers}) == workers, answers
    assert os.getpid() not in {a["pid"] for a in answers}  # worker processes, not threads here
    assert recorded_task_runs(flow_run_id) == ["Completed"] * 8


def test_a_local_cluster_runs_each_task_under_the_flows_settings_with_its_shared_client():
    from aeval.tasks._engine.runners import task_runner

    answers, flow_run_id = probe(task_runner(2, "local"), 8)
    assert_settled(answers, flow_run_id, workers=2)


def test_a_dask_worker_process_started_with_the_preload_shares_its_client(scheduler):  # noqa: F811
    """A real `dask worker --preload aeval.flows.runners` (another process, its own
    environment naming the server), as deployments/README tells a user to start one."""
    from prefect.settings import PREFECT_API_URL

    from aeval.tasks._engine.runners import task_runner

    address, start_worker = scheduler
    api = PREFECT_API_URL.value()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    start_worker({**env, "PREFECT_API_URL": api})
    answers, flow_run_id = probe(task_runner(1, address, allow_insecure_tcp=True), 8)
    assert_settled(answers, flow_run_id, workers=1)


def test_a_dask_run_keeps_a_window_of_chains_submitted_and_short_dask_logs():
    """On Dask the flow keeps twice the workers' threads of case chains submitted, not every
    chain of the run at once (each pending submission is the task with its parameters and
    context), and Dask's developer logs of messages stay short while the runner is in use:
    with Dask's defaults a 1,000-case run's process grew by ~220 MB for them."""
    import dask

    from aeval.tasks._engine import chain_window
    from aeval.tasks._engine.runners import DASK_LOG_KEY, DASK_LOG_LENGTH, task_runner

    default = dask.config.get(DASK_LOG_KEY)

    @flow(name="dask-window-probe", task_runner=task_runner(4, "local"))
    def window_flow() -> tuple[int, int, int]:
        return chain_window(1000), chain_window(4), dask.config.get(DASK_LOG_KEY)

    assert window_flow() == (8, 4, DASK_LOG_LENGTH)  # 4 threads on the workers
    assert dask.config.get(DASK_LOG_KEY) == default  # the user's config again afterwards


def test_a_dask_run_lets_go_of_each_skills_conclusion_once_it_is_done(tmp_path):
    """A run of 48 one-case skills on aeval's LocalCluster (its scheduler lives in this
    process): the scheduler never holds every skill's conclusion. A future the flow keeps
    keeps the task's submission in the scheduler and its result on a worker (~0.6 MiB per
    skill: a 10,000-case run of 1,000 skills peaked at 1.9 GiB); on 373dba9 every conclusion
    was held until the run's last case, 48 + the window's chains at the end."""
    import threading

    import distributed

    from aeval.flows.evaluate import evaluate, manifest_of
    from aeval.run.requests import EvalRequest
    from aeval.tasks._engine.runners import task_runner
    from tests.api_proxy import write_marketplace

    skills = 48
    write_marketplace(tmp_path / "mp", skills, 1)
    held: list[int] = []
    stop = threading.Event()

    def watch() -> None:  # the in-process scheduler's tasks, every 20 ms
        while not stop.wait(0.02):
            held.append(max((len(s.tasks) for s in list(distributed.Scheduler._instances)),
                            default=0))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        flow = evaluate.with_options(task_runner=task_runner(4, "local"))
        state = flow(return_state=True, request=EvalRequest(
            paths=[str(tmp_path / "mp")], runtimes=["literal"], store=str(tmp_path / "out"),
            grader_model=None, retries=0))
    finally:
        stop.set()
        watcher.join()
    manifest = manifest_of(state)
    statuses = [c.status for s in manifest.skills for c in s.cases]
    assert statuses == ["pass"] * 2 * skills  # the case and the SKILL.md doc test per skill
    # every skill concluded on a worker: its summary and benchmark written, the gate green
    # (on 5a72b56 each conclusion failed on a worker, given a tuple for its quoted cases)
    assert manifest.gate.exit_code == 0, manifest.gate.reason
    run_dir = next((tmp_path / "out" / "runs").iterdir())
    for s in manifest.skills:
        assert (run_dir / s.key / "literal" / "summary.md").is_file(), s.key
        assert (run_dir / s.key / "literal" / "benchmark.json").is_file(), s.key
    assert max(held) >= 8  # the watcher saw the run: the window's chains were submitted
    # the window (8 chains: 2 workers x 2 threads) and the conclusions still running
    assert max(held) < skills, f"the scheduler held up to {max(held)} tasks"
