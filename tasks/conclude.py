"""The per skill x runtime phase, once its cases are graded: grounded fix suggestions,
regression against the baseline, benchmark / analysis / multi-eval report. One task per skill
x runtime, mapped by the flow."""

from __future__ import annotations

from pathlib import Path

from aeval.tasks.aggregate import aggregate
from aeval.tasks.baseline import regression_for
from aeval.tasks.prepare import SkillGroup
from aeval.tasks.suggest import suggest
from prefect import task
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import CaseResult, MultiEvalReport
from aeval.layout import RunLayout
from aeval.requests import EvalRequest


def conclude(layout: RunLayout, group: SkillGroup, cases: list[CaseResult],
             request: EvalRequest) -> MultiEvalReport:
    """Write fix_suggestions.json, regression.json, benchmark.json, analysis_notes.json,
    multi_eval_report.json and summary.md of one skill x runtime. Without the skill installed
    (uplift's other arm) there is nothing to fix in it and no baseline to compare with: only
    the aggregates are written."""
    out = layout.skill_dir(group.skill_key, group.runtime)
    if request.install_skill:
        suggest(layout.run_dir, out, group.name, group.root, group.runtime, cases,
                request.grader_model, request.api_base)
        regression_for(layout, out, group.skill_key, group.name, group.runtime, cases,
                       Path(request.store), request.baseline)
    return aggregate(layout.run_dir, out, group.name, group.runtime, cases,
                     request.grader_model, request.api_base, skill_root=group.root)


@task(name="conclude", task_run_name="conclude {group.name} [{group.runtime}]",
      cache_policy=NO_CACHE)
def conclude_skill(layout: RunLayout, group: SkillGroup, cases: list[CaseResult],
                   request: EvalRequest) -> MultiEvalReport:
    """Suggestions, regression and aggregates of one skill x runtime."""
    return conclude(layout, group, cases, request)
