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
- sets the run's flow runs Cancelled through Prefect's API (its own, its parent's and the
  flow run the main thread is in with its ancestors: run, sweep, compare, uplift, triggers),
  waiting at most `CANCEL_WITHIN_S` for the server, so the UI does not show them Running or
  Crashed;
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


CANCEL_WITHIN_S = 5.0
"""How long the stop waits for Prefect's API to take the Cancelled states."""


def _flow_runs(manifest_path: Path | None) -> list[str]:
    """The flow runs this stop ends: the run's own and its parent's (a sweep's, an MR's) as
    run.json records them, and the flow run the main thread is in with its ancestors (a
    compare, uplift or triggers flow, or a run stopped before run.json was written)."""
    ids: list[str] = []
    if manifest_path is not None:
        with contextlib.suppress(Exception):
            manifest = read_model(manifest_path, RunManifest)
            ids += [i for i in (manifest.flow_run_id, manifest.parent_flow_run_id) if i]
    with contextlib.suppress(Exception):
        from prefect.context import FlowRunContext

        ctx = FlowRunContext.get()
        if ctx is not None and ctx.flow_run is not None:
            ids.append(str(ctx.flow_run.id))
    return list(dict.fromkeys(ids))


def _cancel_flow_runs(ids: list[str], why: str) -> None:
    """Set each flow run of ``ids`` and its ancestors Cancelled through Prefect's API (forced:
    a Running run can be cancelled at once), all within `CANCEL_WITHIN_S`: a server that does
    not answer leaves them as they were, never holds the stop."""
    if not ids:
        return
    import threading

    def cancel() -> None:
        from prefect import get_client
        from prefect.states import Cancelled

        with get_client(sync_client=True) as client:
            todo, seen = list(ids), set()
            while todo and len(seen) < 8:
                fid = todo.pop(0)
                if fid in seen:
                    continue
                seen.add(fid)
                with contextlib.suppress(Exception):
                    run = client.read_flow_run(fid)
                    if run.state is None or not run.state.is_final():
                        client.set_flow_run_state(fid, Cancelled(message=why), force=True)
                    if run.parent_task_run_id is not None:
                        todo.append(str(client.read_task_run(run.parent_task_run_id).flow_run_id))

    worker = threading.Thread(target=cancel, name="aeval-cancel-flow-runs", daemon=True)
    worker.start()
    worker.join(CANCEL_WITHIN_S)


def _stop(signum: int, _frame) -> None:
    stop_commands()
    _record_cancelled(signum)
    with contextlib.suppress(Exception):
        _cancel_flow_runs(_flow_runs(_run[0] if _run else None),
                          f"aeval: stopped by {signal.Signals(signum).name}")
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
