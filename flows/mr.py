"""The merge-request flow: clone the repository for this run, check out the MR's head there,
evaluate the skills the MR changed, and post on the MR.

    checkout (a clone of `repo` at `head`; head fetched by name or from the MR's refs when the
              clone lacks it) ──> detect-changes base...head ──> evaluate (a subflow)

The served or worker checkout never stands in for the MR's code, and two MRs at once work in
two clones. The flow run ends Failed when the gate is not 0 (its message carries the exit code
and the reason: `prefect deployment run ... --watch` and `aeval trigger` fail the CI job as
`aeval run` would), Failed as `CheckoutFailed` when head cannot be had, Failed as
`Misconfigured` before anything runs (an agent runtime without a model, a model without its
key), and Completed when every changed skill passed or nothing changed."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed, State

from aeval.adapters.git import changed_skills
from aeval.errors import GateFailed
from aeval.flows.evaluate import evaluate, gate_state, manifest_of, misconfigured
from aeval.flows.head_vs_base import head_vs_base
from aeval.isolation.hardening import harden_process
from aeval.run.layout import RunLayout
from aeval.run.requests import EvalRequest, MrRequest
from aeval.run.store import new_run_id
from aeval.tasks._engine import task_runner
from aeval.tasks.run.checkout import checkout_repo, short
from aeval.tasks.run.ci_reports import publish_ci_reports
from aeval.tasks.run.prefect_artifacts import publish_run_artifacts, report_base_url


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
    """`mr 12: 1a2b3c4d5e6f...9f8e7d6c5b4a` (shas cut to 12), or `mr: main...feature`."""
    from prefect.runtime import flow_run

    r = flow_run.parameters.get("request")
    r = r.model_dump() if isinstance(r, MrRequest) else (r or {})
    span = f"{short(str(r.get('base', '?')))}...{short(str(r.get('head', '?')))}"
    return f"mr {r['mr_iid']}: {span}" if r.get("mr_iid") is not None else f"mr: {span}"


@flow(name="aeval-mr", flow_run_name=mr_run_name)
def evaluate_mr(request: MrRequest) -> State:
    """Evaluate the skills changed between ``base`` and ``head`` of ``repo`` (a clone of this
    run's own, at ``head``); with ``post``, report on merge request ``mr_iid``."""
    harden_process()
    log = get_run_logger()
    if (bad := misconfigured(request)) is not None:
        return bad
    with tempfile.TemporaryDirectory(prefix="aeval-mr-") as tmp:
        got = checkout_repo(request.repo, request.head, str(Path(tmp) / "repo"),
                            base=request.base, mr_iid=request.mr_iid, return_state=True)
        if not got.is_completed():
            reason = str(got.result(raise_on_failure=False)).strip().splitlines()[0][:400]
            return Failed(name="CheckoutFailed", message=f"aeval: cannot evaluate head "
                          f"{short(request.head)}: {reason}")
        co = got.result()
        changes = detect_changes(co.root, co.base or request.base, co.head)
        for note in changes["notes"]:
            log.info(note)
        if not changes["skills"]:
            log.info("no skill changed between %s and %s", request.base, request.head)
            return Completed(message="no skill changed")
        change = EvalRequest(
            paths=[co.root], run_id=new_run_id(), skill_roots=changes["skills"],
            base=changes["base"], head=changes["head"], post=request.post,
            mr_iid=request.mr_iid, project_id=request.project_id,
            gitlab_url=request.gitlab_url, report_url=request.report_url,
            fail_worse_than_base=request.fail_worse_than_base,
            **request.model_dump(include={"runtimes", "model", "grader_model", "api_base",
                                          "store"}))
        if request.compare_base:  # the head's run, then the base's, then the comparison
            manifest = manifest_of(head_vs_base(change, request.concurrency,
                                                return_state=True))
        else:
            runner = task_runner(request.concurrency, request.dask,
                                 request.dask_allow_insecure_tcp)
            run = evaluate.with_options(task_runner=runner)
            manifest = manifest_of(run(change, return_state=True))
        # junit.xml and the Code Quality report for the CI job that triggered this run
        run_dir = RunLayout.of(request.store, manifest.run_id).run_dir
        publish_ci_reports(run_dir, manifest.run_id, repo_root=Path(co.root))
        # the run summary on the MR's own flow run too, not only on its evaluate subflow's
        publish_run_artifacts(manifest, run_dir, report_base_url(request.report_url))
    return gate_state(manifest)
