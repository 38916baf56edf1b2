"""A watch on the skill copy while the runtime works (Linux inotify, via inotify_simple).

The manifest diff (Δ) compares the copy before and after the run; an agent that edits a skill
file, uses it, and puts the original back leaves Δ empty. The watch sees the edit as it
happens: every entry of the copy that was written, created, deleted, moved or had its
attributes changed, with the time it happened (so the edit can be tied to the tool call that
was running then). Where inotify is not available the watch reports that, and Δ alone
stands.

The watch also sees **uses** of the copy, for resource coverage: a file opened (``IN_OPEN``,
an exec included: the kernel opens the program, the interpreter opens its script) or read
(``IN_ACCESS``) by any process, the CLI runtimes' own tools too, is recorded once as
``opened`` / ``accessed``. Opens are not edits: Δ and the restored-edit check use only
`CHANGES`. Folders listed are not recorded.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

try:  # Linux only
    from inotify_simple import INotify
    from inotify_simple import flags as F
except (ImportError, OSError):  # pragma: no cover - not Linux, or inotify unavailable
    INotify = None  # type: ignore[assignment,misc]
    F = None  # type: ignore[assignment]

MAX_DIRS = 2000  # a skill with more folders is watched partly (its top ones)
_ACTIVE: dict[Path, SkillWatch] = {}  # resolved root -> the watch running on it
_ACTIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Touch:
    """One change the watch saw: a path relative to the skill root, what, and when
    (``time.monotonic()``)."""

    path: str
    what: str  # written | attributes | created | deleted | moved | opened | accessed
    at: float


CHANGES = frozenset({"written", "attributes", "created", "deleted", "moved"})
USES = frozenset({"opened", "accessed"})


class SkillWatch:
    """Watch ``root`` (recursively) from ``start()`` to ``stop()``; ``touched`` lists what
    changed (and what was used, once per path and kind), in the order seen."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.touched: list[Touch] = []
        self.problem: str | None = None
        self._wds: dict[int, Path] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._inotify = None
        self._used: set[tuple[str, str]] = set()
        self._lock = threading.Lock()  # one reader of the inotify queue at a time
        self._quiet = False

    def _add(self, d: Path) -> None:
        if len(self._wds) >= MAX_DIRS or self._inotify is None:
            return
        mask = (F.MODIFY | F.ATTRIB | F.CREATE | F.DELETE | F.MOVED_FROM | F.MOVED_TO
                | F.DELETE_SELF | F.OPEN | F.ACCESS | F.DONT_FOLLOW | F.ONLYDIR)
        try:
            self._wds[self._inotify.add_watch(str(d), mask)] = d
        except OSError:
            return

    def start(self) -> SkillWatch:
        if INotify is None:
            self.problem = "inotify is not available here: Δ alone (a reverted edit is unseen)"
            return self
        try:
            self._inotify = INotify()
        except OSError as exc:
            self.problem = f"inotify: {exc}"
            return self
        self._add(self.root)
        for d, dirs, _ in os.walk(self.root, followlinks=False):
            for name in dirs:
                self._add(Path(d) / name)
        self._thread = threading.Thread(target=self._loop, name="aeval-skill-watch",
                                        daemon=True)
        self._thread.start()
        with _ACTIVE_LOCK:
            _ACTIVE[self.root.resolve()] = self
        return self

    @contextlib.contextmanager
    def quiet_uses(self) -> Iterator[None]:
        """aeval reading the copy itself (a tool's before/after manifest): the opens it makes
        are not the agent's uses. What was queued before is taken first; changes made inside
        are still recorded."""
        if self._inotify is None:
            yield
            return
        self._drain(timeout_ms=0)
        self._quiet = True
        try:
            yield
        finally:
            self._drain(timeout_ms=0)  # inotify queues events at the syscall: all are here
            self._quiet = False

    def _loop(self) -> None:
        assert self._inotify is not None
        poller = select.poll()
        poller.register(self._inotify.fileno(), select.POLLIN)
        while not self._stop.is_set():
            if poller.poll(100):  # wait unlocked: `quiet_uses` must not wait on it
                self._drain(timeout_ms=0)
        self._drain(timeout_ms=0)

    def _drain(self, timeout_ms: int) -> None:
        with self._lock:
            if self._inotify is None:
                return
            try:
                events = self._inotify.read(timeout=timeout_ms)
            except OSError:
                return
            self._record(events)

    def _record(self, events: list) -> None:
        now = time.monotonic()
        for ev in events:
            if ev.mask & F.Q_OVERFLOW:
                self.problem = "the watch's event queue overflowed: some uses and changes " \
                               "were not seen (Δ still stands)"
                continue
            base = self._wds.get(ev.wd)
            if base is None or (ev.mask & F.IGNORED):
                continue
            path = base / ev.name if ev.name else base
            if ev.mask & F.ISDIR and ev.mask & (F.CREATE | F.MOVED_TO):
                self._add(path)  # a new folder: watch it too
            use = ev.mask & (F.OPEN | F.ACCESS) and not ev.mask & (
                F.MODIFY | F.ATTRIB | F.CREATE | F.DELETE | F.DELETE_SELF | F.MOVED_FROM
                | F.MOVED_TO)
            if use and ev.mask & F.ISDIR:
                continue  # a folder listed: not a use of a file
            what = ("opened" if use and ev.mask & F.OPEN else "accessed" if use
                    else "written" if ev.mask & F.MODIFY else "attributes" if ev.mask & F.ATTRIB
                    else "created" if ev.mask & F.CREATE else "deleted" if ev.mask & (
                        F.DELETE | F.DELETE_SELF) else "moved")
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                continue
            if use:
                if self._quiet or (rel, what) in self._used:
                    continue  # one use per file and kind: reads come in thousands
                self._used.add((rel, what))
            self.touched.append(Touch(rel or ".", what, now))

    def stop(self) -> list[Touch]:
        """Stop watching; return every change and use seen (after the events still queued)."""
        with _ACTIVE_LOCK:
            if _ACTIVE.get(self.root.resolve()) is self:
                del _ACTIVE[self.root.resolve()]
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
        with self._lock:
            if self._inotify is not None:
                self._inotify.close()
                self._inotify = None
        return self.touched


@contextlib.contextmanager
def quiet_uses(root: Path) -> Iterator[None]:
    """`SkillWatch.quiet_uses` of the watch running on ``root``, if any (a tool of the
    builtin runtime hashing the skill copy around a command)."""
    with _ACTIVE_LOCK:
        watch = _ACTIVE.get(Path(root).resolve())
    if watch is None:
        yield
    else:
        with watch.quiet_uses():
            yield
