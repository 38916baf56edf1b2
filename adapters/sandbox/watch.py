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

**Coverage.** inotify needs one watch per folder. Folders are added top-down, breadth first,
up to `max_dirs` (``AEVAL_WATCH_MAX_DIRS``, default 20,000) or until the kernel's
``fs.inotify.max_user_watches`` runs out; past that ``coverage`` is ``partial`` (recorded in
attempt.json as ``watched``), never claimed complete. The rest is covered by the manifest:
its file identities (`aeval.isolation.tree`: ctime and inode) show a file rewritten and put back, or
a folder renamed away and back, in any folder, watched or not; only the time of such a change
is then less precise.

**The path above.** With ``above`` (the attempt root), every folder from it down to the
copy's parent is watched for its one entry on the way: the copy, or a folder above it,
renamed, moved aside or removed (and perhaps put back) is a ``moved`` touch of ``.``. Under
bubblewrap the copy itself is also a mount point, which cannot be renamed at all.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

try:  # Linux only
    from inotify_simple import INotify
    from inotify_simple import flags as F
except (ImportError, OSError):  # pragma: no cover - not Linux, or inotify unavailable
    INotify = None  # type: ignore[assignment,misc]
    F = None  # type: ignore[assignment]

MAX_DIRS = 20_000  # a skill with more folders is watched partly (its top ones)


def max_dirs() -> int:
    """The folder limit of a watch: ``AEVAL_WATCH_MAX_DIRS`` or `MAX_DIRS`."""
    try:
        return max(int(os.environ.get("AEVAL_WATCH_MAX_DIRS", MAX_DIRS)), 1)
    except ValueError:
        return MAX_DIRS
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

    def __init__(self, root: Path, above: Path | None = None, limit: int | None = None,
                 recursive: bool = True):
        """``above``: the folder from which the path down to ``root`` is watched for moves;
        ``limit``: folders watched at most (default `max_dirs`); ``recursive=False``: only
        ``root``'s own entries (a site folder's startup hooks, not every package in it)."""
        self.root = Path(root)
        self.recursive = recursive
        self.above = Path(above) if above is not None else None
        self.limit = limit or max_dirs()
        self.touched: list[Touch] = []
        self.problem: str | None = None
        self.unwatched = 0  # folders of the copy left unwatched (the limit was reached)
        self._wds: dict[int, Path] = {}
        self._chain: dict[int, str] = {}  # wd of a folder above root -> its entry on the way
        self._started = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._inotify = None
        self._used: set[tuple[str, str]] = set()
        self._lock = threading.Lock()  # one reader of the inotify queue at a time
        self._quiet = False

    @property
    def coverage(self) -> str:
        """``full`` (every folder of the copy watched), ``partial`` (the limit was reached:
        ``unwatched`` folders were not, or the event queue overflowed) or ``none`` (no
        watch: ``problem`` says why)."""
        if not self._started:
            return "none"
        return "partial" if self.unwatched or self.problem else "full"

    def _add(self, d: Path) -> bool:
        """Watch the folder ``d``; False when the limit (ours or the kernel's) is reached."""
        if self._inotify is None:
            return False
        if len(self._wds) >= self.limit:
            self.unwatched += 1
            return False
        mask = (F.MODIFY | F.ATTRIB | F.CREATE | F.DELETE | F.MOVED_FROM | F.MOVED_TO
                | F.DELETE_SELF | F.MOVE_SELF | F.OPEN | F.ACCESS | F.DONT_FOLLOW | F.ONLYDIR)
        try:
            self._wds[self._inotify.add_watch(str(d), mask)] = d
        except OSError as exc:
            if exc.errno == errno.ENOSPC:  # fs.inotify.max_user_watches
                self.unwatched += 1
                self.limit = len(self._wds)
                return False
        return True

    def _add_chain(self) -> None:
        """Watch each folder from ``above`` down to the copy's parent for its one entry on
        the way (renamed, moved, removed or made anew)."""
        if self.above is None or self._inotify is None:
            return
        try:
            parts = self.root.relative_to(self.above).parts
        except ValueError:
            return
        folder = self.above
        for part in parts:
            mask = (F.MOVED_FROM | F.MOVED_TO | F.DELETE | F.CREATE | F.DONT_FOLLOW
                    | F.ONLYDIR)
            with contextlib.suppress(OSError):
                self._chain[self._inotify.add_watch(str(folder), mask)] = part
            folder = folder / part

    def start(self) -> SkillWatch:
        if INotify is None:
            self.problem = "inotify is not available here: Δ alone (a reverted edit is unseen)"
            return self
        try:
            self._inotify = INotify()
        except OSError as exc:
            self.problem = f"inotify: {exc}"
            return self
        self._started = True
        self._add_chain()
        queue = deque([self.root])  # breadth first: the top folders are watched first
        while queue:
            d = queue.popleft()
            if not self._add(d):
                self.unwatched += len(queue)
                for rest in (d, *queue):  # count what is left below, never watch it
                    self.unwatched += sum(len(dirs) for _, dirs, _ in
                                          os.walk(rest, followlinks=False))
                break
            if not self.recursive:
                break
            try:
                with os.scandir(d) as it:
                    queue.extend(Path(e.path) for e in it
                                 if e.is_dir(follow_symlinks=False))
            except OSError:
                continue
        self._wake = os.pipe()  # `stop` writes a byte: the loop's poll returns at once
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
        wake_r, _ = self._wake
        poller.register(wake_r, select.POLLIN)
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
            if ev.wd in self._chain:
                if ev.name == self._chain[ev.wd] and not ev.mask & F.IGNORED:
                    self.touched.append(Touch(".", "moved", now))
                continue
            base = self._wds.get(ev.wd)
            if base is None or (ev.mask & F.IGNORED):
                continue
            if ev.mask & (F.MOVE_SELF | F.DELETE_SELF) and base == self.root:
                self.touched.append(Touch(".", "moved", now))
                continue
            if ev.mask & F.MOVE_SELF:
                continue  # a folder inside renamed: its parent's MOVED_FROM already says so
            path = base / ev.name if ev.name else base
            if ev.mask & F.ISDIR and ev.mask & (F.CREATE | F.MOVED_TO) and self.recursive:
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
            # wake the loop's poll now, so stopping does not wait for its next tick
            with contextlib.suppress(OSError):
                os.write(self._wake[1], b"x")
            self._thread.join(timeout=5)
            for fd in self._wake:
                with contextlib.suppress(OSError):
                    os.close(fd)
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
