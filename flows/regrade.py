"""Re-grade every epoch of a recorded run with one or more grader models, through the replay
runtime, and report how far the graders (and the original) agree."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from aeval.artifacts import RegradeReport, RunManifest
from aeval.flows.evaluate import evaluate, manifest_of
from aeval.run.read import read_run
from aeval.run.requests import EvalRequest
from aeval.run.store import RunStore, new_run_id
from aeval.tasks.run.progress import progress
from aeval.tasks.studies.compare import write_regrade


def recordings_of(source: Path, src: RunManifest, runtime: str) -> dict[str, str]:
    """``skill/case`` (``skill/case#epoch`` with epochs) -> the recorded case folder;
    ``skill`` is the skill's folder key in the run (two skills may share a name)."""
    return {f"{s.key or s.name}/{c.case_id}" + (f"#{c.epoch}" if c.epoch is not None else ""):
            str(source / c.dir) for s in src.skills for c in s.cases if c.runtime == runtime}


@flow(name="aeval-regrade", flow_run_name="regrade {run}", validate_parameters=False)
def regrade(run: str, grader_models: list[str], store: str = ".aeval",
            api_base: str | None = None) -> RegradeReport:
    """Replay every case and epoch of ``run`` (events, outputs, skill edits) with its
    recorded assertions, grade it with each of ``grader_models``, and report per-assertion
    verdicts, agreement and kappa. A grader whose re-grade run fails is recorded as that
    grader's error; the others still report."""
    source = RunStore(Path(store)).resolve(run)
    src = read_run(source).manifest
    new_id = new_run_id()
    models = list(dict.fromkeys(grader_models))
    regraded, failures = [], []
    for i, model in enumerate(models, 1):
        for runtime in src.runtimes:
            recordings = recordings_of(source, src, runtime)
            run_id = f"{new_id}-g{i}-{runtime}"
            progress("regrade %s: grader %s on %s [%s] (run %s)", new_id, model, src.run_id,
                     runtime, run_id)
            try:
                manifest_of(evaluate(EvalRequest(
                    paths=src.paths, run_id=run_id, runtimes=["replay"], store=store,
                    epochs=src.epochs, grader_model=model, api_base=api_base,
                    skill_roots=src.skill_roots, recordings=recordings, retries=0,
                    runtime_options={"replay": {"recordings": recordings}}),
                    return_state=True))
            except Exception as exc:  # this grader's error; the other graders still report
                failures.append((model, runtime, f"{type(exc).__name__}: {exc}"))
                continue
            regraded.append((model, runtime, str(RunStore(Path(store)).run_dir(run_id))))
    return write_regrade(source, new_id, models, regraded, failures)
