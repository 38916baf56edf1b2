"""The evaluate flow: examine -> (assertions -> execute -> grade) per case, as independent
chains -> aggregate per skill x runtime -> publish."""

from __future__ import annotations

import logging
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import prefect
from aeval.tasks.aggregate import aggregate_skill
from aeval.tasks.assertions import write_assertions
from aeval.tasks.baseline import write_regression
from aeval.tasks.deliver import post_to_gitlab
from aeval.tasks.examine import examine_skill
from aeval.tasks.execute import execute_case
from aeval.tasks.grade import finished_result, grade_case
from aeval.tasks.plan import plan_cases
from aeval.tasks.publish import publish_run
from aeval.tasks.suggest import suggest_fixes
from prefect import flow, get_run_logger
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.tasks import exponential_backoff

from aeval import __version__
from aeval.artifacts import CaseResult, RunManifest, SkillResult
from aeval.hardening import harden_process
from aeval.settings import Settings
from aeval.skill import find_skill_roots
from aeval.store import RunStore, read_model, write_model
from aeval.verdict import skill_status


@flow(name="aeval-evaluate", flow_run_name="evaluate {run_id}", validate_parameters=False,
      task_runner=ThreadPoolTaskRunner(max_workers=Settings().concurrency))
def evaluate(paths: list[str], run_id: str, runtimes: list[str] | None = None, epochs: int = 1,
             store: str = ".aeval", model: str | None = None, grader_model: str | None = None,
             api_base: str | None = None, retries: int = 2, retry_delay_s: float = 2.0,
             keep_workspaces: bool = False, output_cap: int = 16_000,
             runtime_options: dict[str, dict[str, Any]] | None = None,
             skill_roots: list[str] | None = None, base: str | None = None,
             head: str | None = None, post: bool = False, mr_iid: int | None = None,
             project_id: str | None = None, gitlab_url: str | None = None,
             baseline: str | None = None, resume: bool = False,
             recordings: dict[str, str] | None = None) -> RunManifest:
    """Evaluate the skills at ``paths`` (folders holding SKILL.md, or marketplace roots),
    or exactly ``skill_roots`` when given (change detection passes them)."""
    harden_process()  # served and worker runs hold keys too, not only the CLI
    log = _Both(get_run_logger(), logging.getLogger("aeval.progress"))
    runtimes = runtimes or ["literal"]
    run_dir = RunStore(Path(store)).run_dir(run_id)
    previous = run_dir / "run.json"
    if resume and not previous.is_file():
        raise FileNotFoundError(f"cannot resume {run_id}: no {previous}")
    manifest = RunManifest(
        run_id=run_id, created_at=datetime.now(UTC), aeval_version=__version__,
        prefect_version=prefect.__version__, paths=[str(p) for p in paths], base=base,
        head=head, runtimes=runtimes, model=model, grader_model=grader_model, epochs=epochs,
        api_base=api_base)
    if resume:
        manifest.created_at = read_model(previous, RunManifest).created_at
    roots = [Path(r) for r in skill_roots] if skill_roots is not None else [
        r for p in paths for r in find_skill_roots(Path(p))]
    manifest.skill_roots = [str(r) for r in roots]
    write_model(run_dir / "run.json", manifest)
    examined = [f.result() for f in examine_skill.map(roots)]
    ws_root = Path(tempfile.mkdtemp(prefix=f"aeval-{run_id}-"))
    plans = plan_cases(examined, run_id, run_dir, runtimes, epochs, ws_root, model,
                       grader_model, api_base, output_cap, keep_workspaces, runtime_options,
                       recordings)
    log.info("%d skill(s), %d case run(s), runtime(s): %s", len(examined), len(plans),
             ", ".join(runtimes))
    for ex in examined:
        if not ex.valid:
            log.warning("%s is invalid:\n  %s", ex.root, "\n  ".join(ex.problems))

    execute = execute_case.with_options(
        retries=retries, retry_delay_seconds=exponential_backoff(retry_delay_s)(retries)
        if retries else 0, retry_jitter_factor=0.5)
    results: dict[str, list[CaseResult]] = {}
    if resume:
        todo = []
        for plan in plans:
            done = finished_result(plan)
            if done is None:
                todo.append(plan)
            else:
                results.setdefault(str(plan.skill.path), []).append(done)
        log.info("resuming %s: %d case run(s) finished, %d to run", run_id,
                 len(plans) - len(todo), len(todo))
        plans = todo
    chains = {}
    for plan in plans:
        with prefect.tags(*case_tags(plan)):
            a = write_assertions.submit(plan)
            chains[execute.submit(plan, wait_for=[a])] = (plan, a)
    graded = {}
    for x in as_completed(list(chains)):
        plan, a = chains[x]
        # The record, or the last attempt's exception, resolved here rather than passed as
        # allow_failure(x): Dask rebuilds that annotation as a plain tuple on its workers.
        outcome = x.result(raise_on_failure=False)
        with prefect.tags(*case_tags(plan)):
            graded[grade_case.submit(plan, a, outcome)] = plan
    for fut in as_completed(list(graded)):
        plan = graded[fut]
        res = fut.result(raise_on_failure=False)
        if isinstance(res, BaseException):  # a failed chain still becomes a case status
            res = CaseResult(case_id=plan.case.id, runtime=plan.runtime, epoch=plan.epoch,
                             status="error", dir=plan.rel_dir,
                             reason=f"internal error: {type(res).__name__}: {res}"[:400])
        results.setdefault(str(plan.skill.path), []).append(res)
        log.info("%s: %s", plan.label, res.status.upper())

    skills = []
    for ex in examined:
        cases = sorted(results.get(str(ex.root), []),
                       key=lambda c: (c.runtime, c.case_id, c.epoch or 0))
        for rt in runtimes:
            rt_cases = [c for c in cases if c.runtime == rt]
            if rt_cases:
                suggest_fixes(run_dir, ex.name, ex.root, rt, rt_cases, grader_model, api_base)
                write_regression(ex.name, rt, run_dir, rt_cases, Path(store), baseline)
                aggregate_skill(run_dir, ex.name, rt, rt_cases, grader_model, api_base)
        skills.append(SkillResult(
            name=ex.name, path=str(ex.root), tier=ex.tier, warnings=ex.warnings,
            problems=ex.problems, cases=cases,
            status="invalid" if not ex.valid else skill_status(cases)))
    manifest.skills = skills
    done = publish_run(run_dir, manifest)
    if not keep_workspaces:
        shutil.rmtree(ws_root, ignore_errors=True)
    log.info("gate: exit %d (%s)", done.gate.exit_code, done.gate.reason)
    if post:
        try:
            result = post_to_gitlab(str(run_dir), mr_iid, project_id, gitlab_url)
            done.delivery = f"posted: {result.summary()}"
        except Exception as exc:  # a delivery failure must not hide the skill verdict
            done.delivery = f"failed: {type(exc).__name__}: {str(exc)[:300]}"
            log.warning("posting to GitLab failed: %s", done.delivery)
        write_model(run_dir / "run.json", done)
    return done


class _Both:
    """Log to the Prefect run (UI) and to the console progress logger of the CLI."""

    def __init__(self, *loggers: logging.Logger | logging.LoggerAdapter):
        self.loggers = loggers

    def info(self, msg: str, *args: object) -> None:
        for lg in self.loggers:
            lg.info(msg, *args)

    def warning(self, msg: str, *args: object) -> None:
        for lg in self.loggers:
            lg.warning(msg, *args)


def case_tags(plan) -> tuple[str, ...]:
    """Prefect tags of one case chain's task runs (filterable in the UI)."""
    return (f"skill:{plan.skill.name}", f"runtime:{plan.runtime}", f"case:{plan.case.id}")
