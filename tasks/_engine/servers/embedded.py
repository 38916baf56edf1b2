"""Prefect's embedded server, started first thing and in the background.

Prefect starts its embedded ("ephemeral") server when a flow first needs the API, in the
foreground: the process waits ~4-5 s (warm PREFECT_HOME; ~11-14 s fresh) after it has
already spent a second or more importing Prefect and aeval's flows. Both are CPU-bound and
single-threaded, so on two cores they overlap: `start_early` spawns the same server process
Prefect would (uvicorn and Prefect's API app, no UI, ephemeral mode; the app wrapped by
`aeval.deployments.servers.server_app`, which answers a 503 with a short ``Retry-After``)
*before* Prefect is imported, and points ``PREFECT_API_URL`` at it; `wait_ready` is called
where the first flow starts, and returns at once when the server came up meanwhile.

The server requires an auth string (Prefect's ``server.api.auth_string``): a random one per
invocation, given to the server in its environment and to aeval's own client in
``PREFECT_API_AUTH_STRING`` (``api.auth_string``). Nothing a case runs gets either: the
commands of a case get an environment of their own (``aeval.isolation.shell.base_env``), and the
sandbox's PID namespace hides aeval's and the server's ``/proc``. A tool that finds the port
(``/proc/net/tcp`` names it) gets 401 for everything but ``/api/health``: it can neither read
other task runs and their logs nor create artifacts, change or delete the flow run.

The server gets a scrubbed environment (``scrubbed_environ``: no model keys, no tokens) and
dies with aeval: terminated at exit (after Prefect's own exit handlers, which flush logs and
events to it), and sent SIGTERM by the kernel if aeval is killed (``PR_SET_PDEATHSIG``).

A fresh PREFECT_HOME (every CI job) makes the server create and migrate its SQLite database:
~5.4 s instead of ~3 s. The first server that does so leaves a copy of the migrated database
(taken with SQLite's backup API as soon as it answers, before any flow runs) in aeval's cache
(``AEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/aeval``, else ``~/.cache/aeval``), one per Prefect
version; a later fresh PREFECT_HOME starts from that copy (Alembic then has nothing to do,
or only the migrations of a newer Prefect). Not when a database URL is configured.

Outside CI (``AEVAL_SERVER=reuse``), `start_early` first looks for the local server a
previous invocation left running for this PREFECT_HOME, or starts that one instead
(`aeval.tasks._engine.servers.reused`): a warm invocation then pays no server boot at all.

This module imports no Prefect: that is its point. Where Prefect is already imported (aeval
called in-process, a test), or a server is configured (``PREFECT_API_URL``), it does nothing
and Prefect's own start applies.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from aeval.isolation.hardening import scrubbed_environ
from aeval.tasks._engine.servers.home import (  # noqa: F401 (this module's names too)
    CLIENT_AUTH_VAR,
    MARK_VAR,
    SERVER_AUTH_VAR,
    SERVER_ENV,
    STARTUP_TIMEOUT_VAR,
    EmbeddedServerError,
    StartWait,
    cache_dir,
    default_database,
    free_port,
    new_auth_string,
    save_template,
    seed_database,
    template_database,
)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PDEATHSIG


class EmbeddedServer:
    """One embedded Prefect server process of aeval's, on a free loopback port."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self.ready = False
        self.fresh_db: Path | None = None  # a database this server creates: snapshot it
        self.auth_string = new_auth_string()
        self.failed = False  # did not come up: stopped, and nothing is handed to a warm process

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def spawn(self) -> None:
        spec = importlib.util.find_spec("prefect")
        if spec is None or not spec.submodule_search_locations:
            raise EmbeddedServerError("prefect is not installed")
        app_dir = str(Path(next(iter(spec.submodule_search_locations))).parent)
        env = {**scrubbed_environ(), **SERVER_ENV, SERVER_AUTH_VAR: self.auth_string}
        env.pop("PREFECT_API_URL", None)
        env.pop(MARK_VAR, None)
        db, template = default_database(), template_database()
        if db is not None and template is not None and not db.exists() \
                and not seed_database(db, template):
            self.fresh_db = db
        linux = sys.platform.startswith("linux")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--app-dir", app_dir, "--factory",
             "aeval.deployments.servers.server_app:create_app", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", "error", "--lifespan", "on"],
            env=env, stdin=subprocess.DEVNULL,
            # preexec_fn: called while aeval has a single thread (before Prefect starts any)
            preexec_fn=_die_with_parent if linux else None)
        atexit.register(self.stop)

    def wait_ready(self, timeout_s: float | None = None) -> str:
        """Block until the API answers /health; its URL. Raises EmbeddedServerError (after
        stopping the server) when it exited or did not come up (`StartWait`)."""
        if self.ready:
            return self.api_url
        wait = StartWait(self.process.pid if self.process else None, timeout_s)
        while not wait.expired():
            if self.process is not None and self.process.poll() is not None:
                self.failed = True
                raise EmbeddedServerError(
                    f"the embedded Prefect server exited with code {self.process.returncode} "
                    "while starting (rerun with -v for its logs)")
            try:
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as r:
                    if r.status == 200:
                        self.ready = True
                        if self.fresh_db is not None and (t := template_database()):
                            save_template(self.fresh_db, t)
                        return self.api_url
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        self.failed = True
        self.stop()
        raise wait.error("the embedded Prefect server")

    def stop(self) -> None:
        p, self.process = self.process, None
        if p is None or p.poll() is not None:
            return
        p.terminate()
        with contextlib.suppress(OSError):
            os.kill(p.pid, signal.SIGCONT)  # a stopped server acts on SIGTERM only once resumed
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


_server: EmbeddedServer | None = None


def start_early() -> EmbeddedServer | None:
    """Spawn the embedded server now, before Prefect is imported, and point this process's
    ``PREFECT_API_URL`` at it, with the server's auth string in ``PREFECT_API_AUTH_STRING``.
    None (nothing done) when Prefect is already imported, a server is configured, or one was
    started already."""
    global _server
    if _server is not None:
        return _server
    imported = "prefect" in sys.modules
    if imported and _warm is not None:
        _warm.check()  # a warm child: raises unless Prefect was imported with these settings
    elif imported:
        return None
    if os.environ.get("PREFECT_API_URL"):
        return None
    server = reused_server() or EmbeddedServer()
    if isinstance(server, EmbeddedServer):
        server.spawn()
    os.environ["PREFECT_API_URL"] = server.api_url
    os.environ[CLIENT_AUTH_VAR] = server.auth_string
    os.environ[MARK_VAR] = server.api_url
    _server = server
    if imported and _warm is not None:
        _warm.apply(server.api_url, server.auth_string)  # to Prefect's imported settings
    return server


_warm = None


def warm_child(warm) -> None:
    """Called in a child of the warm process (`aeval.deployments.servers.warm`), where Prefect is
    already imported: `start_early` then calls ``warm.check()`` (which raises when this
    invocation's settings differ from those Prefect was imported with) and, once it has found
    or started the server, ``warm.apply(api_url, auth_string)`` (Prefect's settings are
    rebuilt unless that is the server they were imported with)."""
    global _warm
    _warm = warm


def reused_server():
    """The local server reused across invocations (`reused`), found or started;
    None when this invocation is to start an embedded server of its own (``AEVAL_SERVER``
    embedded, CI, a reused server of another Prefect version, no ``flock``)."""
    try:
        from aeval.tasks._engine.servers import reused as local_server
    except ImportError:  # no fcntl (not POSIX)
        return None
    if local_server.mode() != "reuse":
        return None
    try:
        return local_server.attach()
    except OSError:  # an unwritable PREFECT_HOME: the embedded server says what is wrong
        return None


def started() -> EmbeddedServer | None:
    """The server `start_early` spawned in this process, if any."""
    return _server


def failed() -> bool:
    """Whether the server this process started or attached to did not come up (it was
    stopped; a warm process is not to be started for it)."""
    return bool(getattr(_server, "failed", False))
