"""The nightly sweep: the whole marketplace, several epochs, then the baselines refresh.

    checkout (only for a git `marketplace`: a clone of this run's own at `ref`)
        ──> evaluate (a subflow, on the request's task runner) ──> refresh baselines

The marketplace is a required parameter: there is no default folder (the serving process's
own folder was aeval itself). The flow run ends Failed when the gate is not 0, with the gate
as its message, after the baselines were refreshed from the cases that passed."""

from __future__ import annotations

import tempfile
from pathlib import Path

from prefect import flow
from prefect.states import Failed, State

from aeval.flows.evaluate import evaluate, gate_state, manifest_of, misconfigured
from aeval.isolation.hardening import harden_process
from aeval.run.layout import RunLayout
from aeval.run.requests import EvalRequest, SweepRequest
from aeval.run.store import new_run_id
from aeval.tasks._engine import task_runner
from aeval.tasks.run.checkout import checkout_repo
from aeval.tasks.run.family import current_flow_run_id, settle
from aeval.tasks.run.prefect_artifacts import publish_run_artifacts, report_base_url
from aeval.tasks.skill.baseline import refresh_baselines_task


def is_git_url(where: str) -> bool:
    """A marketplace given as a git URL (cloned per run) rather than a folder."""
    return "://" in where or where.startswith("git@")


@flow(name="aeval-sweep", flow_run_name="sweep {request.marketplace}")
def sweep(request: SweepRequest) -> State:
    """Evaluate every skill of the marketplace ``epochs`` times (case runs whose fingerprint
    did not change since their last pass/fail keep that verdict, unless ``skip_unchanged`` is
    off); passing cases become the new last-known-good baselines."""
    harden_process()
    if (bad := misconfigured(request)) is not None:
        return bad
    run_id = request.run_id or new_run_id()
    # a subflow runs on its own decorator's task runner, not its parent's: set it here
    runner = task_runner(request.concurrency, request.dask, request.dask_allow_insecure_tcp)
    run = evaluate.with_options(task_runner=runner)
    with tempfile.TemporaryDirectory(prefix="aeval-sweep-") as tmp:
        root = request.marketplace
        if is_git_url(root):
            got = checkout_repo(root, request.ref or "HEAD", str(Path(tmp) / "marketplace"),
                                return_state=True)
            if not got.is_completed():
                reason = str(got.result(raise_on_failure=False)).strip().splitlines()[0]
                return Failed(name="CheckoutFailed", message=f"aeval: cannot sweep "
                              f"{request.marketplace}: {reason[:400]}")
            root = got.result().root
        elif not Path(root).is_dir():
            return misconfigured(request, f"marketplace {root}: no such folder")
        manifest = manifest_of(run(EvalRequest(
            paths=[root], run_id=run_id, epochs=request.epochs, report_url=request.report_url,
            resume=request.resume,
            **request.model_dump(include={"runtimes", "model", "grader_model", "api_base",
                                          "store", "skip_unchanged", "min_tested",
                                          "retries", "retry_delay_s"})),
            return_state=True))
    run_dir = RunLayout.of(request.store, run_id).run_dir
    refresh_baselines_task(Path(request.store), run_dir)
    # the run summary on the sweep's own flow run too, not only on its evaluate subflow's
    publish_run_artifacts(manifest, run_dir, report_base_url(request.report_url))
    outcome = gate_state(manifest)
    if request.resume:  # the sweep's flow run the run started in ends as the run did
        settle(manifest.parent_flow_run_id, outcome, current_flow_run_id())
    return outcome
