"""Task runners for the evaluate flow: a bounded thread pool by default, or Dask.

    task_runner(4, None)                    ThreadPoolTaskRunner(max_workers=4)
    task_runner(4, "local")                 a local Dask cluster: worker processes, 4 slots
    task_runner(4, "tls://10.0.0.5:8786")   a running Dask scheduler, over Dask's TLS
    task_runner(4, "tcp://10.0.0.5:8786", allow_insecure_tcp=True)   one over plain TCP

A Dask scheduler runs whatever function a client that reaches it sends, on itself and on
every worker (``run_on_scheduler``, ``run``, any task): whoever can connect runs code as the
scheduler's and the workers' user, with their environment (a case's step that found the local
scheduler's port in /proc/net/tcp once wrote outside its sandbox as root). So aeval's
own local cluster speaks mutual TLS with a certificate made for it and held only in memory
(``Security.temporary()``: a client without it is refused), on 127.0.0.1, and serves none of
Dask's HTTP pages; and a remote scheduler over plain TCP is refused unless the caller names
the risk (``allow_insecure_tcp``, the command line's ``--dask-allow-insecure-tcp``).
``tls://`` addresses use Dask's own TLS config (``distributed.comm.tls.*``).

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

What a task run costs on Dask (benchmarks/README.md). prefect-dask sends each task
with the flow's whole context, and the worker rebuilds it: on a 440-case literal run, 43 % of
the flow process's CPU serialized the flow's settings once per submitted case, and 34 % of
each worker's CPU made two new Prefect clients per case (an SSL context each, the CA bundle
read from disk, even for an http:// API), and 36 % validated the flow's settings back into
models. The flow's settings travel as the models (``SettingsSentAsModels``) and a worker keeps
one Prefect client for all its tasks (``dask_setup``), as the thread pool shares the flow's.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import Any

from prefect.context import SettingsContext
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from aeval.isolation.hardening import scrubbed_environ
from aeval.tasks._engine.dask_address import (  # noqa: F401 (the engine's public face)
    INSECURE_OPTION,
    LOCAL,
    dask_address_problem,
    insecure_dask_warning,
)
from aeval.tasks._engine.servers import embedded

__all__ = ["scrubbed_environ", "start_embedded_server", "task_runner"]

INSTALL_HINT = "pip install 'aeval-skills[dask]'"


def task_runner(concurrency: int, dask: str | None = None,
                allow_insecure_tcp: bool = False) -> TaskRunner:
    """The task runner for ``concurrency`` tasks at once: a thread pool, or Dask when ``dask``
    is ``"local"`` (a temporary local cluster, TLS only) or a scheduler address
    (``tls://HOST:PORT``; a plain ``tcp://`` one only with ``allow_insecure_tcp``).

    Raises ValueError for a bad argument (a remote scheduler without a Prefect server, or
    over plain TCP without ``allow_insecure_tcp``), and ImportError naming the install command
    when prefect-dask is missing."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    if problem := dask_address_problem(dask, allow_insecure_tcp):
        raise ValueError(problem)
    if not dask:
        return ThreadPoolTaskRunner(max_workers=concurrency)
    try:
        import prefect_dask  # noqa: F401 (imported here, uncached: the hint when it is missing)
    except ImportError as exc:
        raise ImportError(f"--dask needs prefect-dask: {INSTALL_HINT}") from exc
    if dask == LOCAL:
        try:
            import cryptography  # noqa: F401 (the local cluster's certificate)
        except ImportError as exc:
            raise ImportError(f"--dask local needs cryptography: {INSTALL_HINT}") from exc
    runner_class = _dask_runner_class()
    if dask != LOCAL:
        from prefect.settings import PREFECT_API_URL

        url = PREFECT_API_URL.value()
        if not url or url == os.environ.get(embedded.MARK_VAR):
            raise ValueError(f"--dask {dask}: the Dask workers report task runs to Prefect, "
                             "and cannot reach the embedded server: set PREFECT_API_URL to a "
                             "Prefect server (`prefect server start`) for this process and "
                             "the workers")
        return runner_class(address=dask)
    return runner_class(cluster_class="distributed.LocalCluster",
                        cluster_kwargs=local_cluster_kwargs(concurrency))


def ran_elsewhere(future: object) -> bool:
    """Whether ``future``'s task ran in another process (a Dask worker): what it printed went
    to that process's console, not to this one's."""
    try:
        from prefect_dask.task_runners import PrefectDaskFuture
    except ImportError:
        return False
    return isinstance(future, PrefectDaskFuture)


def runner_slots(runner: object) -> int | None:
    """The threads of the Dask workers behind ``runner`` (a DaskTaskRunner: its client, and
    a local cluster, start here if they have not yet), None for any other runner or when the
    scheduler cannot say."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        return None
    if not isinstance(runner, DaskTaskRunner):
        return None
    try:
        return sum(runner.client.nthreads().values()) or None
    except Exception:  # a scheduler that went away: the caller submits without a window
        return None


def local_cluster_kwargs(concurrency: int, cpus: int | None = None) -> dict[str, Any]:
    """LocalCluster arguments: worker processes (at most one per CPU) whose threads add up to
    at most ``concurrency``, listening on loopback only (Dask's HTTP server too, on a free
    port, without a dashboard: `no_http_pages`), speaking mutual TLS with a temporary
    certificate of their own (``security=True``: Dask's ``Security.temporary()``, made in
    memory when the cluster starts and handed to its workers and client, never written down;
    a client without it is refused), each preloading ``dask_setup``."""
    workers = max(1, min(concurrency, cpus or os.cpu_count() or 1))
    return {"n_workers": workers, "threads_per_worker": max(1, concurrency // workers),
            "processes": True, "host": "127.0.0.1", "dashboard_address": "127.0.0.1:0",
            "scheduler_kwargs": {"dashboard": False}, "security": True,
            "preload": [__name__]}


HTTP_ROUTE_KEYS = ("distributed.scheduler.http.routes", "distributed.worker.http.routes")


def no_http_pages() -> contextlib.AbstractContextManager:
    """Dask's HTTP pages off while aeval's local cluster starts (its scheduler and workers
    read the routes when they start; the workers get this process's config from their nanny).

    A Dask scheduler and each worker start an HTTP server even without a dashboard, outside
    the cluster's TLS and unauthenticated: metrics, the /info pages (worker logs, call
    stacks), JSON state. With no routes it answers every request 404."""
    import dask

    return dask.config.set({key: [] for key in HTTP_ROUTE_KEYS})


@functools.cache
def _dask_runner_class() -> type:
    """DaskTaskRunner that sends the flow's settings as models (``SettingsSentAsModels``) and,
    on a temporary local cluster, hands the flow's Prefect API URL to the workers it spawns.

    Without the URL, a worker process of a flow on the embedded (ephemeral) server starts its
    own server, and its task runs fail with "Server process did not start"."""
    from prefect_dask import DaskTaskRunner

    class AevalDaskTaskRunner(DaskTaskRunner):
        """A DaskTaskRunner whose submissions carry the flow's settings as models; on a local
        cluster, its workers report to the flow's Prefect API."""

        def __enter__(self):
            if self.address is None:  # a local cluster this runner starts
                env = dict(self.cluster_kwargs.get("env") or {})
                env.setdefault("PREFECT_API_URL", _api_url())
                self.cluster_kwargs["env"] = env
            runner = super().__enter__()
            self._exit_stack.enter_context(short_dask_logs())
            if self.address is None:
                self._exit_stack.enter_context(no_http_pages())
            current = SettingsContext.get()
            if current is not None:
                self._exit_stack.enter_context(SettingsSentAsModels(
                    profile=current.profile, settings=current.settings))
            return runner

        def submit(self, task, parameters, wait_for=None, dependencies=None):
            return super().submit(task, sealed_annotations(parameters), wait_for, dependencies)

    return AevalDaskTaskRunner


def sealed_annotations(parameters: dict) -> dict:
    """``parameters`` with each ``quote`` among its values a `SealedQuote`.

    Prefect's annotations are tuple subclasses whose ``__new__`` wraps the value, and pickle
    rebuilds them around a tuple of it: ``quote([a, b])`` arrives on a Dask worker as
    ``quote(([a, b],))`` (prefect 3.9.1), so a task got a tuple for its quoted list and
    failed (every skill's conclusion of a ``--dask`` run, since 5a72b56)."""
    return {k: SealedQuote(v.unwrap()) if type(v) is quote else v
            for k, v in parameters.items()}


class SealedQuote(quote):
    """A ``quote`` that pickles as itself (`sealed_annotations`); Prefect's engine unwraps
    it on the worker as any quote."""

    __slots__ = ()

    def __reduce__(self) -> tuple:
        return SealedQuote, (self.unwrap(),)


DASK_LOG_KEY = "distributed.admin.low-level-log-length"
DASK_LOG_LENGTH = 100


def short_dask_logs() -> contextlib.AbstractContextManager:
    """Dask's developer logs at most DASK_LOG_LENGTH entries long while aeval's runner is in
    use (the client, the local scheduler and its workers read it when they start), unless
    the user's Dask config keeps them shorter.

    Dask keeps the last 1,000 messages of every connection by default
    (``distributed.admin.low-level-log-length``); each message that submits a case carries
    the task, its parameters and context (~50 KB pickled), and a 1,000-case ``--dask local``
    run's process grew by ~220 MB for them (176 -> 430 MiB; with 20 entries, 176 -> 208)."""
    import dask

    current = dask.config.get(DASK_LOG_KEY, None)
    if current is not None and current <= DASK_LOG_LENGTH:
        return contextlib.nullcontext()
    return dask.config.set({DASK_LOG_KEY: DASK_LOG_LENGTH})


class SettingsSentAsModels(SettingsContext):
    """The flow's settings context (the same profile and settings), sent to Dask workers as
    the validated models themselves.

    prefect-dask serializes the current settings context for every task it submits
    (`prefect.context.serialize_context`: a walk of every Prefect setting into a dict, ~40 % of
    the flow process's CPU on a 440-case `--dask local` run), and the worker validates that dict
    back into a `Settings` model for every task run (pydantic-settings reads the environment
    and looks for its dotenv and toml files each time: ~36 % of a worker's CPU). Here the
    settings travel as the models: pickled with the task, unpickled on the worker without
    being validated again (pydantic takes a model instance of the field's type as it is). The
    same settings either way; workers and flow run one platform (the same paths already).
    Entered by aeval's Dask task runner for the flow run's duration."""

    def serialize(self, include_secrets: bool = True) -> dict[str, Any]:
        if not include_secrets:  # not what a task submission asks for
            return super().serialize(include_secrets)
        return {"profile": self.profile, "settings": self.settings}


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


PROFILER_CALLBACKS = ("profile", "profile-cycle")
"""The Dask worker's statistical profiler (``distributed.worker.profile``), which aeval's
workers do not run (``dask_setup``)."""


def dask_setup(worker: object) -> None:
    """Dask preload hook (``--preload aeval.flows.runners``): no worker profiler, and the
    worker process non-dumpable on Linux, so the executor's tool processes cannot read its
    environment or memory.

    The profiler calls ``sys._current_frames()`` every 10 ms. On CPython before 3.11.9 a
    garbage collection inside that call can run Python code (distributed's own GC callback)
    that lets another thread take the GIL while the interpreter's thread-list lock is still
    held; the next thread started then waits for that lock holding the GIL, and the whole
    worker stops for good (CPython gh-106883). A case starts two threads (the skill watches):
    a 1,000-case ``--dask local`` run on Python 3.11.7 stopped at 1,096 of 1,100 case runs,
    every thread of one worker waiting. Preloads run before the worker starts its periodic
    callbacks, so the profiler never starts; Dask's dashboard shows no profile for aeval."""
    callbacks = getattr(worker, "periodic_callbacks", None)
    if isinstance(callbacks, dict):
        for name in PROFILER_CALLBACKS:
            callback = callbacks.pop(name, None)
            if callback is not None:
                callback.stop()
    share_prefect_client(worker)
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4


def dask_teardown(worker: object) -> None:
    """Dask preload hook: close the worker's shared Prefect client."""
    shared = getattr(worker, SHARED_CLIENT_ATTR, None)
    if shared is not None:
        with contextlib.suppress(Exception):
            shared.client.__exit__(None, None, None)


SHARED_CLIENT_ATTR = "_aeval_prefect_client"


def share_prefect_client(worker: object) -> bool:
    """One Prefect client for every task the worker runs, as the thread pool shares the
    flow's: a SyncClientContext entered in the worker's own context, which Dask copies into
    each task (`distributed.utils.run_in_executor_with_context`), so Prefect's task engine
    finds it instead of making two clients per task run. Only when the worker's own settings
    name the API (PREFECT_API_URL: a local cluster's workers get the flow's, remote ones are
    told to set it); a client that cannot start leaves the worker as Prefect makes it
    (per-task clients), saying so in its log. True when shared."""
    import logging

    from prefect.context import SyncClientContext
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value() or getattr(worker, SHARED_CLIENT_ATTR, None) is not None:
        return False
    try:
        shared = SyncClientContext()
        shared.__enter__()
    except Exception as exc:
        logging.getLogger(__name__).warning(
            "aeval: no shared Prefect client on this worker (%s: %s); each task run makes "
            "its own", type(exc).__name__, str(exc)[:200])
        return False
    with contextlib.suppress(AttributeError):
        setattr(worker, SHARED_CLIENT_ATTR, shared)
    return True


def start_embedded_server() -> str | None:
    """Start Prefect's embedded (ephemeral) server now, with a scrubbed environment: Prefect
    starts it with a copy of this process's environment, where the model keys live, and a
    tool running as the same user could read it from ``/proc/<pid>/environ``. Nothing to do
    when a server is configured (PREFECT_API_URL). Returns the embedded API URL, or None.

    The server requires a fresh auth string (see `servers.embedded`), which this process's
    client then sends: a tool that finds the port gets 401.

    Call it from the command line before any flow runs, while the process has one thread
    (the environment is swapped for the moment of the start). Where the command line spawned
    the server before importing Prefect (`servers.embedded.start_early`), wait for that one."""
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
    from prefect.client.orchestration import get_client

    from aeval.adapters.llm import MODEL_LIMIT_VAR

    with get_client(sync_client=True) as client:
        client.upsert_global_concurrency_limit_by_name(name, limit)
    os.environ[MODEL_LIMIT_VAR] = name
    return name


PREFLIGHT_TIMEOUT_S = 30.0


def worker_problems(version: str, paths: list[str], store: str, token_name: str, token: str,
                    sandboxed: bool) -> list[str]:
    """Run on a Dask worker (`Client.run`) before any case: why this worker cannot run the
    run's cases, empty when it can. ``version`` is the caller's aeval; ``paths`` the skills;
    ``store`` the run store, where the caller wrote ``token`` into ``token_name`` (the same
    folder, not merely the same path); ``sandboxed``: the caller runs the cases under
    bubblewrap (--sandbox require, or auto where bwrap works), so every worker must too."""
    import shutil
    from pathlib import Path

    import aeval
    from aeval.adapters.sandbox.bwrap import bwrap_problem

    problems = []
    if aeval.__version__ != version:
        problems.append(f"aeval {aeval.__version__}, not {version} as the caller's")
    for path in paths:
        if not Path(path).exists():
            problems.append(f"cannot see the skills at {path}")
    try:
        seen = (Path(store) / token_name).read_text()
    except OSError as exc:
        seen = f"({exc.strerror or exc})"
    if seen != token:
        problems.append(f"cannot see the run store {store} this machine writes "
                        "(a shared file system mounted at the same path)")
    if shutil.which("bash") is None:
        problems.append("bash not found on PATH")
    if sandboxed and (why := bwrap_problem()) is not None:
        problems.append(f"no sandbox: {why}")
    return problems


def dask_preflight(address: str, paths: list[str], store: str, sandboxed: bool,
                   timeout_s: float = PREFLIGHT_TIMEOUT_S) -> str | None:
    """Ask every worker of the Dask scheduler at ``address`` whether it can run the cases
    (`worker_problems`, through `distributed.Client.run`), before anything runs. None when
    all can; otherwise one line naming the first worker that cannot and why (and how many
    others cannot). Raises OSError when the scheduler cannot be reached."""
    import secrets
    from pathlib import Path

    from distributed import Client

    import aeval

    root = Path(store)
    token = secrets.token_hex(16)
    marker = root / f".aeval-preflight-{token[:12]}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        marker.write_text(token)
    except OSError as exc:
        return f"--dask {address}: cannot write the run store {store}: {exc.strerror or exc}"
    try:
        with Client(address, timeout=timeout_s, set_as_default=False) as client:
            workers = list(client.scheduler_info().get("workers", {}))
            if not workers:
                return (f"--dask {address}: the scheduler has no workers "
                        "(start them with `dask worker ADDRESS --preload aeval.flows.runners`)")
            answers = client.run(worker_problems, aeval.__version__,
                                 [str(Path(p).resolve()) for p in paths],
                                 str(root.resolve()), marker.name, token, sandboxed,
                                 on_error="return")
    finally:
        marker.unlink(missing_ok=True)
    bad = {}
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):  # e.g. an aeval without this function
            bad[worker] = [f"cannot run aeval's check ({type(answer).__name__}: "
                           f"{str(answer)[:200]}): is the same aeval installed?"]
        elif answer:
            bad[worker] = answer
    if not bad:
        return None
    worker, problems = next(iter(bad.items()))
    more = f" (and {len(bad) - 1} more of {len(answers)} workers)" if len(bad) > 1 else ""
    return f"--dask {address}: worker {worker} cannot run the cases: {'; '.join(problems)}{more}"
