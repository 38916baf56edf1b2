"""Does the skill help? Two evaluate runs of the same cases, then one paired report. Only
composes:

    evaluate (the skill installed)      -> <uplift-id>-with
    evaluate (no skill; the with-arm's assertions reused per case and epoch)
                                        -> <uplift-id>-without
    write_uplift: pairs, statistics, uplift.json, the report.html section, a Prefect table
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from aeval.artifacts import UpliftReport
from aeval.flows.evaluate import evaluate, manifest_of
from aeval.run.requests import UpliftRequest
from aeval.run.store import RunStore
from aeval.tasks._engine import task_runner
from aeval.tasks.studies.uplift import arm_request, arm_run_id, with_arm_assertions, write_uplift


def run_name() -> str:
    """`uplift <uplift-id>` in the Prefect UI."""
    from prefect.runtime import flow_run

    request = flow_run.parameters.get("request")
    uid = getattr(request, "uplift_id", None) or (
        request.get("uplift_id") if isinstance(request, dict) else None)
    return f"uplift {uid or 'new'}"


@flow(name="aeval-uplift", flow_run_name=run_name)
def uplift(request: UpliftRequest) -> UpliftReport:
    """Run every case of the skills at ``request.paths`` with and without the skill
    (``request.epochs`` times each, the same assertions) and report the uplift."""
    request = request.with_id()
    arm = evaluate.with_options(task_runner=task_runner(request.concurrency))
    # an arm whose gate is not 0 is data for the comparison, not the end of it
    manifest_of(arm(arm_request(request, install_skill=True), return_state=True))
    with_dir = RunStore(Path(request.store)).run_dir(arm_run_id(request.uplift_id, True))
    manifest_of(arm(arm_request(request, install_skill=False,
                                recordings=with_arm_assertions(with_dir)), return_state=True))
    return write_uplift(request)
