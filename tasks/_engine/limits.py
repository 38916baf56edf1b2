"""Throttling case chains by runtime in aeval's process, not as a server-side slot per case.

A user bounds a runtime's chains with a Prefect concurrency limit (``prefect
concurrency-limit create runtime:<name> N``); aeval reads it once per run
(``runtime_limits``) and holds the slots in the process that runs the chain (``throttle``;
a Dask worker has its own)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

RUNTIME_LIMIT = "tag:runtime:{}"
"""The Prefect concurrency limit a user may have set on a runtime's case chains
(``prefect concurrency-limit create runtime:<name> N`` makes the v2 limit of this name)."""


def runtime_limits(runtimes: list[str]) -> dict[str, int]:
    """The case chains of each runtime allowed at once in one process, from the Prefect
    concurrency limit ``runtime:<name>`` when the server has an active one (read once per run,
    one request per runtime); runtimes without one are bounded by the task runner alone.

    The chains carry no tag: Prefect takes a tag's slot from the server before every tagged
    task run starts (``POST /v2/concurrency_limits/increment-with-lease``, a SQLite write
    transaction even when no limit exists, then cached as "no limit" for 5 s per process),
    and that one request, which every chain queued on, was the one a busy server refused
    (``ConcurrencySlotAcquisitionError: 503``, exit 4). ``throttle`` bounds them in
    the process instead."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    limits: dict[str, int] = {}
    with get_client(sync_client=True) as client:
        for name in dict.fromkeys(runtimes):
            try:
                limit = client.read_global_concurrency_limit_by_name(RUNTIME_LIMIT.format(name))
            except ObjectNotFound:
                continue
            if limit.active:
                limits[name] = max(1, int(limit.limit))
    return limits


_throttles: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_throttles_lock = threading.Lock()


@contextlib.contextmanager
def throttle(runtime: str, limit: int | None) -> Iterator[None]:
    """Hold one of ``limit`` slots of ``runtime`` in this process (a Dask worker has its own),
    waiting for one; nothing to hold when ``limit`` is None."""
    if limit is None:
        yield
        return
    with _throttles_lock:
        slots = _throttles.setdefault((runtime, limit), threading.BoundedSemaphore(limit))
    with slots:
        yield
