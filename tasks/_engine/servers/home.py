"""What aeval's two Prefect servers share: where this user's local server of a PREFECT_HOME
keeps its state and whether an invocation reuses it (the part the warm command line,
`aeval.deployments.servers.warm`, needs before anything else is imported: no pydantic, no Prefect),
and what both the embedded server (`embedded`) and the reused one (`reused`) start with: the
server's environment and auth string, a free port, the cached migrated database. Both import it;
it imports neither (the embedded server looks for the reused one, which used to import the
embedded server's helpers back). Standard library only."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

MODE_VAR = "AEVAL_SERVER"
"""``reuse`` (default, except under CI) or ``embedded`` (one server per invocation)."""
IDLE_VAR = "AEVAL_SERVER_IDLE_S"
DEFAULT_IDLE_S = 600.0

WARM_LOCK = "warm.lock"
"""Held (flock) by the warm process (`aeval.deployments.servers.warm`) for its whole life, from
its first import on: the lock an invocation tries before it starts another one. It holds the
warm process's pid (`aeval server status` reads it)."""
WARM_MODULE = "aeval.deployments.servers.warm"

def mode(environ: dict[str, str] | None = None) -> str:
    """``reuse`` or ``embedded``: AEVAL_SERVER when set, else embedded under CI (a job's
    container ends with it: nothing to reuse) and reuse elsewhere."""
    environ = os.environ if environ is None else environ
    value = (environ.get(MODE_VAR) or "").strip().lower()
    if value in ("reuse", "embedded"):
        return value
    return "embedded" if environ.get("CI") else "reuse"


def idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get(IDLE_VAR) or DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S


def prefect_home() -> Path:
    """This invocation's PREFECT_HOME (Prefect's default ``~/.prefect`` when unset)."""
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def state_dir() -> Path:
    """The reused server's state folder (0700): its record with the auth string, its locks
    and log, and the warm process's socket, token and log."""
    return prefect_home() / "aeval-server"


STARTUP_TIMEOUT_VAR = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
SERVER_AUTH_VAR = "PREFECT_SERVER_API_AUTH_STRING"
"""What the server requires (HTTP basic auth with this string), in the server's environment."""
CLIENT_AUTH_VAR = "PREFECT_API_AUTH_STRING"
"""What Prefect's client sends, in aeval's own environment."""
MARK_VAR = "AEVAL_EMBEDDED_API_URL"
"""Set (to the API URL) in aeval's environment while an embedded server of its own is the
PREFECT_API_URL: it is not a server other machines (Dask workers) can reach."""


SERVER_ENV = {
    "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1",
    # aeval uses no Prefect blocks: no registration of block types at boot, and no import of
    # every installed Prefect collection to find theirs (prefect-dask imports distributed:
    # ~0.4 s of CPU per boot)
    "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
    "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
    # nor automations: no UI to make them, and only aeval holds the auth string; the triggers
    # service matched every event of a run against none (~8 % of a reused server's CPU in a
    # warm one-skill run). A Prefect server of your own (PREFECT_API_URL) keeps them.
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
    # the task-run recorder writes the task runs and states from the clients' events one
    # event per transaction by default (batch size 1): at 8 case chains it fell behind, and
    # what it had not written when the embedded server stopped never reached the database
    # (a 200-case CI run: 107-117 of its 462 task runs in the UI; 462 with 50, and ~15 % less
    # of the server's CPU; benchmarks/README.md)
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "50",
    # two glibc malloc arenas, not one per thread that ever allocated (up to 8 per core): the
    # server answers from a thread pool, and over a 300-skill --dask local run its resident
    # memory peaked at 274-292 MiB with the default, 236-258 with 2, at the same wall)
    "MALLOC_ARENA_MAX": "2",
}
"""What aeval's own Prefect servers (embedded or reused) run with: the API and the services of
an ephemeral server (flow and task runs, events), no UI, no block registration, no
automations."""


class EmbeddedServerError(RuntimeError):
    """The embedded Prefect server did not come up: an environment condition (a busy or
    broken machine), which the command line reports in one line with exit 3, never as an
    internal error."""


DEFAULT_STARTUP_S = 90.0
STALL_S = 10.0
"""How long a server past its deadline may go without using any CPU before it is given up."""


def startup_seconds() -> float:
    """The start deadline on an idle machine: ``STARTUP_TIMEOUT_VAR``, else 90 s."""
    try:
        return max(1.0, float(os.environ.get(STARTUP_TIMEOUT_VAR) or DEFAULT_STARTUP_S))
    except ValueError:
        return DEFAULT_STARTUP_S


def _load_factor() -> float:
    """How much busier than its cores the machine is (1 when idle or unknown)."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


def cpu_ticks(pid: int) -> int | None:
    """CPU time a process (and its waited-for children) has used, in clock ticks; None when
    it cannot be read (gone, or no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    except (OSError, IndexError, ValueError):
        return None


class StartWait:
    """The deadline of a server's start, which scales with what the machine is doing: the
    setting's seconds times the load per core, and past that, as long as the server still
    uses CPU (it is making progress); given up when it has used none for `STALL_S` (or the
    setting, if shorter) past its deadline, or at ten times the scaled deadline."""

    def __init__(self, pid: int | None, timeout_s: float | None = None):
        import time

        self._clock = time.monotonic
        self.pid = pid
        self.timeout_s = startup_seconds() if timeout_s is None else timeout_s
        self.started = self._clock()
        self._ticks = cpu_ticks(pid) if pid else None
        self._progress = self.started

    def expired(self) -> bool:
        now = self._clock()
        ticks = cpu_ticks(self.pid) if self.pid else None
        if ticks is not None and ticks != self._ticks:
            self._ticks, self._progress = ticks, now
        scaled = self.timeout_s * _load_factor()
        if now - self.started > 10 * scaled:
            return True
        stall = min(STALL_S, self.timeout_s)
        return now - self.started > scaled and now - self._progress > stall

    def error(self, what: str) -> EmbeddedServerError:
        """One line: what did not answer, for how long, and the setting to raise."""
        waited = self._clock() - self.started
        return EmbeddedServerError(
            f"{what} did not answer within {waited:.0f} s (the machine may be busy): set "
            f"{STARTUP_TIMEOUT_VAR} to more than {self.timeout_s:.0f} seconds and rerun")


def new_auth_string() -> str:
    """A fresh auth string for one embedded server (one aeval invocation)."""
    import secrets  # here, not at the top: the warm command line imports this module first

    return "aeval-" + secrets.token_urlsafe(32)


def free_port() -> int:
    import socket

    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cache_dir() -> Path:
    """aeval's cache folder (not created here)."""
    if d := os.environ.get("AEVAL_CACHE_DIR"):
        return Path(d)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aeval"


def default_database() -> Path | None:
    """The SQLite file the embedded server will use, or None when a database is configured
    (an environment variable or the Prefect profile names one: not aeval's to touch)."""
    if any("DATABASE" in k for k in os.environ if k.startswith("PREFECT_")):
        return None
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml")
    with contextlib.suppress(OSError):
        if "DATABASE" in profiles.read_text():
            return None
    return home / "prefect.db"


def template_database() -> Path | None:
    """The cached migrated database for the installed Prefect, or None (no Prefect)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return cache_dir() / f"prefect-{version('prefect')}.db"
    except PackageNotFoundError:
        return None


def seed_database(db: Path | None, template: Path | None) -> bool:
    """Copy the template into a PREFECT_HOME that has no database yet; True when done."""
    if db is None or template is None or db.exists() or not template.is_file():
        return False
    import shutil

    db.parent.mkdir(parents=True, exist_ok=True)
    tmp = db.with_name(f".{db.name}.{os.getpid()}.tmp")
    shutil.copyfile(template, tmp)
    os.replace(tmp, db)
    return True


def save_template(db: Path, template: Path) -> None:
    """Snapshot a freshly migrated database into the cache (best effort: it is a cache)."""
    import sqlite3

    with contextlib.suppress(OSError, sqlite3.Error):
        template.parent.mkdir(parents=True, exist_ok=True)
        tmp = template.with_name(f".{template.name}.{os.getpid()}.tmp")
        src, dst = sqlite3.connect(db), sqlite3.connect(tmp)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
        os.replace(tmp, template)
