"""Re-grade recorded transcripts with another grader model, through the replay runtime."""

from __future__ import annotations

from pathlib import Path

from aeval.flows.evaluate import evaluate
from aeval.tasks.compare import write_regrade
from prefect import flow

from aeval.artifacts import RegradeReport, RunManifest
from aeval.requests import EvalRequest
from aeval.store import RunStore, new_run_id, read_model


@flow(name="aeval-regrade", flow_run_name="regrade {run}", validate_parameters=False)
def regrade(run: str, grader_model: str, store: str = ".aeval",
            api_base: str | None = None) -> RegradeReport:
    """Replay every case of ``run`` (events, outputs, skill edits) with its recorded
    assertions, grade it with ``grader_model``, and report where the graders disagree."""
    source = RunStore(Path(store)).resolve(run)
    src = read_model(source / "run.json", RunManifest)
    new_id = new_run_id()
    regraded = []
    for runtime in src.runtimes:
        recordings = {}
        for s in src.skills:
            for c in s.cases:
                if c.runtime == runtime and c.epoch in (None, 1):
                    recordings[f"{s.name}/{c.case_id}"] = str(source / c.dir)
        run_id = f"{new_id}-{runtime}"
        evaluate(EvalRequest(
            paths=src.paths, run_id=run_id, runtimes=["replay"], store=store,
            grader_model=grader_model, api_base=api_base, skill_roots=src.skill_roots,
            runtime_options={"replay": {"recordings": recordings}}, recordings=recordings,
            retries=0))
        regraded.append((runtime, str(RunStore(Path(store)).run_dir(run_id))))
    return write_regrade(source, regraded, grader_model, source / f"regrade-{new_id}.json")
