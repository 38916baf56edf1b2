"""Head against base: the changed skills as they were at the merge base run first, then the
change itself, then the comparative grader on each pair. Only composes:

    export-base (the changed skills at the merge base, with the head's cases)
    evaluate (the base)                                           -> <run-id>-base
    evaluate (the head: the run of the change; the base's assertions reused per case and
              epoch, relative budgets against the base's figures) -> <run-id>
    head-vs-base: pairs, the comparative grader in both orders, head_vs_base.json, the
                  report.html section, a Prefect table
    settle-head: --fail-worse-than-base on the head's gate; the post on the merge request,
                 now with the comparison

The flow run ends as the head's gate says: the comparison changes it only when asked
(`fail_worse_than_base`).
"""

from __future__ import annotations

import tempfile

from prefect import flow
from prefect.states import State

from aeval.flows.evaluate import evaluate, gate_state, manifest_of
from aeval.run.layout import RunLayout
from aeval.run.requests import EvalRequest
from aeval.run.store import new_run_id, write_model
from aeval.tasks._engine import task_runner
from aeval.tasks.deliver.post import post_run
from aeval.tasks.studies.head_vs_base import (
    base_lost,
    base_request,
    export_base,
    head_request,
    note_base_gate,
    settle_head,
    write_head_vs_base,
)


def run_name() -> str:
    """`head-vs-base <run-id>` in the Prefect UI."""
    from prefect.runtime import flow_run

    request = flow_run.parameters.get("request")
    run_id = getattr(request, "run_id", None) or (
        request.get("run_id") if isinstance(request, dict) else None)
    return f"head-vs-base {run_id or 'new run'}"


@flow(name="aeval-head-vs-base", flow_run_name=run_name)
def head_vs_base(request: EvalRequest, concurrency: int = 4) -> State:
    """Evaluate the base versions of the changed skills ``request.skill_roots`` (a run of the
    change ``base`` .. ``head``), then the changed skills on the same cases, and compare the
    two runs case by case. Ends as the head's gate."""
    if not request.base:
        raise ValueError("head against base needs a change: `base` (--changed-since BASE)")
    if not request.run_id:
        request = request.model_copy(update={"run_id": new_run_id()})
    arm = evaluate.with_options(task_runner=task_runner(concurrency))
    with tempfile.TemporaryDirectory(prefix="aeval-tree-") as tmp:
        tree = export_base(request.skill_roots or [], request.base, request.head, tmp)
        base_dir = None
        if tree.roots():  # a base whose gate is not 0 is data for the comparison
            state = arm(base_request(request, tree), return_state=True)
            try:
                base = manifest_of(state)
            except Exception as exc:  # the base's crash never costs the head its run
                base_lost(request, exc)
            else:
                base_dir = RunLayout.of(request.store, base.run_id).run_dir
                note_base_gate(base)
        manifest_of(arm(head_request(request, tree, base_dir), return_state=True))
        report = write_head_vs_base(request, tree, base_dir is not None)
    head = settle_head(request, report)
    if request.post:  # once, with the comparison in the notes
        head.delivery = post_run(str(RunLayout.of(request.store, head.run_id).run_dir),
                                 request.forge, request.mr_iid, request.project_id,
                                 request.gitlab_url)
        write_model(RunLayout.of(request.store, head.run_id).manifest, head)
    return gate_state(head)


__all__ = ["head_vs_base"]
