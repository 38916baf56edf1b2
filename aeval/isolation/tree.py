"""Reading an attempt's files from aeval's own process: never through a symlink, always
within bounds.

aeval runs unsandboxed (often as root in CI) while everything inside the attempt root is
written by the attempt. So every walk, hash and read of the skill copy, the outputs and the
checked files goes through folder descriptors: the trusted folder (the attempt root, which
only aeval made) is opened by path, every component below it with ``O_NOFOLLOW`` and
``O_DIRECTORY``, every file with ``O_NOFOLLOW`` and checked to be the regular file that was
listed. A component swapped for a symlink (``workspace -> /etc``, ``.agents/skills ->`` the
hidden original) is refused, never followed.

Bounds, so an attempt cannot make aeval's own work unbounded: at most `MAX_ENTRIES` entries
per walk (20,000 empty files must not cost minutes), at most `HASH_FILE_BYTES` hashed per
file (a sparse 4 TiB file is described by its size, never read whole), and per walk at most
`HASH_TOTAL_BYTES` and `HASH_SECONDS` of hashing. What a bound cut is returned in ``cut``
(and recorded by the caller). A file left unhashed still has an identity:

**Identities.** Besides the manifest (type, mode, symlink target, content hash) each entry's
``(inode, ctime, mtime)`` is kept. ctime is set by the kernel on every write, chmod, rename or
link and cannot be set back, so a file that was edited and restored byte for byte, or a
folder renamed away and back, differs from the baseline whatever the watch saw (folders
beyond the watch limit included). These are not part of the manifest values (fingerprints of
the original skill must not change with a checkout's inode numbers).

Why identities rather than a mount per folder: binding every folder of the copy as its own
mount point would make renames impossible inside the sandbox, but bubblewrap's cost grows
with the square of the mounts. Identities cost one ``stat`` per entry, which the walk makes
anyway; the builtin runtime takes two walks per bash call, Δ two per attempt
(``benchmarks/boundary_cost.py`` measures one walk).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MAX_ENTRIES = 200_000
MAX_DEPTH = 256
HASH_FILE_BYTES = 256 << 20
HASH_TOTAL_BYTES = 2 << 30
HASH_SECONDS = 60.0
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

Identity = tuple[int, int, int]  # (inode, ctime_ns, mtime_ns)


class NotBeneath(OSError):
    """A path component below the trusted folder is a symlink or not a folder."""


def open_folder(path: Path, trusted: Path | None = None) -> int:
    """A descriptor of the folder ``path``. ``trusted`` (an ancestor aeval made) is opened by
    path; every component below it, ``path`` itself included, without following a symlink.
    Without ``trusted``, ``path`` itself is trusted (an original skill folder). Raises
    `NotBeneath` (or FileNotFoundError)."""
    path = Path(path)
    trusted = path if trusted is None else Path(trusted)
    parts = list(path.relative_to(trusted).parts)
    fd = os.open(trusted, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise NotBeneath(exc.errno, f"{part}: not a folder (a symlink or a file "
                                                "put in its place); not followed") from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(dir_fd: int, name: str, st: os.stat_result | None = None) -> int | None:
    """A read descriptor of the regular file ``name`` in ``dir_fd`` (never a symlink, a FIFO
    or a device); None when it is not one, or not the one ``st`` described."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (st is not None and (now.st_ino, now.st_dev)
                                         != (st.st_ino, st.st_dev)):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return fd


def read_file(dir_fd: int, name: str, limit: int) -> bytes | None:
    """At most ``limit + 1`` bytes of the regular file ``name`` (callers compare the length
    with ``limit`` to know it was cut); None when it is not a regular file."""
    fd = open_file(dir_fd, name)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit + 1)


def read_path(path: Path, trusted: Path, limit: int) -> bytes | None:
    """`read_file` of ``path`` resolved beneath ``trusted`` (None: missing, not a regular
    file, or reached through a symlink)."""
    path = Path(path)
    try:
        d = open_folder(path.parent, trusted)
    except OSError:
        return None
    try:
        return read_file(d, path.name, limit)
    finally:
        os.close(d)


@dataclass
class HashBudget:
    """Bytes and seconds of hashing one walk may spend."""

    total_bytes: int = HASH_TOTAL_BYTES
    seconds: float = HASH_SECONDS
    file_bytes: int = HASH_FILE_BYTES
    spent: int = 0
    deadline: float | None = None
    skipped: int = 0  # files left unhashed by this budget

    def allows(self, size: int) -> bool:
        if self.deadline is None:
            self.deadline = time.monotonic() + self.seconds
        ok = (size <= self.file_bytes and self.spent + size <= self.total_bytes
              and time.monotonic() < self.deadline)
        if ok:
            self.spent += size
        else:
            self.skipped += 1
        return ok


def sha256_fd(fd: int, limit: int | None = None) -> str:
    h = hashlib.sha256()
    left = limit
    while left is None or left > 0:
        chunk = os.read(fd, 1 << 16 if left is None else min(1 << 16, left))
        if not chunk:
            break
        h.update(chunk)
        if left is not None:
            left -= len(chunk)
    return h.hexdigest()


def describe(dir_fd: int, name: str, st: os.stat_result, budget: HashBudget) -> str:
    """One manifest value: ``file <mode> <sha256>`` (``file <mode> unhashed <size>`` past the
    hashing budget), ``dir <mode>``, ``symlink <target>`` or ``other <mode>``. Never follows
    a symlink and never opens anything but a regular file (a planted FIFO must not hang)."""
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    if stat.S_ISLNK(st.st_mode):
        return f"symlink {os.readlink(name, dir_fd=dir_fd)}"
    if stat.S_ISDIR(st.st_mode):
        return f"dir {mode}"
    if stat.S_ISREG(st.st_mode):
        if not budget.allows(st.st_size):
            return f"file {mode} unhashed {st.st_size}"
        fd = open_file(dir_fd, name, st)
        if fd is None:
            return f"file {mode} unreadable"
        try:
            return f"file {mode} {sha256_fd(fd)}"
        finally:
            os.close(fd)
    return f"other {mode}"


def walk(dir_fd: int, *, limit: int = MAX_ENTRIES, skip: frozenset[str] = frozenset(),
         skip_names: frozenset[str] = frozenset(), cut: list[str] | None = None
         ) -> Iterator[tuple[str, int, str, os.stat_result]]:
    """(relative path, parent descriptor, name, lstat) of every entry under ``dir_fd``,
    sorted, folders before their contents, symlinks never followed. Stops after ``limit``
    entries or `MAX_DEPTH` levels, saying so in ``cut``. Folders not entered (still listed):
    those at a relative path in ``skip`` and those named in ``skip_names``."""
    state = {"n": 0, "skip": skip, "names": skip_names}
    yield from _walk(dir_fd, "", 0, limit, cut if cut is not None else [], state)


def _walk(dir_fd: int, prefix: str, depth: int, limit: int, cut: list[str],
          state: dict) -> Iterator[tuple[str, int, str, os.stat_result]]:
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError:
        return
    for name in names:
        if state["n"] >= limit:
            if not any(c.startswith("entries:") for c in cut):
                cut.append(f"entries: the walk stopped after {limit} entries")
            return
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        state["n"] += 1
        rel = f"{prefix}{name}"
        yield rel, dir_fd, name, st
        if not stat.S_ISDIR(st.st_mode) or rel in state["skip"] or name in state["names"]:
            continue
        if depth + 1 >= MAX_DEPTH:
            cut.append(f"depth: {rel} is {MAX_DEPTH} folders deep; not entered")
            continue
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError:
            continue
        try:
            yield from _walk(child, f"{rel}/", depth + 1, limit, cut, state)
        finally:
            os.close(child)


@dataclass
class Tree:
    """What a walk of one folder found: manifest values, identities, and what was cut."""

    entries: dict[str, str] = field(default_factory=dict)
    ids: dict[str, Identity] = field(default_factory=dict)
    root_id: Identity | None = None  # of the folder itself; None: it could not be opened
    cut: list[str] = field(default_factory=list)


def identity(st: os.stat_result) -> Identity:
    return (st.st_ino, st.st_ctime_ns, st.st_mtime_ns)


def tree(root: Path, trusted: Path | None = None, budget: HashBudget | None = None,
         limit: int = MAX_ENTRIES) -> Tree:
    """Walk ``root`` (resolved beneath ``trusted``): `describe` and `identity` of every
    entry, by POSIX relative path. A root that is not a folder (replaced by a symlink or a
    file) gives an empty tree whose ``cut`` says why."""
    budget = budget or HashBudget()
    out = Tree()
    try:
        fd = open_folder(Path(root), trusted)
    except OSError as exc:
        out.cut.append(f"root: {exc.strerror or exc}")
        return out
    try:
        out.root_id = identity(os.fstat(fd))
        for rel, parent, name, st in walk(fd, limit=limit, cut=out.cut):
            out.entries[rel] = describe(parent, name, st, budget)
            out.ids[rel] = identity(st)
    finally:
        os.close(fd)
    if budget.skipped:
        out.cut.append(f"hashing: {budget.skipped} file(s) over the hashing bound described "
                       "by size (their identity still shows a write)")
    return out


def resolve_in_root(root_fd: int, rel: str, root_path: str = "") -> tuple[int, str] | None:
    """(descriptor of the parent folder, final name) of ``rel`` resolved inside the folder
    ``root_fd`` the way ``openat2(RESOLVE_IN_ROOT)`` would: symlinks are followed only while
    they stay inside (an absolute target is taken under ``root_path``, a ``..`` never climbs
    above the root), at most 40 of them. None when a target leaves the root, a folder on the
    way is missing, or the path is empty. The caller closes the descriptor."""
    parts = [p for p in rel.split("/") if p and p != "."]
    stack: list[int] = [os.dup(root_fd)]
    links = 0
    try:
        while parts:
            part = parts.pop(0)
            if part == "..":
                if len(stack) > 1:
                    os.close(stack.pop())
                continue
            try:
                st = os.stat(part, dir_fd=stack[-1], follow_symlinks=False)
            except FileNotFoundError:
                if parts:
                    return None
                return os.dup(stack[-1]), part  # the last one may not exist
            if stat.S_ISLNK(st.st_mode):
                links += 1
                target = os.readlink(part, dir_fd=stack[-1])
                if links > 40:
                    return None
                if target.startswith("/"):
                    if not root_path or not (target == root_path
                                             or target.startswith(root_path + "/")):
                        return None
                    target = target[len(root_path):]
                    while len(stack) > 1:
                        os.close(stack.pop())
                parts = [p for p in target.split("/") if p and p != "."] + parts
                continue
            if not parts:
                return os.dup(stack[-1]), part
            if not stat.S_ISDIR(st.st_mode):
                return None
            stack.append(os.open(part, _DIR_FLAGS, dir_fd=stack[-1]))
        return None
    except OSError:
        return None
    finally:
        for fd in stack:
            os.close(fd)


def ensure_folder(path: Path, trusted: Path) -> Path:
    """``path`` made a real folder beneath ``trusted`` (mkdir -p that never follows): a
    symlink or a file in the way, planted by the attempt's own setup in its own private
    folders, is removed first. For aeval's writes into an attempt (a runtime's config in the
    attempt's HOME) while no process of the attempt runs."""
    path, trusted = Path(path), Path(trusted)
    fd = os.open(trusted, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in path.relative_to(trusted).parts:
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    os.unlink(part, dir_fd=fd)
                    raise FileNotFoundError
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=fd)
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    return path


def write_private(path: Path, text: str, trusted: Path, mode: int = 0o644) -> Path:
    """Write ``text`` to ``path`` beneath ``trusted`` without following a symlink on the way
    or at the end (one in the way is replaced, see `ensure_folder`)."""
    path = Path(path)
    ensure_folder(path.parent, trusted)
    fd = open_folder(path.parent, trusted)
    try:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            if not stat.S_ISREG(os.stat(path.name, dir_fd=fd, follow_symlinks=False).st_mode):
                os.unlink(path.name, dir_fd=fd)
        out = os.open(path.name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                      | os.O_CLOEXEC, mode, dir_fd=fd)
        with os.fdopen(out, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(text)
    finally:
        os.close(fd)
    return path
