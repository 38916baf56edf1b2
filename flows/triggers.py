"""The triggers flow. It only composes:

    prepare (examine, choose distractors, plan every trial)
        ──> trigger trial per skill x prompt x runtime x epoch (mapped)
        ──> triggers.json, report.html and a Prefect table
"""

from __future__ import annotations

from prefect import flow

from aeval.artifacts import TriggersReport
from aeval.isolation.hardening import harden_process
from aeval.stats.triggers import TriggersRequest
from aeval.tasks.studies.triggers import prepare_triggers_run, trigger_trial, write_triggers


@flow(name="aeval-triggers", flow_run_name="triggers {request.run_id}")
def triggers(request: TriggersRequest) -> TriggersReport:
    """Does each skill's description make the runtime load it among distractor skills, and
    only when it should?"""
    harden_process()
    prepared = prepare_triggers_run(request)
    futures = [trigger_trial.submit(tp, request.retries, request.retry_delay_s)
               for tp in prepared.trials]
    trials = [f.result() for f in futures]
    return write_triggers(prepared, trials)
