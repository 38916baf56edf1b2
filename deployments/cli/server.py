"""``aeval server status`` and ``aeval server stop``: what a run left running, and stopping it.

Outside CI, the first ``aeval run`` of a PREFECT_HOME starts a local Prefect server that later
runs reuse (`aeval.tasks._engine.servers.reused`) and, after the run, a warm process that
later runs fork from (`aeval.deployments.servers.warm`). Both stop by themselves after the
idle period (``AEVAL_SERVER_IDLE_S``, default 600 s); this command shows them and stops them
now. It never stops a server a run is using unless asked to (``--force``): that run would
then fail and need ``aeval run --resume``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import sys
import time
from datetime import datetime
from pathlib import Path

from aeval.deployments.cli._common import EXIT_USAGE, add_verbose
from aeval.exit_codes import OK
from aeval.tasks._engine.servers.home import WARM_LOCK, WARM_MODULE, idle_seconds, state_dir
from aeval.tasks._engine.servers.reused import (
    CLIENTS_LOCK,
    START_LOCK,
    ServerRecord,
    answers,
    is_server_process,
    open_lock,
    read_record,
    remove_record,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``server status`` and ``server stop`` to the ``aeval`` parser."""
    s = sub.add_parser(
        "server", help="show or stop the local Prefect server and warm process runs leave",
        description="Outside CI, `aeval run` keeps a local Prefect server and a warm process "
        "for the next run; both stop after AEVAL_SERVER_IDLE_S seconds idle (default 600). "
        "This shows them (status) or stops them now (stop). PREFECT_HOME selects whose.")
    add_verbose(s)
    verbs = s.add_subparsers(dest="verb", metavar="ACTION", required=True)
    st = verbs.add_parser("status", help="what is running for this PREFECT_HOME (exit 0)")
    add_verbose(st)
    st.set_defaults(func=cmd_status)
    sp = verbs.add_parser("stop", help="stop the local Prefect server and the warm process "
                                       "(exit 2 while a run uses them, unless --force)")
    sp.add_argument("--force", action="store_true",
                    help="stop them even while a run uses the server (that run then fails; "
                         "`aeval run --resume` reruns its cases without a verdict)")
    add_verbose(sp)
    sp.set_defaults(func=cmd_stop)


def _warm_pid(folder: Path) -> int | None:
    """The warm process of ``folder``, when one runs: its lock is held and the pid it wrote
    there is that process (not a reused pid)."""
    path = folder / WARM_LOCK
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: the warm process runs (or is starting)
        else:
            return None
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if not text.isdigit():
        return None
    pid = int(text)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    return pid if WARM_MODULE.encode() in cmdline else None


def _in_use(folder: Path) -> bool:
    """Whether a run holds the server (a shared lock on clients.lock)."""
    if not (folder / CLIENTS_LOCK).exists():
        return False
    fd = open_lock(folder, CLIENTS_LOCK)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        return False
    finally:
        os.close(fd)


def _server(folder: Path) -> ServerRecord | None:
    record = read_record(folder) if folder.is_dir() else None
    return record if record is not None and is_server_process(record) else None


def cmd_status(args: argparse.Namespace) -> int:
    folder = state_dir()
    record, warm = _server(folder), _warm_pid(folder)
    idle = f"stops after {idle_seconds():.0f} s idle"
    if record is None:
        print("local Prefect server: not running")
    else:
        since = datetime.fromtimestamp(record.started).strftime("%Y-%m-%d %H:%M")
        health = "answers" if answers(record, timeout_s=2) else "does not answer"
        use = "in use by a run" if _in_use(folder) else "idle"
        print(f"local Prefect server: pid {record.pid}, http://127.0.0.1:{record.port}/api, "
              f"Prefect {record.prefect_version}, up since {since}, {health}, {use}; {idle}")
    print(f"warm process: {f'pid {warm}; {idle}' if warm else 'not running'}")
    print(f"state: {folder}")
    return OK


def _stop(pid: int, alive) -> None:
    """SIGTERM the process group of ``pid`` (SIGCONT too: a stopped one acts once resumed),
    then SIGKILL it if it is still there after 10 s."""
    for sig in (signal.SIGTERM, signal.SIGCONT):
        with contextlib.suppress(OSError):
            os.killpg(pid, sig)
    deadline = time.monotonic() + 10
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive():
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def cmd_stop(args: argparse.Namespace) -> int:
    folder = state_dir()
    if not folder.is_dir():
        print(f"nothing running (no local server state in {folder})")
        return OK
    start = open_lock(folder, START_LOCK)
    try:
        fcntl.flock(start, fcntl.LOCK_EX)  # no run starts or finds the server meanwhile
        if _in_use(folder) and not args.force:
            print("aeval server stop: a run is using the local Prefect server; let it end, or "
                  "pass --force (that run then fails; `aeval run --resume` reruns the rest)",
                  file=sys.stderr)
            return EXIT_USAGE
        said = False
        if (warm := _warm_pid(folder)) is not None:
            _stop(warm, lambda: _warm_pid(folder) == warm)
            print(f"stopped the warm process (pid {warm})")
            said = True
        if (record := _server(folder)) is not None:
            _stop(record.pid, lambda: is_server_process(record))
            remove_record(folder, record.pid)
            print(f"stopped the local Prefect server (pid {record.pid}, port {record.port})")
            said = True
        if not said:
            print("nothing running")
        return OK
    finally:
        os.close(start)
