"""The per skill x runtime phase, once its cases are graded: grounded fix suggestions,
regression against the baseline, benchmark / analysis / multi-eval report. One task per skill
x runtime, mapped by the flow."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import Benchmark, CaseResult, MultiEvalReport
from aeval.isolation.redact import Redactor, declared_values
from aeval.run.layout import RunLayout
from aeval.run.read import read_if_there
from aeval.run.requests import EvalRequest
from aeval.run.store import redacted_model
from aeval.tasks.run.prefect_artifacts import artifact_key, coverage_rows
from aeval.tasks.run.prepare import SkillGroup
from aeval.tasks.skill.aggregate import aggregate
from aeval.tasks.skill.baseline import regression_for
from aeval.tasks.skill.suggest import suggest


def conclude(layout: RunLayout, group: SkillGroup, cases: list[CaseResult],
             request: EvalRequest) -> MultiEvalReport:
    """Write fix_suggestions.json, regression.json, benchmark.json, analysis_notes.json,
    multi_eval_report.json and summary.md of one skill x runtime. Without the skill installed
    (uplift's other arm) there is nothing to fix in it and no baseline to compare with: only
    the aggregates are written."""
    out = layout.skill_dir(group.skill_key, group.runtime)
    redactor = Redactor(declared_values(group.run_credentials))  # every secret of the run
    if request.install_skill:
        suggest(layout.run_dir, out, group.name, group.root, group.runtime, cases,
                request.grader_model, request.api_base, redactor, group.static_findings)
        regression_for(layout, out, group.skill_key, group.name, group.runtime, cases,
                       Path(request.store), request.baseline, redactor)
    # coverage only with the skill installed: without it every file would look untouched
    return redacted_model(aggregate(layout.run_dir, out, group.name, group.runtime, cases,
                                    request.grader_model, request.api_base,
                                    skill_root=group.root if request.install_skill else None,
                                    redactor=redactor, inputs=group.inputs), redactor)


@task(name="conclude", task_run_name="conclude {group.name} [{group.runtime}]",
      cache_policy=NO_CACHE)
def conclude_skill(layout: RunLayout, group: SkillGroup, cases: list[CaseResult],
                   request: EvalRequest) -> MultiEvalReport:
    """Suggestions, regression and aggregates of one skill x runtime; the skill's resource
    coverage as a Prefect table (``coverage-<skill>-<runtime>``, one row per file)."""
    report = conclude(layout, group, cases, request)
    bench = read_if_there(layout.skill(group.skill_key, group.runtime).benchmark, Benchmark)
    cov = bench.coverage if bench is not None else None  # redacted
    if cov is not None and request.install_skill:
        used = len(cov.files) - len(cov.untouched)
        create_table_artifact(
            coverage_rows(cov), key=artifact_key("coverage", group.skill_key, group.runtime),
            description=f"{group.name} [{group.runtime}] in run {layout.run_dir.name}: {used}/"
                        f"{len(cov.files)} skill files used over {cov.runs} run(s), "
                        f"{len(cov.untouched)} untouched")
    return report
