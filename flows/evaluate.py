"""The evaluate flow. It only composes:

    prepare ──> case chain per skill x case x runtime x epoch (mapped; each chain runs
                assertions -> execute -> grade as nested task runs)
            ──> on a run of a change: mark the environment errors it introduced
            ──> conclude per skill x runtime (mapped: suggest, regression, aggregate)
            ──> publish (run.json with the gate, junit.xml, report.html, Prefect artifacts)
            ──> post on the merge request (when asked)
"""

from __future__ import annotations

import shutil

from aeval.tasks.case import case_tags, run_case
from aeval.tasks.conclude import conclude_skill
from aeval.tasks.introduced import mark_introduced_errors
from aeval.tasks.post import post_run
from aeval.tasks.prepare import prepare_run
from aeval.tasks.publish import publish_run
from prefect import flow, unmapped
from prefect.task_runners import ThreadPoolTaskRunner

from aeval.artifacts import RunManifest
from aeval.hardening import harden_process
from aeval.requests import EvalRequest
from aeval.settings import Settings
from aeval.store import write_model


def run_name() -> str:
    """`evaluate <run-id>` in the Prefect UI."""
    from prefect.runtime import flow_run

    request = flow_run.parameters.get("request")
    run_id = getattr(request, "run_id", None) or (
        request.get("run_id") if isinstance(request, dict) else None)
    return f"evaluate {run_id or 'new run'}"


@flow(name="aeval-evaluate", flow_run_name=run_name,
      task_runner=ThreadPoolTaskRunner(max_workers=Settings().concurrency))
def evaluate(request: EvalRequest) -> RunManifest:
    """Evaluate the skills at ``request.paths`` (folders holding SKILL.md, or marketplace
    roots), or exactly ``request.skill_roots``."""
    harden_process()  # served and worker runs hold keys too, not only the CLI
    run = prepare_run(request)
    chains = [run_case.with_options(tags=case_tags(plan)).submit(
        plan, request.retries, request.retry_delay_s) for plan in run.todo]
    results = [chain.result() for chain in chains]
    if request.base:  # a run of a change: the environment errors it introduced do not pass
        results = mark_introduced_errors(run.todo, results, request.base, request.head)
    by_key = {p.key: r for p, r in zip(run.todo, results, strict=True)}
    by_key |= {c.dir: c for c in run.finished}
    groups = run.groups()
    conclude_skill.map(unmapped(run.layout), groups,
                       [[by_key[k] for k in g.case_keys] for g in groups],
                       unmapped(run.request)).wait()
    manifest = publish_run(run, results)
    if not request.keep_workspaces:
        shutil.rmtree(run.workspace_root, ignore_errors=True)
    if request.post:
        manifest.delivery = post_run(str(run.run_dir), request.mr_iid, request.project_id,
                                     request.gitlab_url)
        write_model(run.layout.manifest, manifest)
    return manifest
