"""The nightly sweep: the whole marketplace, several epochs, then the baselines refresh."""

from __future__ import annotations

from pathlib import Path

from aeval.flows.evaluate import evaluate
from aeval.tasks.baseline import refresh_baselines_task
from prefect import flow

from aeval.artifacts import RunManifest
from aeval.store import RunStore, new_run_id


@flow(name="aeval-sweep", flow_run_name="sweep {marketplace}", validate_parameters=False)
def sweep(marketplace: str = ".", epochs: int = 3, runtimes: list[str] | None = None,
          model: str | None = None, grader_model: str | None = None,
          api_base: str | None = None, store: str = ".aeval",
          run_id: str | None = None) -> RunManifest:
    """Evaluate every skill of the marketplace ``epochs`` times; passing cases become the new
    last-known-good baselines."""
    run_id = run_id or new_run_id()
    manifest = evaluate(paths=[marketplace], run_id=run_id, runtimes=runtimes, epochs=epochs,
                        store=store, model=model, grader_model=grader_model, api_base=api_base)
    refresh_baselines_task(Path(store), RunStore(Path(store)).run_dir(run_id))
    return manifest
