"""Head against base: a run of a change, then the same cases on the changed skills as they
were at the merge base, then the comparative grader on each pair. Only composes:

    evaluate (the head: the normal run of the change)           -> <run-id>
    export-base (the changed skills at the merge base, with the head's cases)
    evaluate (the base; the head's assertions reused per case and epoch) -> <run-id>-base
    head-vs-base: pairs, the comparative grader in both orders, head_vs_base.json, the
                  report.html section, a Prefect table

The flow run ends as the head's gate says: the comparison never changes it.
"""

from __future__ import annotations

import tempfile

from prefect import flow
from prefect.states import State

from aeval.flows.evaluate import evaluate, gate_state, manifest_of
from aeval.run.layout import RunLayout
from aeval.run.requests import EvalRequest
from aeval.run.store import new_run_id
from aeval.tasks._engine import task_runner
from aeval.tasks.studies.head_vs_base import base_request, export_base, write_head_vs_base


def run_name() -> str:
    """`head-vs-base <run-id>` in the Prefect UI."""
    from prefect.runtime import flow_run

    request = flow_run.parameters.get("request")
    run_id = getattr(request, "run_id", None) or (
        request.get("run_id") if isinstance(request, dict) else None)
    return f"head-vs-base {run_id or 'new run'}"


@flow(name="aeval-head-vs-base", flow_run_name=run_name)
def head_vs_base(request: EvalRequest, concurrency: int = 4) -> State:
    """Evaluate the changed skills ``request.skill_roots`` (a run of the change ``base`` ..
    ``head``), then the same cases on their base versions, and compare the two runs case by
    case. Ends as the head's gate."""
    if not request.base:
        raise ValueError("head against base needs a change: `base` (--changed-since BASE)")
    if not request.run_id:
        request = request.model_copy(update={"run_id": new_run_id()})
    arm = evaluate.with_options(task_runner=task_runner(concurrency))
    head = manifest_of(arm(request, return_state=True))
    head_dir = RunLayout.of(request.store, request.run_id).run_dir
    with tempfile.TemporaryDirectory(prefix="aeval-tree-") as tmp:
        tree = export_base(request.skill_roots or [], request.base, request.head, tmp)
        base_ran = bool(tree.roots())
        if base_ran:  # a base whose gate is not 0 is data for the comparison
            manifest_of(arm(base_request(request, tree, head_dir), return_state=True))
        write_head_vs_base(request, tree, base_ran)
    return gate_state(head)


__all__ = ["head_vs_base"]
