"""A local Prefect server reused across invocations: a warm `aeval run` pays no server boot.

The embedded server (`embedded`) costs ~5-6 s of CPU per invocation (uvicorn
importing ``prefect.server``, the migration check, the services), half of a warm one-skill literal
run. By default outside CI (``AEVAL_SERVER=reuse``; ``CI`` set, or ``AEVAL_SERVER=embedded``: one
embedded server per invocation, as before) the first invocation starts one server that the
next ones find and use:

- **one per user and PREFECT_HOME**: its record is ``<PREFECT_HOME>/aeval-server/server.json``
  (folder 0700, file 0600: pid, port, auth string, Prefect version), which only this user
  reads and which every sandbox has hidden with the rest of the Prefect home;
- **with an auth string**: a fresh one per server, kept in the record; the server requires it
  for everything but ``/api/health``, so a tool that finds the port gets 401, as with the
  embedded server; the server gets a scrubbed environment (no model keys, no tokens);
- **safe under concurrent invocations**: an invocation finds or starts the server under an
  exclusive lock (``start.lock``), and holds a shared lock (``clients.lock``) for as long as
  it runs; locks are the kernel's (``flock``), so an invocation killed with -9 holds none;
- **stopped after an idle period** (``AEVAL_SERVER_IDLE_S``, default 600 s): the server's
  watchdog (`aeval.deployments.servers.prefect_server`) takes both locks exclusively, which it gets
  only when no invocation runs or is starting, and stops once it has held them idle that long;
- **kill -9**: a record whose process is gone, is not this server (pid reuse) or does not
  answer with the record's auth string is replaced by a new server; a run whose server was
  killed under it fails with one line naming the server and ``aeval run --resume``, which
  reruns only the cases without a verdict.

This module imports no Prefect (it runs before Prefect is imported).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from aeval.tasks._engine.servers.home import (  # noqa: F401 (this module's names too)
    DEFAULT_IDLE_S,
    IDLE_VAR,
    MARK_VAR,
    MODE_VAR,
    SERVER_AUTH_VAR,
    SERVER_ENV,
    STARTUP_TIMEOUT_VAR,
    EmbeddedServerError,
    StartWait,
    default_database,
    free_port,
    idle_seconds,
    mode,
    new_auth_string,
    save_template,
    seed_database,
    state_dir,
    template_database,
)

SERVE_MODULE = "aeval.deployments.servers.prefect_server"
"""What the reused server runs (``python -m``): uvicorn with Prefect's app and a watchdog."""
RECORD = "server.json"
START_LOCK = "start.lock"
CLIENTS_LOCK = "clients.lock"
MAX_RESTARTS = 3
"""Restarts of a server that died under a run before the run is let fail."""


class ServerRecord(BaseModel):
    """The reused Prefect server of one PREFECT_HOME, as its starter wrote it."""

    model_config = ConfigDict(extra="forbid")
    schema_version: int = Field(1, description="Version of this record's format.")
    pid: int = Field(description="The server process (``python -m " + SERVE_MODULE + "``).")
    port: int = Field(description="Its loopback port: the API is http://127.0.0.1:PORT/api.")
    auth_string: str = Field(description="What the server requires (HTTP basic auth).")
    prefect_version: str = Field(description="The Prefect it runs; another one is not reused.")
    started: float = Field(description="When it was spawned (Unix time).")

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"


def read_record(folder: Path) -> ServerRecord | None:
    try:
        return ServerRecord.model_validate_json((folder / RECORD).read_bytes())
    except (OSError, ValueError):
        return None


def write_record(folder: Path, record: ServerRecord) -> None:
    tmp = folder / f".{RECORD}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(record.model_dump_json())
    os.replace(tmp, folder / RECORD)


def remove_record(folder: Path, pid: int) -> None:
    """Remove the record if it still names ``pid`` (a newer server's record stays)."""
    rec = read_record(folder)
    if rec is not None and rec.pid == pid:
        with contextlib.suppress(OSError):
            (folder / RECORD).unlink()


def open_lock(folder: Path, name: str) -> int:
    return os.open(folder / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


def is_server_process(record: ServerRecord) -> bool:
    """The record's pid is alive and is that server (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{record.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        if sys.platform.startswith("linux"):
            return False
        try:
            os.kill(record.pid, 0)
        except OSError:
            return False
        return True
    return SERVE_MODULE.encode() in cmdline and str(record.port).encode() in cmdline


def answers(record: ServerRecord, timeout_s: float = 5.0) -> bool:
    """The server answers an authenticated request with the record's auth string."""
    token = base64.b64encode(record.auth_string.encode()).decode()
    req = urllib.request.Request(f"{record.api_url}/admin/version",
                                 headers={"Authorization": f"Basic {token}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ReusedServer:
    """This invocation's use of the reused server: found running, or spawned by it."""

    def __init__(self, record: ServerRecord, lease_fd: int, spawned: bool,
                 fresh_db: Path | None = None):
        self.record = record
        self.port = record.port
        self.auth_string = record.auth_string
        self.lease_fd = lease_fd  # shared lock on clients.lock, held until exit
        self.spawned = spawned
        self.fresh_db = fresh_db
        self.ready = False
        self.process = None  # not a child of ours to stop
        self.lost: int | None = None  # the pid of a server found dead
        self.restarts = 0
        self.failed = False
        self._stopping = threading.Event()

    @property
    def api_url(self) -> str:
        return self.record.api_url

    def wait_ready(self, timeout_s: float | None = None) -> str:
        """Block until the server answers with its auth string; its URL. Raises
        EmbeddedServerError when it died or did not come up (`StartWait`); a server this
        invocation spawned that did not come up is stopped (no idle timer would ever stop
        one that never answered)."""
        if self.ready:
            return self.api_url
        wait = StartWait(self.record.pid, timeout_s)
        while not wait.expired():
            if self._gone() and not self._revive():
                self.failed = True
                raise EmbeddedServerError(
                    f"the local Prefect server (pid {self.lost}) exited while starting "
                    f"(its log: {state_dir() / 'server.log'})")
            if answers(self.record, timeout_s=2):
                self.ready = True
                self.keep_alive()
                if self.fresh_db is not None and (t := template_database()):
                    save_template(self.fresh_db, t)
                return self.api_url
            wait.pid = self.record.pid  # a revived server is another process
            time.sleep(0.05)
        self.failed = True
        if self.spawned:
            self._stop_unstarted()
        raise wait.error("the local Prefect server")

    def _stop_unstarted(self) -> None:
        """Stop the server this invocation spawned, which never answered, and its record."""
        import signal

        pid = self.record.pid
        if is_server_process(self.record):
            for sig in (signal.SIGTERM, signal.SIGCONT):  # a stopped one acts once resumed
                with contextlib.suppress(OSError):
                    os.killpg(pid, sig)
            for _ in range(100):
                if not is_server_process(self.record):
                    break
                time.sleep(0.05)
            else:
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
        remove_record(state_dir(), pid)

    def stop(self) -> None:
        """Stop watching; the server outlives this invocation (its watchdog stops it when
        idle)."""
        self._stopping.set()

    def keep_alive(self, period_s: float = 0.5) -> None:
        """Watch the server for the rest of this invocation: if it dies (kill -9, OOM), start
        it again on the same port with the same auth string, so Prefect's client, which
        retries a lost connection for about a minute, carries on with the run. Says so in one
        line on stderr; after `MAX_RESTARTS` it gives up (the run then fails and
        ``aeval run --resume`` reruns the cases without a verdict)."""
        import atexit

        atexit.register(self.stop)
        threading.Thread(target=self._watch, args=(period_s,), name="aeval-server-watch",
                         daemon=True).start()

    def _watch(self, period_s: float) -> None:
        while not self._stopping.wait(period_s):
            if self._gone() and not self._revive():
                return

    def _gone(self) -> bool:
        """The server is not running: its process is gone (or is another program), and
        nothing answers on its port with its auth string (a live server that answers is
        never replaced, whatever /proc said)."""
        return not is_server_process(self.record) and not answers(self.record, timeout_s=1)

    def _revive(self) -> bool:
        """Start the lost server again (same port, same auth string); False when that is
        not to be tried (again), with the reason on stderr."""
        lost = self.lost = self.record.pid
        if self.restarts >= MAX_RESTARTS:
            print(f"aeval: the local Prefect server (pid {lost}) stopped again; not "
                  f"restarting it (its log: {state_dir() / 'server.log'})",
                  file=sys.stderr, flush=True)
            return False
        self.restarts += 1
        try:
            self.record = self._restart()
        except OSError as exc:
            print(f"aeval: the local Prefect server (pid {lost}) stopped and could not "
                  f"be started again: {exc}", file=sys.stderr, flush=True)
            return False
        self.lost = None
        print(f"aeval: the local Prefect server (pid {lost}) stopped; started it again "
              f"(pid {self.record.pid}, same port){': the run goes on' if self.ready else ''}",
              file=sys.stderr, flush=True)
        return True

    def _restart(self) -> ServerRecord:
        folder = state_dir()
        start = open_lock(folder, START_LOCK)
        try:
            fcntl.flock(start, fcntl.LOCK_EX)
            current = read_record(folder)
            if current is not None and current.port == self.port \
                    and current.auth_string == self.auth_string \
                    and is_server_process(current):
                return current  # another invocation started it again already
            record, _ = _spawn(folder, self.record.prefect_version, self.port,
                               self.auth_string)
            write_record(folder, record)
            return record
        finally:
            os.close(start)


def _spawn(folder: Path, prefect_version: str, port: int | None = None,
           auth: str | None = None) -> tuple[ServerRecord, Path | None]:
    import importlib.util

    from aeval.isolation.hardening import scrubbed_environ

    if importlib.util.find_spec("prefect") is None:
        raise EmbeddedServerError("prefect is not installed")
    port, auth = port or free_port(), auth or new_auth_string()
    env = {**scrubbed_environ(), **SERVER_ENV, SERVER_AUTH_VAR: auth}
    env.pop("PREFECT_API_URL", None)
    env.pop(MARK_VAR, None)
    fresh_db = None
    db, template = default_database(), template_database()
    if db is not None and template is not None and not db.exists() \
            and not seed_database(db, template):
        fresh_db = db
    log = os.open(folder / "server.log",  # appended: a lost server's last words stay
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", SERVE_MODULE, "--port", str(port), "--state-dir",
             str(folder), "--idle-s", str(idle_seconds())],
            env=env, cwd=folder, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)  # outlives this invocation, and its terminal's Ctrl-C
    finally:
        os.close(log)
    return ServerRecord(pid=process.pid, port=port, auth_string=auth,
                        prefect_version=prefect_version, started=time.time()), fresh_db


def attach() -> ReusedServer | None:
    """Find this PREFECT_HOME's reused server, or start it (not waiting for it to answer:
    `ReusedServer.wait_ready` does); None when the running one is of another Prefect version
    (this invocation then starts an embedded server of its own)."""
    from importlib.metadata import version

    prefect_version = version("prefect")
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder.chmod(0o700)  # another user's folder: OSError, and an embedded server instead
    start = open_lock(folder, START_LOCK)
    try:
        fcntl.flock(start, fcntl.LOCK_EX)
        record, spawned, fresh_db = read_record(folder), False, None
        if record is not None and not is_server_process(record) and not answers(record):
            record = None  # killed (-9), or stopped when idle: start a new one
        if record is not None and record.prefect_version != prefect_version:
            return None
        if record is None:
            record, fresh_db = _spawn(folder, prefect_version)
            write_record(folder, record)
            spawned = True
        lease = open_lock(folder, CLIENTS_LOCK)
        fcntl.flock(lease, fcntl.LOCK_SH)  # before the start lock goes: never seen idle
        return ReusedServer(record, lease, spawned, fresh_db)
    finally:
        os.close(start)  # releases the start lock
