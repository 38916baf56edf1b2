"""The nightly sweep: the whole marketplace, several epochs, then the baselines refresh."""

from __future__ import annotations

from pathlib import Path

from aeval.flows.evaluate import evaluate
from aeval.flows.runners import task_runner
from aeval.tasks.baseline import refresh_baselines_task
from prefect import flow

from aeval.artifacts import RunManifest
from aeval.layout import RunLayout
from aeval.requests import EvalRequest, SweepRequest
from aeval.store import new_run_id


@flow(name="aeval-sweep", flow_run_name="sweep {request.marketplace}")
def sweep(request: SweepRequest) -> RunManifest:
    """Evaluate every skill of the marketplace ``epochs`` times (case runs whose fingerprint
    did not change since their last pass/fail keep that verdict, unless ``skip_unchanged`` is
    off); passing cases become the new last-known-good baselines."""
    run_id = request.run_id or new_run_id()
    # a subflow runs on its own decorator's task runner, not its parent's: set it here
    manifest = evaluate.with_options(task_runner=task_runner(request.concurrency))(EvalRequest(
        paths=[request.marketplace], run_id=run_id, epochs=request.epochs,
        **request.model_dump(include={"runtimes", "model", "grader_model", "api_base",
                                      "store", "skip_unchanged"})))
    refresh_baselines_task(Path(request.store), RunLayout.of(request.store, run_id).run_dir)
    return manifest
