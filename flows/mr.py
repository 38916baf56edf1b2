"""The merge-request flow: evaluate the skills an MR changed, and post on the MR.

The flow run ends Failed when the gate is not 0 (its message carries the exit code and the
reason), so `prefect deployment run ... --watch` fails the CI job as `aeval run` would; it
ends Completed when every changed skill passed or nothing changed."""

from __future__ import annotations

import logging
from pathlib import Path

from aeval.adapters.git import changed_skills
from aeval.flows.evaluate import evaluate
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed, State

from aeval.artifacts import RunManifest
from aeval.errors import GateFailed
from aeval.requests import EvalRequest, MrRequest
from aeval.store import new_run_id


class GateFailureLine(logging.Filter):
    """Prefect's runner logs the exception of every failed flow run with its traceback
    ("Engine execution exited with unexpected exception"). A failed gate is the verdict, not
    a crash: it is kept as one line, without the engine's traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, GateFailed):
            record.msg, record.args = str(exc), ()
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def _install_gate_filter() -> None:
    logger = logging.getLogger("prefect.flow_runs")
    if not any(isinstance(f, GateFailureLine) for f in logger.filters):
        logger.addFilter(GateFailureLine())


_install_gate_filter()


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

    r = flow_run.parameters.get("request")
    r = r.model_dump() if isinstance(r, MrRequest) else (r or {})
    span = f"{r.get('base', 'origin/main')}...{r.get('head', 'HEAD')}"
    return f"mr {r['mr_iid']}: {span}" if r.get("mr_iid") is not None else f"mr: {span}"


def gate_state(manifest: RunManifest) -> State:
    """Completed when the gate is 0, else Failed with the gate as its message (and as the
    result: the state resolves to a GateFailed exception carrying the exit code)."""
    gate = manifest.gate
    if gate is None or gate.exit_code == 0:
        return Completed(data=manifest, message=gate.reason if gate else None)
    message = f"aeval gate: exit {gate.exit_code}: {gate.reason}"
    return Failed(message=message, data=GateFailed(message, gate.exit_code, manifest.run_id))


@flow(name="aeval-mr", flow_run_name=mr_run_name)
def evaluate_mr(request: MrRequest) -> State:
    """Evaluate the skills changed between ``base`` and ``head`` of the repository at ``repo``
    (its working tree at ``head``); with ``post``, report on merge request ``mr_iid``."""
    log = get_run_logger()
    changes = detect_changes(request.repo, request.base, request.head)
    for note in changes["notes"]:
        log.info(note)
    if not changes["skills"]:
        log.info("no skill changed between %s and %s", request.base, request.head)
        return Completed(message="no skill changed")
    manifest = evaluate(EvalRequest(
        paths=[request.repo], run_id=new_run_id(), skill_roots=changes["skills"],
        base=changes["base"], head=changes["head"], post=request.post,
        mr_iid=request.mr_iid, project_id=request.project_id, gitlab_url=request.gitlab_url,
        **request.model_dump(include={"runtimes", "model", "grader_model", "api_base",
                                      "store"})))
    return gate_state(manifest)
