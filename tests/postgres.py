"""A throwaway PostgreSQL server for the tests that run Prefect on it (the production setup of
deployments/README.md). Debian's binaries (`apt-get install postgresql`, found on PATH or
under /usr/lib/postgresql/<version>/bin); the data folder and the unix socket in a fresh
temporary folder, TCP on 127.0.0.1 on a free port only, a password for TCP. PostgreSQL refuses
to run as root: as root it runs as the `postgres` user Debian's package creates (else
`nobody`), through `runuser`. Stopped and removed at the end, also when the tests failed.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class Postgres:
    """One running PostgreSQL server."""

    port: int
    """Its TCP port on 127.0.0.1."""
    user: str
    """The database superuser (password authentication over TCP)."""
    password: str
    """That user's password."""
    bindir: Path
    """The folder of its binaries (psql beside postgres)."""

    def url(self, database: str, driver: str = "postgresql+asyncpg") -> str:
        """A SQLAlchemy URL of ``database`` on this server (Prefect's setting takes this)."""
        return f"{driver}://{self.user}:{self.password}@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str) -> str:
        """The libpq / asyncpg DSN of ``database``."""
        return self.url(database, driver="postgresql")

    def query(self, database: str, sql: str) -> list[tuple]:
        """The rows of ``sql`` on ``database``, through asyncpg (a fresh connection)."""
        import asyncio

        import asyncpg

        async def run() -> list[tuple]:
            conn = await asyncpg.connect(self.dsn(database), timeout=10)
            try:
                return [tuple(r) for r in await conn.fetch(sql)]
            finally:
                await conn.close()

        return asyncio.run(run())

    def create_database(self, name: str) -> None:
        """CREATE DATABASE ``name`` (a plain identifier)."""
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"not a plain database name: {name!r}")
        self.query("postgres", f"CREATE DATABASE {name}")


def find_bindir() -> Path | None:
    """Where initdb and postgres are: PATH first, then Debian's versioned folders (newest)."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("postgres"):
        return Path(on_path).parent
    versions = []
    for d in Path("/usr/lib/postgresql").glob("*/bin"):
        if (d / "initdb").is_file() and (d / "postgres").is_file() and d.parent.name.isdigit():
            versions.append((int(d.parent.name), d))
    return max(versions)[1] if versions else None


def _run_as() -> tuple[list[str], str | None]:
    """The command prefix that drops root (empty when not root) and the user it runs as."""
    if os.geteuid() != 0:
        return [], None
    runuser = shutil.which("runuser")
    if runuser is None:
        return [], "root"  # the caller skips: postgres will not run as root
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return [runuser, "-u", name, "--"], name
    return [], "root"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Fast shutdown (SIGINT), then SIGKILL, bounded; the whole process group."""
    for sig, wait in ((signal.SIGINT, 20), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


@contextlib.contextmanager
def running_postgres(timeout_s: float = 60) -> Iterator[Postgres]:
    """Start a private PostgreSQL server; yield it; stop it and remove its folder.
    Skips (pytest.skip, with the reason) where PostgreSQL's binaries or a user to run them as
    cannot be had."""
    bindir = find_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql): no initdb "
                    "on PATH nor under /usr/lib/postgresql/*/bin")
    prefix, as_user = _run_as()
    if as_user == "root":
        pytest.skip("running as root without runuser or an unprivileged user (postgres, "
                    "nobody): PostgreSQL refuses to run as root")
    # not under pytest's tmp folder: its root-only parent would hide the files from the user
    top = Path(tempfile.mkdtemp(prefix="aeval-test-pg-"))
    proc: subprocess.Popen | None = None
    try:
        if as_user is not None:
            ent = pwd.getpwnam(as_user)
            os.chown(top, ent.pw_uid, ent.pw_gid)
        password = secrets.token_hex(16)
        pwfile = top / "pw"
        pwfile.write_text(password + "\n")
        if as_user is not None:
            os.chown(pwfile, ent.pw_uid, ent.pw_gid)
        os.chmod(pwfile, 0o600)
        data, sock, log = top / "data", top / "sock", top / "postgres.log"
        init = subprocess.run(
            [*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "aeval",
             "--pwfile", str(pwfile), "--auth-local=trust", "--auth-host=scram-sha-256",
             "-E", "UTF8", "--locale=C", "--no-sync"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if init.returncode != 0:
            raise RuntimeError(f"initdb exited {init.returncode}: {init.stderr[-2000:]}")
        pwfile.unlink()
        sock.mkdir()
        if as_user is not None:
            os.chown(sock, ent.pw_uid, ent.pw_gid)
        port = _free_port()
        with log.open("wb") as out:
            if as_user is not None:
                os.chown(log, ent.pw_uid, ent.pw_gid)
            proc = subprocess.Popen(
                [*prefix, str(bindir / "postgres"), "-D", str(data), "-k", str(sock),
                 "-h", "127.0.0.1", "-p", str(port), "-F", "-c", "max_connections=200",
                 "-c", "shared_buffers=64MB"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        pg = Postgres(port=port, user="aeval", password=password, bindir=bindir)
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"postgres exited {proc.returncode}: "
                                   f"{log.read_text(errors='replace')[-2000:]}")
            try:
                pg.query("postgres", "SELECT 1")
                break
            except Exception as exc:  # refused, or asyncpg's "the database is starting up"
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres not ready after {timeout_s:.0f} s: {exc}; "
                                       f"{log.read_text(errors='replace')[-2000:]}") from exc
                time.sleep(0.3)
        yield pg
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(top, ignore_errors=True)
