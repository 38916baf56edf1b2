"""Python's startup hooks in the attempt's user site: a change to the skill's execution.

Inside the sandbox, the toolchain's virtual environment includes the system site-packages,
so Python's *user site* is on, and ``PYTHONUSERBASE`` is ``$HOME/.local``: the attempt's
private HOME, where a ``pip install`` lands (the toolchain's own site-packages is read-only).
At every start, before any code of the skill, Python runs what the user site holds: the
``import`` lines of each ``.pth`` file, then ``sitecustomize`` and ``usercustomize`` (a
module or package, the first found on the path, which the user site is on). An attempt that
writes ``usercustomize.py`` there replaces a module of the skill in every later Python
process without touching the skill copy.

The user site cannot simply be made read-only or switched off: installs land there (a
case's ``setup`` installs its packages there, and their ``.pth`` files, editable installs
among them, must keep working). So its hooks are part of Δ: every hook entry at the top of
each user site (``~/.local/lib/python*/site-packages``) is compared before (after setup and
preflight) and after the run, with its identity (a rewrite shows even when the bytes are put
back), and the toolchain Python's user site, made before anything runs, is watched while
the runtime works (a hook written, used and removed still shows). A folder on the way that
is not a real folder (a symlink put in its place) is a change too. A package the agent
installs during the run that ships a ``.pth`` counts as well: it runs at every start
(install it in ``setup``).

Read from aeval's process beneath the attempt root, never through a symlink
(`aeval.isolation.tree`).
"""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

from aeval.isolation.tree import HashBudget, NotBeneath, describe, identity, open_folder, read_path
from aeval.isolation.workspace import FileChange

HOOK_MODULES = ("sitecustomize", "usercustomize")
MAX_LISTED = 100_000  # entries of one site folder looked at
MAX_SHOWN = 4000  # bytes of a hook's text shown in Δ
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_VERSION = re.compile(r"python\d+\.\d+t?")


def is_hook(name: str) -> bool:
    """An entry Python runs at startup from the top of a site folder."""
    return name.endswith(".pth") or name.split(".", 1)[0] in HOOK_MODULES


def user_site(home: Path) -> Path:
    """The user site of the toolchain's Python (aeval's interpreter) under ``home``."""
    return (Path(home) / ".local" / "lib" / f"python{sys.version_info.major}."
            f"{sys.version_info.minor}" / "site-packages")


def shown(home: Path, path: Path) -> str:
    """``path`` under ``home`` as Δ shows it: ``~/.local/...``."""
    return "~/" + Path(path).relative_to(home).as_posix()


def _value(dir_fd: int, name: str, st: os.stat_result) -> str:
    ino, ctime, mtime = identity(st)
    return f"{describe(dir_fd, name, st, HashBudget())} @{ino}:{ctime}:{mtime}"


def _sub(fd: int, name: str, key: str, out: dict[str, str]) -> int | None:
    """The folder ``name`` of ``fd`` opened without following; None (and ``out[key]`` set
    when it is something else than a folder) when it is not one."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        out[key] = _value(fd, name, st)
        return None
    return os.open(name, _DIR, dir_fd=fd)


def hook_state(home: Path, trusted: Path) -> dict[str, str]:
    """``~/...`` -> value and identity of every startup hook at the top of each user site
    under ``home``, and of a folder on the way that is not a real folder."""
    out: dict[str, str] = {}
    try:
        top = open_folder(Path(home), trusted)
    except NotBeneath:  # HOME itself swapped for a symlink: its user site is elsewhere
        return {"~": "symlink or file in the place of HOME"}
    except OSError:
        return out
    fds = [top]
    try:
        for part, key in ((".local", "~/.local"), ("lib", "~/.local/lib")):
            nxt = _sub(fds[-1], part, key, out)
            if nxt is None:
                return out
            fds.append(nxt)
        with os.scandir(fds[-1]) as it:
            versions = sorted(e.name for e in it if _VERSION.fullmatch(e.name))[:64]
        for ver in versions:
            base = f"~/.local/lib/{ver}"
            vfd = _sub(fds[-1], ver, base, out)
            if vfd is None:
                continue
            try:
                sfd = _sub(vfd, "site-packages", f"{base}/site-packages", out)
            finally:
                os.close(vfd)
            if sfd is None:
                continue
            try:
                _hooks(sfd, f"{base}/site-packages", out)
            finally:
                os.close(sfd)
    finally:
        for fd in fds:
            os.close(fd)
    return out


def _hooks(fd: int, base: str, out: dict[str, str]) -> None:
    with os.scandir(fd) as it:
        for n, entry in enumerate(it):
            if n >= MAX_LISTED:
                out[f"{base}/"] = f"more than {MAX_LISTED} entries: not read whole"
                return
            if is_hook(entry.name):
                try:
                    st = os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                out[f"{base}/{entry.name}"] = _value(fd, entry.name, st)


_WHY = ("Python runs it at every start, before the skill's code: the skill did not run as "
        "shipped")


def _shown_text(home: Path, trusted: Path, key: str) -> str:
    """The hook's text now, as a patch adding it (so Δ shows what it does); "" when it is
    not a text file."""
    data = read_path(Path(home) / key.removeprefix("~/"), trusted, MAX_SHOWN)
    if not data or b"\0" in data:
        return ""
    text = data[:MAX_SHOWN].decode("utf-8", "replace")
    cut = ["+... (cut)\n"] if len(data) > MAX_SHOWN else []
    return "".join([f"--- /dev/null\n+++ {key}\n",
                    *(f"+{line}\n" for line in text.splitlines()), *cut])


def hook_changes(before: dict[str, str], after: dict[str, str],
                 touches: list[tuple[str, str, float]], site: str,
                 home: Path | None = None, trusted: Path | None = None) -> list[FileChange]:
    """Δ entries for the startup hooks: what differs between ``before`` and ``after``
    (`hook_state`), then what the watch on the user site ``site`` (``~/...``) saw change
    (``touches``: entry name, what, seconds after the start), each path once, timed by the
    watch where it saw it. With ``home`` (and ``trusted``, the attempt root), a hook still
    there shows its text."""
    first: dict[str, float] = {}
    for name, _, at in touches:
        key = site if name == "." else f"{site}/{name.split('/', 1)[0]}"
        first.setdefault(key, round(at, 3))
    out: dict[str, FileChange] = {}
    for key in sorted(set(before) | set(after)):
        if before.get(key) == after.get(key):
            continue
        change = "added" if key not in before else "deleted" if key not in after else \
            "modified"
        kind = (after.get(key) or before[key]).split(" ", 1)[0]
        what = ("a startup hook of the attempt's Python user site" if is_hook(key.rsplit(
            "/", 1)[-1]) else "a folder of the attempt's Python user site, replaced")
        diff = _shown_text(home, trusted, key) if home is not None and trusted is not None \
            and key in after and kind == "file" else ""
        out[key] = FileChange(path=key, change=change, kind=kind if kind in (
            "file", "dir", "symlink") else "other", diff=diff, at_s=first.get(key),
            detail=f"{what}, {change} while the runtime ran: {_WHY}")
    for name, what, at in touches:
        key = site if name == "." else f"{site}/{name.split('/', 1)[0]}"
        if key in out or (name != "." and not is_hook(name.split("/", 1)[0])):
            continue
        detail = (f"the attempt's Python user site was {what} while the runtime ran"
                  if name == "." else f"a startup hook of the attempt's Python user site, "
                                      f"{what} while the runtime ran (and put back or "
                                      f"removed): {_WHY}")
        out[key] = FileChange(path=key, change="modified" if key in before else "added",
                              kind="dir" if name == "." else "file", detail=detail,
                              at_s=round(at, 3))
    return list(out.values())
