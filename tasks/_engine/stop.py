"""Stopping a run of the command line on SIGTERM (what a CI runner sends on cancel or
timeout) or SIGINT (Ctrl-C), within a moment and leaving nothing behind.

Prefect's flow engine turns SIGTERM into an exception in the main thread; the flow run then
waited for every running case chain (their commands run in sessions of their own, so the
signal never reached them) and Prefect's client went on talking to a server that was
already stopped. Instead, once `stop_on_signals` is called (by the command line only: a
served deployment keeps Prefect's own cancellation), the first signal:

- kills the process group of every command a case is running, and of every one that would
  start (`aeval.isolation.shell.stop_commands`; a sandbox's PID namespace takes the rest);
- records the run as ``cancelled`` in run.json with the case runs that did not finish (no
  grading.json): ``aeval run --resume RUN`` runs exactly those;
- stops the embedded Prefect server of this invocation (a reused local server stays, for its
  idle timer) and exits at once with 128 + the signal (130, 143), starting nothing more.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from aeval.artifacts import RunManifest
from aeval.isolation.shell import stop_commands
from aeval.run.store import read_model, write_model

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_armed = False
_run: tuple[Path, Callable[[], list[str]]] | None = None


def stop_on_signals() -> None:
    """Stop this process's runs on SIGTERM and SIGINT (main thread of the command line)."""
    global _armed
    _armed = True
    _install()


def _install() -> None:
    for sig in SIGNALS:
        with contextlib.suppress(ValueError):  # not the main thread
            signal.signal(sig, _stop)


def watch_run(manifest: Path, unfinished: Callable[[], list[str]]) -> None:
    """The running run's run.json and its unfinished case runs, recorded if a signal stops
    it; and the handler put back where Prefect's flow engine replaced it (a no-op unless
    `stop_on_signals` was called)."""
    global _run
    if not _armed:
        return
    _run = (manifest, unfinished)
    _install()


def _record_cancelled(signum: int) -> None:
    if _run is None:
        return
    path, unfinished = _run
    with contextlib.suppress(Exception):
        manifest = read_model(path, RunManifest)
        manifest.status = "cancelled"
        manifest.finished_at = datetime.now(UTC)
        manifest.cancelled = unfinished()
        manifest.cancelled_by = signal.Signals(signum).name
        write_model(path, manifest)


def _stop(signum: int, _frame) -> None:
    stop_commands()
    _record_cancelled(signum)
    name = signal.Signals(signum).name
    with contextlib.suppress(Exception):
        print(f"\naeval: stopped by {name}"
              + (f"; its unfinished cases are recorded as cancelled: `aeval run --resume "
                 f"{_run[0].parent.name}` runs them" if _run else ""),
              file=sys.stderr, flush=True)
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        from aeval.tasks._engine.servers import embedded

        server = embedded._server
        if isinstance(server, embedded.EmbeddedServer):
            server.stop()
    os._exit(128 + signum)
