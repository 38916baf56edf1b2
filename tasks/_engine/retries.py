"""Prefect's retries of a case's task run: only a chain that raised `RetryCase` (its attempt
ended in a TransientError and a retry is left) is retried, after an exponential backoff with
jitter; a verdict's Failed state (SkillDefect and the rest) never is."""

from __future__ import annotations

from typing import Any


class RetryCase(Exception):
    """Raised out of the chain for Prefect to retry the case's task run: its attempt ended in
    a TransientError (the cause) and a retry is left."""


def retry_on_transient(task, task_run, state) -> bool:
    """Prefect's retry_condition_fn of the case task: retry only a chain that raised
    RetryCase (a verdict's Failed state, SkillDefect and the rest, is never retried)."""
    try:
        state.result()
    except RetryCase:
        return True
    except BaseException:
        return False
    return False


def retry_options(retries: int, retry_delay_s: float) -> dict[str, Any]:
    """A task's options for ``retries`` after a transient failure, waiting ``retry_delay_s``
    doubling each time, with jitter (``Task.with_options(**retry_options(...))``)."""
    from prefect.tasks import exponential_backoff

    return {"retries": retries, "retry_jitter_factor": 0.5 if retries else None,
            "retry_delay_seconds": exponential_backoff(retry_delay_s)(retries) if retries else 0}


def run_count() -> int:
    """This try of the running task run (1 the first; 1 outside a task run)."""
    from prefect.runtime import task_run

    return task_run.run_count or 1
