"""The reused local Prefect server (see `aeval.tasks._engine.servers.reused`): Prefect's API app
under uvicorn, as Prefect's own embedded server runs it (wrapped by
`aeval.deployments.servers.server_app`), plus a watchdog that stops it once no invocation has
used it for the idle period.

    python -m aeval.deployments.servers.prefect_server --port N --state-dir DIR --idle-s S

Started by `aeval.tasks._engine.servers.reused.attach` only, detached, with a scrubbed
environment that holds the server's auth string (``PREFECT_SERVER_API_AUTH_STRING``).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import threading
import time
from pathlib import Path

from aeval.tasks._engine.servers.reused import CLIENTS_LOCK, START_LOCK, open_lock, remove_record


def try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def watch(server, folder: Path, idle_s: float, step_s: float = 1.0) -> None:
    """Stop ``server`` once it has been idle for ``idle_s``: no invocation holding the shared
    clients lock and none finding or starting a server (the start lock). Both are taken
    exclusively while the record is removed, so no invocation can pick this server up in
    between; one that comes after starts a new server."""
    folder.mkdir(parents=True, exist_ok=True)
    start, clients = open_lock(folder, START_LOCK), open_lock(folder, CLIENTS_LOCK)
    idle_since = time.monotonic()
    while not server.should_exit:
        time.sleep(min(step_s, idle_s))
        if not try_lock(start):
            idle_since = time.monotonic()
            continue
        try:
            if not try_lock(clients):
                idle_since = time.monotonic()
                continue
            try:
                if time.monotonic() - idle_since >= idle_s:
                    remove_record(folder, os.getpid())
                    server.should_exit = True
                    return
            finally:
                fcntl.flock(clients, fcntl.LOCK_UN)
        finally:
            fcntl.flock(start, fcntl.LOCK_UN)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--idle-s", type=float, required=True)
    args = ap.parse_args(argv)
    import uvicorn

    config = uvicorn.Config("aeval.deployments.servers.server_app:create_app", factory=True,
                            host="127.0.0.1", port=args.port, log_level="error",
                            lifespan="on")
    server = uvicorn.Server(config)
    threading.Thread(target=watch, args=(server, args.state_dir, args.idle_s),
                     name="aeval-idle-watchdog", daemon=True).start()
    try:
        server.run()
    finally:
        remove_record(args.state_dir, os.getpid())


if __name__ == "__main__":
    main()
