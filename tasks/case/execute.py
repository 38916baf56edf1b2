"""Execute: one attempt of a case from a fresh workspace (`tasks/case/attempt.py`), with Prefect
retries that fire only for TransientError. Every attempt is recorded before its error
propagates."""

from __future__ import annotations

from aeval.tasks.case.attempt import run_attempt
from prefect import task
from prefect.cache_policies import NO_CACHE

from aeval.errors import TransientError
from aeval.run.plan import CasePlan, ExecutionRecord


def retry_on_transient(task, task_run, state) -> bool:
    """Prefect retry_condition_fn: retry only a TransientError (never a skill defect)."""
    try:
        state.result()
    except TransientError:
        return True
    except BaseException:
        return False
    return False


@task(name="execute", task_run_name="execute {plan.label}", cache_policy=NO_CACHE,
      retries=2, retry_delay_seconds=[2, 10], retry_jitter_factor=0.5,
      retry_condition_fn=retry_on_transient)
def execute_case(plan: CasePlan) -> ExecutionRecord:
    """One attempt of one case; Prefect retries it from a fresh workspace on TransientError."""
    return run_attempt(plan)
