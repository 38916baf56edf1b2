"""Compare runtimes or models on the same skills: one evaluate run per variant, one table."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from aeval.artifacts import CompareReport
from aeval.flows.evaluate import evaluate, manifest_of
from aeval.run.requests import EvalRequest
from aeval.run.store import RunStore, new_run_id
from aeval.tasks._engine import task_runner
from aeval.tasks.studies.compare import write_compare


@flow(name="aeval-compare", flow_run_name="compare {compare_id}", validate_parameters=False)
def compare(paths: list[str], variants: list[dict], compare_id: str, store: str = ".aeval",
            grader_model: str | None = None, api_base: str | None = None, epochs: int = 1,
            skill_roots: list[str] | None = None, concurrency: int = 4) -> CompareReport:
    """``variants``: [{"runtime": "builtin", "model": "openai/x"}, ...] -> compare.json/md."""
    runs = []
    # a subflow runs on its own decorator's task runner, not its parent's: set it here
    run_variant = evaluate.with_options(task_runner=task_runner(concurrency))
    for i, v in enumerate(variants, 1):
        run_id = f"{compare_id}-{i}"
        # a variant whose gate is not 0 is a row of the table, not the end of the comparison;
        # every row runs the same cases (no SKILL.md doc test that only literal would add)
        manifest_of(run_variant(EvalRequest(
            paths=paths, run_id=run_id, runtimes=[v["runtime"]], model=v.get("model"),
            grader_model=grader_model, api_base=api_base, store=store, epochs=epochs,
            skill_roots=skill_roots, skill_md_doc_test=False), return_state=True))
        label = v["runtime"] + (f":{v['model']}" if v.get("model") else "")
        runs.append((label, v["runtime"], v.get("model"),
                     str(RunStore(Path(store)).run_dir(run_id))))
    return write_compare(Path(store) / "compare" / compare_id, compare_id, paths, runs)


def new_compare_id() -> str:
    return new_run_id()
