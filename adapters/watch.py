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

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

try:  # Linux only
    from inotify_simple import INotify
    from inotify_simple import flags as F
except (ImportError, OSError):  # pragma: no cover - not Linux, or inotify unavailable
    INotify = None  # type: ignore[assignment,misc]
    F = None  # type: ignore[assignment]

MAX_DIRS = 2000  # a skill with more folders is watched partly (its top ones)


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
        return self

    def _loop(self) -> None:
        assert self._inotify is not None
        while not self._stop.is_set():
            self._drain(timeout_ms=100)
        self._drain(timeout_ms=0)

    def _drain(self, timeout_ms: int) -> None:
        assert self._inotify is not None
        try:
            events = self._inotify.read(timeout=timeout_ms)
        except OSError:
            return
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
                if (rel, what) in self._used:
                    continue  # one use per file and kind: reads come in thousands
                self._used.add((rel, what))
            self.touched.append(Touch(rel or ".", what, now))

    def stop(self) -> list[Touch]:
        """Stop watching; return every change and use seen (after the events still queued)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        return self.touched
