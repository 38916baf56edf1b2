"""aeval's engine: what makes Prefect work at scale, kept out of the flows (which only
compose) and out of the domain (which imports no Prefect). Private to aeval.

    runners     the task runners: a bounded thread pool, or Dask (mutual TLS, the workers'
                preload hooks, the workers' preflight); the global model-call limit
    dask_address  whether a --dask argument is a way to run (the argument alone, before
                anything starts; no Prefect imported)
    failures    which exceptions are Prefect's API failing (refused, reset, timed out), not
                aeval: a case's environment error, never an internal one
    limits      a runtime's case chains throttled in aeval's process (``runtime:<name>``)
    retries     Prefect's retries of a case: only after a transient failure, with backoff
    schedule    a run's case chains submitted a window at a time, each skill x runtime
                concluded as soon as its last chain is done
    stop        SIGTERM / SIGINT of the command line: the cases' commands killed, the run
                recorded as cancelled (resumable), the process gone at once
    servers/    finding or starting aeval's Prefect server: the embedded one of an
                invocation, the local one reused across invocations (no Prefect imported)

The names below are the engine's public face, imported lazily: importing this package
imports no Prefect (the servers are found before Prefect is imported).
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "LOCAL": "dask_address", "dask_address_problem": "dask_address",
    "insecure_dask_warning": "dask_address",
    "task_runner": "runners", "dask_preflight": "runners", "ran_elsewhere": "runners",
    "start_embedded_server": "runners", "use_global_model_limit": "runners",
    "api_failure": "failures", "runtime_limits": "limits", "throttle": "limits",
    "chain_window": "schedule", "windowed": "schedule", "Conclusions": "schedule",
    "outcome": "schedule", "failure": "schedule",
    "stop_on_signals": "stop", "watch_run": "stop",
    "RetryCase": "retries", "retry_on_transient": "retries", "retry_options": "retries",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
