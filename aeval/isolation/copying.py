"""The copies aeval makes of a skill's paths: the skill COPY and the case `files`.

aeval runs unsandboxed (often as root in CI), so a copy that followed a link would pull in
whatever aeval's user can read: a case file that is a symlink to the auth record or to the
run store, a fixtures folder that is a link to a folder holding a socket. Every copy here is
made through folder descriptors, as `aeval.isolation.tree` reads an attempt: the skill folder is
opened by path (it is trusted: examine resolved it), every entry below with ``lstat`` and
``O_NOFOLLOW``, every file checked to be the regular file that was listed; the destination
is made beneath the attempt root the same way.

What is copied:

- A file, with its mode and times; a folder, with everything in it.
- A symlink is copied **as a link** when its target, resolved from the link's own folder
  (links on the way followed only while they stay inside), stays inside the skill folder: it
  then points inside the copy as well. A target that leaves the skill folder, an absolute
  target (it never points into a copy): refused. A dangling link, or a loop, is kept (it
  resolves nowhere, in the copy as here).
- A socket, FIFO or device: refused.
- A `files` entry that is itself a link, or is reached through one, is copied as what it
  resolves to inside the skill folder (as it was before: a case file is content).
- Bounds: `aeval.isolation.tree.MAX_DEPTH` levels and `aeval.isolation.tree.MAX_ENTRIES` entries,
the bounds of
  every walk of a copy. A copy past them is refused: the walks could not see all of it, so
  Δ could not vouch for it.

What is left out of the skill copy (``left_out``, ``skip_names``): in a git work tree, only
the untracked entries git's own ignore rules exclude and untracked `UNTRACKED_JUNK`; every
tracked file is copied (a shipped ``__pycache__/*.pyc`` runs as shipped). Outside git,
entries named in `UNTRACKED_JUNK`.

The same code checks (no destination: examine, before anything runs, where a problem makes
the skill `invalid`) and copies (install), so the two cannot disagree.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from aeval.isolation.tree import MAX_DEPTH, MAX_ENTRIES

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_PROBLEMS = 20  # problem lines of one copy; the rest counted
UNTRACKED_JUNK = frozenset({"__pycache__", ".git", ".DS_Store", "node_modules"})
"""Caches and installs a working tree holds but a skill does not ship, while git does not
track them: left out of the skill copy (tracked, they are copied like any file)."""
_KINDS = ((stat.S_ISSOCK, "a socket"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def kind_of(mode: int) -> str:
    """``a socket``, ``a FIFO``... for an entry that is neither file, folder nor link."""
    return next((name for test, name in _KINDS if test(mode)), "not a file or folder")


def text_path(rel: str) -> str:
    """``rel`` as `copy_entry`'s ``left_out`` holds it (a folder with a trailing ``/``): a name
    that is not UTF-8 has its odd bytes written ``\\xff``, so the set is plain JSON text."""
    try:
        rel.encode("utf-8")
        return rel
    except UnicodeEncodeError:
        return os.fsencode(rel).decode("utf-8", "backslashreplace")


def is_left_out(rel: str, left_out: frozenset[str]) -> bool:
    """Whether the entry ``rel`` (relative to the skill folder), or a folder above it, is in
    ``left_out``."""
    if not left_out:
        return False
    key = text_path(rel)
    parts = key.split("/")
    return key in left_out or any("/".join(parts[:i]) + "/" in left_out
                                  for i in range(1, len(parts) + 1))


def resolve_inside(root_fd: int, rel: str) -> tuple[str | None, str, bool]:
    """``rel`` resolved inside the folder ``root_fd`` the way the kernel would, following a
    link only while it stays inside: (canonical relative path, "", missing) or (None, why it
    leaves, False). ``missing``: a component does not exist (the rest is taken lexically: a
    ``..`` there that climbs out still leaves)."""
    if rel.startswith("/"):
        return None, "an absolute path (never inside a copy of the skill)", False
    todo = [p for p in rel.split("/") if p and p != "."]
    done: list[str] = []
    stack = [os.dup(root_fd)]
    links, missing = 0, False
    try:
        while todo:
            part = todo.pop(0)
            if part == "..":
                if not done:
                    return None, "which leads out of the skill folder", False
                done.pop()
                if len(stack) - 1 > len(done):
                    os.close(stack.pop())
                continue
            if missing:
                done.append(part)
                continue
            try:
                st = os.stat(part, dir_fd=stack[-1], follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                missing = True
                done.append(part)
                continue
            if stat.S_ISLNK(st.st_mode):
                links += 1
                target = os.readlink(part, dir_fd=stack[-1])
                if links > 40:  # a loop: resolves nowhere, like a dangling link
                    return "/".join([*done, part]), "", True
                if target.startswith("/"):
                    return None, "an absolute path (never inside a copy of the skill)", False
                todo = [p for p in target.split("/") if p and p != "."] + todo
                continue
            done.append(part)
            if stat.S_ISDIR(st.st_mode):
                stack.append(os.open(part, _DIR, dir_fd=stack[-1]))
            elif todo:
                missing = True  # a file with more after it: the kernel says ENOTDIR
        return "/".join(done) or ".", "", missing
    finally:
        for fd in stack:
            os.close(fd)


class _Full(Exception):
    """The entry bound was reached: the copy stops."""


@dataclass
class _Run:
    root_fd: int  # the skill folder
    limit: int
    skip_names: frozenset[str]
    left_out: frozenset[str] = frozenset()
    problems: list[tuple[str, str]] = field(default_factory=list)
    more: int = 0
    entries: int = 0

    def refuse(self, where: str, what: str) -> None:
        if len(where) > 160:  # a path 256 folders deep: its ends say where it is
            where = f"{where[:80]}...{where[-60:]}"
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append((where, what))
        else:
            self.more += 1


def _copy_bytes(src: int, dst: int) -> None:
    try:
        while os.sendfile(dst, src, None, 1 << 24):
            pass
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
        os.lseek(src, 0, os.SEEK_SET)
        os.lseek(dst, 0, os.SEEK_SET)
        os.ftruncate(dst, 0)
        while chunk := os.read(src, 1 << 20):
            os.write(dst, chunk)


def _file(run: _Run, src_dir: int, name: str, st: os.stat_result, dst_dir: int | None,
          dst_name: str, where: str) -> None:
    if dst_dir is None:
        return
    fd = os.open(name, _READ, dir_fd=src_dir)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev):
            run.refuse(where, "changed while it was copied; not copied")
            return
        os.set_blocking(fd, True)
        try:
            out = os.open(dst_name, _WRITE, 0o600, dir_fd=dst_dir)
        except OSError as exc:
            run.refuse(where, f"cannot be written in the copy ({exc.strerror}: a link copied "
                              "before is in its place?)")
            return
        try:
            _copy_bytes(fd, out)
            os.fchmod(out, stat.S_IMODE(st.st_mode))
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _link(run: _Run, src_dir: int, name: str, folder: str, dst_dir: int | None,
          dst_name: str, where: str) -> None:
    target = os.readlink(name, dir_fd=src_dir)
    # resolved from the link's own folder (an absolute target stays absolute)
    to, why, _ = resolve_inside(run.root_fd, target if target.startswith("/") or not folder
                                else f"{folder}/{target}")
    if to is None:
        run.refuse(where, f"is a symlink to {target}, {why}: not copied, and never "
                          "followed (a skill is copied alone)")
        return
    if dst_dir is not None:
        os.symlink(target, dst_name, dir_fd=dst_dir)


@dataclass
class _Level:
    """One open folder of the walk: its entries still to copy, and where they go."""

    src: int  # the folder in the skill (closed when the level ends)
    dst: int | None  # its copy (None: only check)
    st: os.stat_result  # the folder's mode and times, set on the copy last
    folder: str  # canonical path in the skill ("" at the top)
    shown: str  # as problems name it
    depth: int
    names: list[str]  # the entries still to copy, last first


def _open_level(run: _Run, child: int, st: os.stat_result, dst: int | None, dst_name: str,
                folder: str, shown: str, depth: int) -> _Level:
    """The open folder ``child`` (closed by `_close_level`) as ``dst_name`` in ``dst``."""
    out = None
    try:
        if dst is not None:
            with contextlib.suppress(FileExistsError):
                os.mkdir(dst_name, 0o700, dir_fd=dst)
            out = os.open(dst_name, _DIR, dir_fd=dst)
        try:
            names = sorted(os.listdir(child), reverse=True)
        except OSError as exc:
            run.refuse(shown or ".", f"cannot be listed: {exc.strerror}")
            names = []
    except BaseException:
        os.close(child)
        raise
    return _Level(child, out, st, folder, shown, depth,
                  [n for n in names if n not in run.skip_names and not is_left_out(
                      f"{folder}/{n}" if folder else n, run.left_out)])


def _close_level(level: _Level, finished: bool) -> None:
    """Close a level's descriptors; a finished copy gets its folder's mode and times."""
    try:
        if finished and level.dst is not None:
            os.fchmod(level.dst, stat.S_IMODE(level.st.st_mode))
            os.utime(level.dst, ns=(level.st.st_atime_ns, level.st.st_mtime_ns))
    finally:
        os.close(level.src)
        if level.dst is not None:
            os.close(level.dst)


def _copy_folder(run: _Run, child: int, st: os.stat_result, dst: int | None, dst_name: str,
                 folder: str, where: str, depth: int) -> None:
    """Copy the open folder ``child`` (closed here) as ``dst_name`` in ``dst`` (None: only
    check it), every folder's mode and times after its entries.

    The walk keeps its own stack of open folders rather than recursing: a tree
    ``MAX_DEPTH`` deep costs no Python frames, whatever the caller's stack already holds."""
    stack = [_open_level(run, child, st, dst, dst_name, folder, where, depth)]
    try:
        while stack:
            level = stack[-1]
            if not level.names:
                _close_level(stack.pop(), True)
                continue
            name = level.names.pop()
            where = f"{level.shown}/{name}" if level.shown else name
            run.entries += 1
            if run.entries > run.limit:
                run.refuse(level.shown or ".", f"has more than {run.limit} entries: past the "
                                               "bound of aeval's walks, so Δ could not cover "
                                               "the copy")
                raise _Full
            try:
                deeper = _entry(run, level, name, where)
            except OSError as exc:
                run.refuse(where, f"cannot be copied: {exc.strerror or exc}")
                continue
            if deeper is not None:
                stack.append(deeper)
    finally:
        while stack:
            _close_level(stack.pop(), False)


def _entry(run: _Run, level: _Level, name: str, where: str) -> _Level | None:
    """Copy one entry of ``level``; a folder is returned opened, for the walk to enter."""
    src, dst, folder = level.src, level.dst, level.folder
    st = os.stat(name, dir_fd=src, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        _link(run, src, name, folder, dst, name, where)
    elif stat.S_ISREG(st.st_mode):
        _file(run, src, name, st, dst, name, where)
    elif not stat.S_ISDIR(st.st_mode):
        run.refuse(where, f"is {kind_of(st.st_mode)}: only files, folders and links inside "
                          "the skill folder are copied")
    elif level.depth + 1 >= MAX_DEPTH:
        run.refuse(where, f"is {MAX_DEPTH} folders deep: past the bound of aeval's walks, so Δ "
                          "could not cover the copy")
    else:
        return _open_level(run, os.open(name, _DIR, dir_fd=src), st, dst, name,
                           f"{folder}/{name}" if folder else name, where, level.depth + 1)
    return None


def skill_copy_rule(left_out: list[str] | None, withheld: tuple[str, ...] = ()) -> dict:
    """`copy_entry`'s arguments for a skill copy: ``left_out`` as `Skill.left_out` holds it
    (None: not in a git work tree, so nothing is known to be tracked); ``withheld``: paths
    relative to the skill kept out of the copy whatever git says (the contract, in an
    attempt's workspace)."""
    if left_out is None:
        return {"skip_names": UNTRACKED_JUNK, "left_out": frozenset(withheld)}
    return {"skip_names": frozenset({".git"}), "left_out": frozenset([*left_out, *withheld])}


def _dest_folder(dest: Path, trusted: Path) -> int:
    """A descriptor of ``dest``'s parent, made beneath ``trusted`` without following a link."""
    fd = os.open(trusted, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in dest.parent.relative_to(trusted).parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            nxt = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def copy_entry(skill: Path, rel: str, dest: Path | None = None, trusted: Path | None = None,
               *, skip_names: frozenset[str] = frozenset(), depth: int = 0,
               limit: int = MAX_ENTRIES, left_out: frozenset[str] = frozenset()
               ) -> list[tuple[str, str]]:
    """Copy the entry ``rel`` of the skill folder ``skill`` ("." for the whole folder) to
    ``dest``, made beneath ``trusted`` (the attempt root); without ``dest``, only check.
    Returns the problems (path relative to the skill folder, what); with any, the
    copy is incomplete and must not be used. ``depth``: folders above ``dest`` in the folder
    its walks start from; ``skip_names``: entries not copied at all, by name; ``left_out``:
    entries not copied, by path (`is_left_out`)."""
    run = _Run(os.open(skill, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), limit, skip_names,
               left_out)
    shown = rel.strip("/") or "."
    try:
        to, why, missing = resolve_inside(run.root_fd, rel)
        if to is None:
            return [(shown, f"resolves through a symlink, {why}: not copied, and never "
                            "followed")]
        if missing:
            return [(shown, "does not exist in the skill folder")]
        parent, _, name = to.rpartition("/")
        src_parent = os.dup(run.root_fd)
        for part in [p for p in parent.split("/") if p] if to != "." else []:
            nxt = os.open(part, _DIR, dir_fd=src_parent)
            os.close(src_parent)
            src_parent = nxt
        try:
            dst_parent = None if dest is None else _dest_folder(dest, Path(trusted or
                                                                          dest.parent))
            try:
                _top(run, src_parent, "" if to == "." else name, to, shown, dst_parent,
                     dest.name if dest else "", depth)
            finally:
                if dst_parent is not None:
                    os.close(dst_parent)
        finally:
            os.close(src_parent)
    except _Full:
        pass
    finally:
        os.close(run.root_fd)
    return run.problems + ([(shown, f"... and {run.more} more")] if run.more else [])


def _top(run: _Run, src_parent: int, name: str, to: str, shown: str, dst_parent: int | None,
         dst_name: str, depth: int) -> None:
    """The entry ``name`` of ``src_parent`` (``""``: that folder itself) as ``dst_name``."""
    st = os.stat(name, dir_fd=src_parent, follow_symlinks=False) if name else \
        os.fstat(src_parent)
    if stat.S_ISREG(st.st_mode):
        _file(run, src_parent, name, st, dst_parent, dst_name, shown)
        return
    if not stat.S_ISDIR(st.st_mode):
        run.refuse(shown, f"is {kind_of(st.st_mode)}: only files, folders and links inside the "
                          "skill folder are copied")
        return
    child = os.open(name, _DIR, dir_fd=src_parent) if name else os.dup(src_parent)
    _copy_folder(run, child, st, dst_parent, dst_name, "" if to == "." else to,
                 "" if shown == "." else shown, depth)
