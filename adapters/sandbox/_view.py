"""The file system a bubblewrap sandbox sees: a list of what to show, never of what to hide.

The sandbox's root is an empty tmpfs (bubblewrap's own), made read-only once everything is in
place. Into it go only:

- **the system trees** commands need, read-only: `SYSTEM_TREES` (``/usr``, ``/bin``, ``/sbin``,
  ``/lib*``; a merged-usr symlink such as ``/bin -> usr/bin`` is made again as a symlink);
- **a minimal /etc**: `ETC_NAMES` (name service files, CA certificates, alternatives, the
  dynamic loader's cache, locale and time zone), each bound read-only when the host has it,
  and a ``resolv.conf`` of aeval's own that names the user-mode network's resolver;
- a fresh ``/proc`` (the sandbox's PID namespace) whose kernel-wide files are read-only or
  hidden (`proc_view`), a minimal ``/dev``, and private tmpfs at ``/tmp`` and ``/dev/shm``;
- **the toolchain** (`aeval.adapters.sandbox._toolchain`: its folder and the base interpreter's
  prefix, read-only, where the interpreter's own site-packages shows pip alone:
  `python_view`);
- **what runs**: the install prefix of each program the command line names by absolute path
  outside the system trees (an agent CLI in ``<checkout>/.ci/node_modules``, the CLI bundled
  in a Python package) and of the interpreter its ``#!`` line names (`shown_prefixes`);
- **the attempt** (its root writable at its own path, so every path aeval hands out stays
  valid inside; further writable folders; the skill copy pinned) and **what the case
  declares** (its ``host_tools``, resolved on the host to where they live).

Nothing else of the host exists inside: not ``/root``, ``/home``, ``/var``, ``/opt``,
``/srv``, the host's ``/tmp`` or ``TMPDIR``, the run store, other attempts, aeval's venv or
its site-packages, nor anything a later service or user adds on the machine. Mount points are
made where a shown path needs them (empty folders in the read-only root): a path's parents
are visible as names, never their other contents.

Each bind is a mount, and bubblewrap's cost grows with the square of the number of mounts:
the view is a few dozen mounts whatever the host holds (`benchmarks/boundary_cost.py`
measures a command's cost).
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import stat
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

# the lists the verdicts read too (a path outside them is the reader's machine's)
from aeval.isolation.shown import ETC_NAMES, SYSTEM_TREES

TMP = Path("/tmp")
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""PATH's system folders inside (every one lies in a system tree)."""
RESOLV_CONF = "nameserver 10.0.2.3\noptions timeout:2 attempts:2\n"
"""The resolver inside: the user-mode network's (slirp4netns' default address); without a
network nothing answers there, as nothing would."""


def in_system_tree(path: Path) -> bool:
    """Whether ``path`` (absolute) is shown anyway: it lies in one of the system trees."""
    return any(path == Path(t) or path.is_relative_to(t) for t in SYSTEM_TREES)


@functools.lru_cache(maxsize=1)
def system_view() -> tuple[str, ...]:
    """bubblewrap options for the system trees and the minimal /etc (the host's, read once
    per process). /etc/resolv.conf is the caller's (`RESOLV_CONF`)."""
    out: list[str] = []
    for top in SYSTEM_TREES:
        if os.path.islink(top):
            out += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            out += ["--ro-bind", top, top]
    for name in ETC_NAMES:
        path = Path("/etc") / name
        if not path.exists():  # a dangling symlink (a service's) shows nothing
            continue
        if path.is_symlink() and not os.readlink(path).startswith("/"):
            target = (path.parent / os.readlink(path)).resolve()
            if in_system_tree(target):  # os-release -> ../usr/lib/os-release
                out += ["--symlink", os.readlink(path), str(path)]
                continue
        out += ["--ro-bind", str(path.resolve()), str(path)]
    return tuple(out)


PROC_READ_ONLY = ("sys", "sysrq-trigger", "fs")
"""What of the sandbox's /proc is the whole machine's, writable by root whatever its
capabilities, and bound read-only: the sysctls (``kernel/core_pattern`` names a program the
kernel starts on the host, as root, when any process crashes), the SysRq trigger (reboot),
file systems' knobs. bubblewrap covers ``irq`` and ``bus`` itself, and would cover ``sys`` too
but for a permission check that fails for root on that folder."""
PROC_HIDDEN = ("keys", "timer_list", "sched_debug", "kcore", "latency_stats", "timer_stats",
               "acpi", "scsi")
"""What of /proc shows the machine's, not the sandbox's, and is covered (an empty file or a
read-only empty folder): root's key rings, every process's timers (with their PIDs and
names), the kernel's memory and hardware state. The list of a container's defaults."""


@functools.lru_cache(maxsize=1)
def proc_view() -> tuple[str, ...]:
    """bubblewrap options, after ``--proc /proc``, for `PROC_READ_ONLY` and `PROC_HIDDEN`
    (those the host has). The read-only ones come from the host's /proc: the same kernel
    state, which a bind from the fresh /proc cannot name."""
    out: list[str] = []
    for name in PROC_READ_ONLY:
        if os.path.exists(f"/proc/{name}"):
            out += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    for name in PROC_HIDDEN:
        path = f"/proc/{name}"
        if os.path.isdir(path):
            out += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            out += ["--ro-bind", "/dev/null", path]
    return tuple(out)


class NotFollowed(OSError):
    """A folder of the attempt that bubblewrap was to bind is a symlink (or a file) put in
    its place: it is not followed, and no sandbox is made with it."""


def own_folder(path: Path, within: Path | None = None) -> Path:
    """``path`` (a folder aeval made: the attempt root, its workspace, the skill copy) as
    bubblewrap may bind it: its top (``within`` when ``path`` lies in it, else ``path``
    itself) with the top's parent resolved (aeval's own folders may lie behind a link, a store
    on another disk), and from the top down every folder a real one. A step that swapped its
    workspace for ``-> /`` would otherwise have the next sandbox of the case (its ``command``
    checks) bind the host's root, its /proc and /sys included, writable. Raises
    `NotFollowed`."""
    path = Path(os.path.abspath(path))
    top = path
    if within is not None and path.is_relative_to(os.path.abspath(within)):
        top = Path(os.path.abspath(within))
    real = Path(os.path.realpath(top.parent)) / top.name
    for name in ("", *path.relative_to(top).parts):
        real = real / name if name else real
        try:
            st = os.lstat(real)
        except OSError as exc:
            raise NotFollowed(f"{path}: {exc.strerror}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise NotFollowed(f"{path}: not a folder (a symlink or a file put in its place); "
                              "not followed")
    return real


def _prefix(path: Path) -> Path:
    """The install prefix of a program or folder: ``.../node_modules`` of
    ``.../node_modules/bin/codex``, the folder of a file elsewhere."""
    prefix = path if path.is_dir() else path.parent
    return prefix.parent if prefix.name == "bin" else prefix


def _interpreter(program: Path) -> Path | None:
    """The interpreter a ``#!`` line names (``env X`` looked up on aeval's PATH)."""
    try:
        with open(program, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        names = [w for w in words[1:] if not w.startswith("-")]
        found = shutil.which(names[0]) if names else None
        return Path(found) if found else None
    return Path(words[0])


def homes() -> list[Path]:
    """Every user's home folder (the password database's and ``HOME``), outside the system
    trees (``bin``'s home is ``/bin``)."""
    found = {os.path.expanduser("~")}
    with contextlib.suppress(OSError, KeyError):
        found |= {e.pw_dir for e in pwd.getpwall()}
    out = []
    for h in found:
        path = Path(h).resolve() if h else None
        if path is not None and len(path.parts) > 1 and path.is_dir() and not in_system_tree(path):
            out.append(path)
    return out


def shown_prefixes(programs: Iterable[str], private: Iterable[Path]) -> list[str]:
    """Install prefixes to bind read-only so that ``programs`` (absolute paths: what the
    command line starts, the host tools a case declares) run inside: each program's and its
    ``#!`` interpreter's, for those outside the system trees. Never a folder that holds or
    lies in a ``private`` path (the attempt: it is bound as the policy says), nor ``/``; never
    a home folder or one that holds it (a tool in ``~/bin`` shows ``~/bin``, not the home
    with its keys): the program's own folder then, or the program alone."""
    private = [Path(p).resolve() for p in private]
    home = homes()
    found: set[Path] = set()
    for c in programs:
        if not c.startswith("/"):
            continue
        path = Path(c)
        candidates = {path.absolute(), path.resolve()}
        if path.is_file():
            interp = _interpreter(path)
            if interp is not None:
                candidates |= {interp, interp.resolve()}
        for q in candidates:
            if not q.exists() or in_system_tree(q):
                continue
            prefix = next((f for f in (_prefix(q), q.parent, q)
                           if not any(h.is_relative_to(f) for h in home)), q)
            if len(prefix.parts) < 2 or any(prefix.is_relative_to(x) or x.is_relative_to(prefix)
                                             for x in private):
                continue
            found.add(prefix)
    return sorted(str(f) for f in found if not any(f != g and f.is_relative_to(g)
                                                   for g in found))


PIP_NAMES = ("pip", "pip-*.dist-info")
"""What of the base interpreter's own site-packages a sandboxed Python sees."""


@functools.lru_cache(maxsize=1)
def python_view() -> tuple[str, ...]:
    """bubblewrap options that show the base interpreter, when not in a system tree (a pyenv
    or a hand-built Python), read-only at its prefix; and of its site-packages (wherever it
    lies) only pip: the rest (what the host installed into that Python: IPython, awscli,
    pandas) is covered by an empty read-only tmpfs. Never aeval's venv (``sys.prefix``)."""
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    out: list[str] = []
    for prefix in sorted({Path(sys.base_prefix).resolve(), _prefix(base)}):
        if not in_system_tree(prefix) and prefix != Path("/"):
            out += ["--ro-bind", str(prefix), str(prefix)]
    paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
    for site in sorted({Path(paths["purelib"]), Path(paths["platlib"])}):
        if not site.is_dir():
            continue
        out += ["--tmpfs", str(site)]
        for pattern in PIP_NAMES:
            for entry in sorted(site.glob(pattern)):
                out += ["--ro-bind", str(entry), str(entry)]
        out += ["--remount-ro", str(site)]
    return tuple(out)
