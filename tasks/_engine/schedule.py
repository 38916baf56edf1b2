"""Scheduling a run's case chains on the task runner: a window of them submitted at a time (the
next as one is done), and each skill x runtime concluded as soon as its last chain is done,
while the other skills' cases still run.

Concluding all skills after the last case left their suggestions, aggregates and coverage
tables (~0.1-0.3 s of CPU each) between the last case and the run's report: 1 s of tail for
20 one-case skills (benchmarks/latency_workload.py), 100 conclusions on 4 workers after a
1,000-case sweep. Submitting the chains a window at a time lets a conclusion have the next
free worker instead of waiting behind every case of the run in the pool's queue (and keeps
that many futures, not all of them, waiting).

The machinery knows futures (Prefect's, or any with ``add_done_callback`` and ``result``),
not cases: the flow says what to submit, how to read a chain's result and how to conclude a
group (`windowed`, `Conclusions`). Only `chain_window` reads the running flow's task runner.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, TypeVar

from aeval.isolation.text import one_line

T = TypeVar("T")
Future = Any
"""A Prefect future, or a `concurrent.futures.Future`: ``add_done_callback`` and ``result``."""


def window_size(chains: int, pool_workers: int | None,
                dask_slots: Callable[[], int | None]) -> int:
    """How many of ``chains`` case chains to keep submitted: a thread pool's size
    (``pool_workers``, aeval's ``--concurrency``) when it has fewer; on Dask, twice the
    threads of the cluster's workers (``dask_slots``, asked only then: each finished chain's
    successor is already queued on the scheduler, and only so many pending submissions, each
    the task with its parameters and context, wait in the flow process and the scheduler
    instead of every chain of the run); every chain at once when neither is known."""
    if isinstance(pool_workers, int) and 0 < pool_workers < chains:
        return pool_workers
    slots = dask_slots() if chains > 1 else None
    if slots:
        return max(1, min(chains, 2 * slots))
    return max(1, chains)


def chain_window(chains: int) -> int:
    """`window_size` for the running flow's task runner."""
    from prefect.context import FlowRunContext

    from aeval.tasks._engine.runners import runner_slots

    ctx = FlowRunContext.get()
    runner = ctx.task_runner if ctx else None
    return window_size(chains, getattr(runner, "_max_workers", None),
                       lambda: runner_slots(runner))


def outcome(future: Future) -> object:
    """What a done ``future`` gave, or the exception it raised (a Prefect future's Failed
    state gives its data: a failing case's result is the state's data)."""
    from prefect.futures import PrefectFuture

    try:
        if isinstance(future, PrefectFuture):
            return future.result(raise_on_failure=False)
        return future.result()
    except Exception as exc:
        return exc


def failure(future: Future) -> str | None:
    """Why ``future``'s work failed (``Type: message``, one line), or None when it did not."""
    got = outcome(future)
    if not isinstance(got, BaseException):
        return None
    return one_line(f"{type(got).__name__}: {got}")[:300]


def windowed(items: Sequence[T], submit: Callable[[T], Future],
             window: int) -> Iterator[tuple[T, Future]]:
    """Submit ``items`` in order, at most ``window`` at a time (at least one), the next as
    soon as one is done; yield each item with its future as it is done (in the order they
    finish; the next is already submitted)."""
    done: queue.SimpleQueue[tuple[T, Future]] = queue.SimpleQueue()
    upcoming = iter(items)

    def start_next() -> int:
        for item in upcoming:
            submit(item).add_done_callback(lambda future, item=item: done.put((item, future)))
            return 1
        return 0

    running = sum(start_next() for _ in range(max(1, window)))
    while running:
        item, future = done.get()
        running += start_next() - 1
        yield item, future


class Conclusions:
    """Each group concluded (``conclude(index)``, which submits it) as soon as every key of it
    is `settled`, the groups whose keys were all settled before (``have``) at once; the
    conclusions that failed collected by name (``names``).

    A conclusion that is done is dropped when the next key settles: on Dask a future held
    keeps the task's submission in the scheduler and its result on a worker (~0.6 MiB per
    skill: a 1,000-skill run held them all until its last case)."""

    def __init__(self, groups: Sequence[Collection[str]], conclude: Callable[[int], Future],
                 names: Sequence[str], have: Collection[str] = ()) -> None:
        self._conclude, self._names = conclude, names
        self._missing = [set(keys) - set(have) for keys in groups]
        self._groups_of: dict[str, list[int]] = {}
        for gi, keys in enumerate(self._missing):
            for key in keys:
                self._groups_of.setdefault(key, []).append(gi)
        self._running: dict[Future, str] = {}
        self._done: queue.SimpleQueue[Future] = queue.SimpleQueue()
        self.failed: list[str] = []
        for gi, keys in enumerate(self._missing):
            if not keys:
                self._start(gi)

    def _start(self, gi: int) -> None:
        future = self._conclude(gi)
        self._running[future] = self._names[gi]
        future.add_done_callback(self._done.put)

    def _settle(self, future: Future) -> None:
        if (why := failure(future)) is not None:
            self.failed.append(f"{self._running[future]}: {why}")
        del self._running[future]

    def settled(self, key: str) -> None:
        """``key`` has its result: conclude each group it completes; drop the conclusions
        that are done."""
        for gi in self._groups_of.pop(key, ()):
            self._missing[gi].discard(key)
            if not self._missing[gi]:
                self._start(gi)
        while True:
            try:
                self._settle(self._done.get_nowait())
            except queue.Empty:
                return

    def wait(self) -> list[str]:
        """Wait for every conclusion; the ones that failed (``name: Type: message``)."""
        for future in list(self._running):
            self._settle(future)
        return self.failed
