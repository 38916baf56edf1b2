"""The merge-request flow: evaluate the skills an MR changed, and post on the MR."""

from __future__ import annotations

from pathlib import Path

from aeval.adapters.git import changed_skills
from aeval.flows.evaluate import evaluate
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed, State

from aeval.artifacts import RunManifest
from aeval.store import new_run_id


@task(name="detect-changes", task_run_name="detect-changes {base}...{head}",
      cache_policy=NO_CACHE)
def detect_changes(repo: str, base: str, head: str) -> dict:
    """Skill roots touched by ``git diff base...head``."""
    cs = changed_skills(Path(repo), base, head)
    return {"skills": [str(s) for s in cs.skills], "notes": cs.notes(), "base": cs.base,
            "head": cs.head}


def mr_run_name() -> str:
    """`mr 12: origin/main...HEAD`, or `mr: origin/main...HEAD` when no MR is named."""
    from prefect.runtime import flow_run

    p = flow_run.parameters
    span = f"{p.get('base', 'origin/main')}...{p.get('head', 'HEAD')}"
    return f"mr {p['mr_iid']}: {span}" if p.get("mr_iid") is not None else f"mr: {span}"


@flow(name="aeval-mr", flow_run_name=mr_run_name, validate_parameters=False)
def evaluate_mr(repo: str = ".", base: str = "origin/main", head: str = "HEAD",
                mr_iid: int | None = None, post: bool = False,
                runtimes: list[str] | None = None, model: str | None = None,
                grader_model: str | None = None, api_base: str | None = None,
                store: str = ".aeval", project_id: str | None = None,
                gitlab_url: str | None = None) -> RunManifest | State | None:
    """Evaluate the skills changed between ``base`` and ``head`` of the repository at ``repo``
    (its working tree at ``head``); with ``post``, report on merge request ``mr_iid``.

    The flow run ends Failed when the gate is not 0 (its message carries the exit code), so
    `prefect deployment run ... --watch` fails the CI job as `aeval run` would."""
    log = get_run_logger()
    changes = detect_changes(repo, base, head)
    for note in changes["notes"]:
        log.info(note)
    if not changes["skills"]:
        log.info("no skill changed between %s and %s", base, head)
        return None
    manifest = evaluate(paths=[repo], run_id=new_run_id(), runtimes=runtimes,
                        skill_roots=changes["skills"], base=changes["base"],
                        head=changes["head"], store=store, model=model,
                        grader_model=grader_model, api_base=api_base, post=post,
                        mr_iid=mr_iid, project_id=project_id, gitlab_url=gitlab_url)
    if manifest.gate.exit_code:
        return Failed(message=f"aeval gate: exit {manifest.gate.exit_code}: "
                              f"{manifest.gate.reason}", data=manifest)
    return manifest
