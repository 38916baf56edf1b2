"""Task runners for the evaluate flow: a bounded thread pool by default, or Dask.

    task_runner(4, None)                    ThreadPoolTaskRunner(max_workers=4)
    task_runner(4, "local")                 a local Dask cluster: worker processes, 4 slots
    task_runner(4, "tcp://10.0.0.5:8786")   a running Dask scheduler

prefect-dask is optional (``pip install 'aeval-skills[dask]'``) and imported only when asked for.

Dask workers run the tasks, so each needs the flow's Prefect API: a local cluster is handed
the flow's API URL (the embedded server's too); remote workers need ``PREFECT_API_URL`` set
to a server they can reach (an embedded server is not: ``task_runner`` refuses), the same
paths as the flow (run store, skills, the temporary workspace root: a shared file system),
and aeval installed.

A worker runs tasks that start the executor, whose tool processes run as the same user:
``dask_setup`` makes each worker process non-dumpable (as ``aeval run`` does for itself), so
they cannot read its environment. Local clusters preload it; start remote workers with
``dask worker tcp://HOST:PORT --preload aeval.flows.runners``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import Any

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from aeval.isolation.hardening import scrubbed_environ
from aeval.servers import embedded

__all__ = ["scrubbed_environ", "start_embedded_server", "task_runner"]

LOCAL = "local"
INSTALL_HINT = "pip install 'aeval-skills[dask]'"


def task_runner(concurrency: int, dask: str | None = None) -> TaskRunner:
    """The task runner for ``concurrency`` tasks at once: a thread pool, or Dask when ``dask``
    is ``"local"`` (a temporary local cluster) or a scheduler address (``tcp://HOST:PORT``).

    Raises ValueError for a bad argument (or a remote scheduler without a Prefect server),
    and ImportError naming the install command when prefect-dask is missing."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    if not dask:
        return ThreadPoolTaskRunner(max_workers=concurrency)
    if dask != LOCAL and "://" not in dask:
        raise ValueError(f"--dask {dask!r}: expected 'local' or a scheduler address such as "
                         "tcp://127.0.0.1:8786")
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as exc:
        raise ImportError(f"--dask needs prefect-dask: {INSTALL_HINT}") from exc
    if dask != LOCAL:
        from prefect.settings import PREFECT_API_URL

        url = PREFECT_API_URL.value()
        if not url or url == os.environ.get(embedded.MARK_VAR):
            raise ValueError(f"--dask {dask}: the Dask workers report task runs to Prefect, "
                             "and cannot reach the embedded server: set PREFECT_API_URL to a "
                             "Prefect server (`prefect server start`) for this process and "
                             "the workers")
        return DaskTaskRunner(address=dask)
    return _local_dask_runner_class()(cluster_class="distributed.LocalCluster",
                                      cluster_kwargs=local_cluster_kwargs(concurrency))


def local_cluster_kwargs(concurrency: int, cpus: int | None = None) -> dict[str, Any]:
    """LocalCluster arguments: worker processes (at most one per CPU) whose threads add up to
    at most ``concurrency``, listening on loopback only (the dashboard too, on a free port),
    each preloading ``dask_setup``."""
    workers = max(1, min(concurrency, cpus or os.cpu_count() or 1))
    return {"n_workers": workers, "threads_per_worker": max(1, concurrency // workers),
            "processes": True, "host": "127.0.0.1", "dashboard_address": "127.0.0.1:0",
            "preload": [__name__]}


@functools.cache
def _local_dask_runner_class() -> type:
    """DaskTaskRunner that hands the flow's Prefect API URL to the workers it spawns.

    Without it, a worker process of a flow on the embedded (ephemeral) server starts its own
    server, and its task runs fail with "Server process did not start"."""
    from prefect_dask import DaskTaskRunner

    class LocalDaskTaskRunner(DaskTaskRunner):
        """A DaskTaskRunner on a temporary local cluster whose workers report to the flow's
        Prefect API."""

        def __enter__(self):
            env = dict(self.cluster_kwargs.get("env") or {})
            env.setdefault("PREFECT_API_URL", _api_url())
            self.cluster_kwargs["env"] = env
            return super().__enter__()

    return LocalDaskTaskRunner


def _api_url() -> str:
    """The Prefect API this process reports to: PREFECT_API_URL, or the embedded server's
    (started if needed, as Prefect's own client does)."""
    from prefect.settings import PREFECT_API_URL

    if url := PREFECT_API_URL.value():
        return url
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()
    return server.api_url


def dask_setup(worker: object) -> None:
    """Dask preload hook (``--preload aeval.flows.runners``): make the worker process non-dumpable
    on Linux, so the executor's tool processes cannot read its environment or memory."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


def start_embedded_server() -> str | None:
    """Start Prefect's embedded (ephemeral) server now, with a scrubbed environment: Prefect
    starts it with a copy of this process's environment, where the model keys live, and a
    tool running as the same user could read it from ``/proc/<pid>/environ``. Nothing to do
    when a server is configured (PREFECT_API_URL). Returns the embedded API URL, or None.

    The server requires a fresh auth string (see `aeval.servers.embedded`), which this process's
    client then sends: a tool that finds the port gets 401.

    Call it from the command line before any flow runs, while the process has one thread
    (the environment is swapped for the moment of the start). Where the command line spawned
    the server before importing Prefect (`aeval.servers.embedded.start_early`), wait for that
    one."""
    from prefect.context import refresh_global_settings_context
    from prefect.settings import PREFECT_API_URL

    if (early := embedded.started()) is not None:  # spawned by the command line before
        return early.wait_ready()                  # Prefect was imported: wait for it here
    if PREFECT_API_URL.value():
        return None
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    if server.running:
        return server.api_url
    auth = embedded.new_auth_string()
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update({**scrubbed_environ(saved), embedded.SERVER_AUTH_VAR: auth})
        server.start()
    finally:
        os.environ.clear()
        os.environ.update({**saved, embedded.CLIENT_AUTH_VAR: auth})
        refresh_global_settings_context()  # Prefect read its settings at import
    return server.api_url


MODEL_LIMIT = "aeval-model-calls"


def use_global_model_limit(limit: int, name: str = MODEL_LIMIT) -> str:
    """Bound model calls with a Prefect global concurrency limit (created, or set to
    ``limit``, on the Prefect API this process uses) instead of each process's semaphore, and
    name it in this process's environment (AEVAL_MODEL_LIMIT), which a local Dask cluster's
    workers inherit. For a run whose tasks run in several processes (`--dask`); remote Dask
    workers need ``AEVAL_MODEL_LIMIT`` set themselves. Not for threads in one process: a
    slot is a server round trip, and a holder that dies keeps it until its lease ends.
    Returns the limit's name."""
    from aeval.adapters.llm import MODEL_LIMIT_VAR
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(name, limit)
    os.environ[MODEL_LIMIT_VAR] = name
    return name
