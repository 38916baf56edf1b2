"""The disk bound of an attempt: what the attempt root and a command's private ``/tmp`` may
hold together while its commands run (`DiskBound`).

RLIMIT_FSIZE bounds one file; nothing in the kernel bounds the total without privileges (a
quota, a loop device, a size-limited mount over the attempt root all need root or a
configured filesystem). So aeval's own process measures, while each sandboxed command runs:

- **the attempt root** (and the policy's other writable folders): the blocks really
  allocated (``st_blocks``, so a sparse file counts what it holds and a file preallocated
  with ``fallocate --keep-size`` counts what it reserved, whatever its apparent size), each
  hard-linked inode once, every entry read without following a link (each folder opened
  with O_NOFOLLOW from its parent's descriptor), at most `MAX_ENTRIES` entries per walk;
- **the command's private /tmp** (bubblewrap's tmpfs, made with ``--size`` = the bound, so
  it can never hold more whatever the walk's cadence): its used blocks, read with
  ``statvfs`` through ``/proc/PID/root`` of a process inside the sandbox.

Over the bound (or past `MAX_ENTRIES` files and folders), the command's process tree is
killed at once and the reason is kept: ``wrote more than 64 MiB``. The walk repeats every
`INTERVAL_S`, or less often when it is slow (it never takes more than about a fifth of a
CPU), and once more when the command ends: a command quicker than one walk is still seen;
the private /tmp is read every `TMP_INTERVAL_S`.
Unsandboxed (``--sandbox none``) the attempt root is measured the same way (there is no
private /tmp).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aeval.isolation.sandbox import SandboxPolicy

MAX_ENTRIES = 1_000_000  # files and folders one walk reads; more is itself over the bound
INTERVAL_S = 0.02  # between two walks, at least
TMP_INTERVAL_S = 0.01  # between two reads of the private /tmp (a statvfs: cheap)
SLOW_FACTOR = 4  # a walk that took w seconds waits 4 w before the next one
MAX_PIDS = 16  # processes of the command looked at for its private /tmp


def human(n: int) -> str:
    """``64 MiB``, ``10 GiB``, ``1.5 GiB``: a size in the binary units of the field."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value == int(value) or value >= 100 \
                else f"{value:.1f} {unit}"
    return f"{n} bytes"


def exceeded_reason(limit: int) -> str:
    return f"wrote more than {human(limit)}"


def allocated(roots: list[Path], max_entries: int = MAX_ENTRIES) -> tuple[int, int]:
    """(bytes allocated, entries read) under ``roots``, links never followed, each inode
    once; the walk stops after ``max_entries`` entries (the count then says so)."""
    seen: set[tuple[int, int]] = set()
    total = entries = 0
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    stack: list[int] = []
    for root in roots:
        with contextlib.suppress(OSError):
            fd = os.open(root, flags)
            total += os.fstat(fd).st_blocks * 512
            stack.append(fd)
    try:
        while stack and entries < max_entries:
            fd = stack.pop()
            try:
                with os.scandir(fd) as it:
                    for entry in it:
                        entries += 1
                        if entries > max_entries:
                            break
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except OSError:
                            continue  # gone since it was listed
                        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                            key = (st.st_dev, st.st_ino)
                            if key in seen:
                                continue
                            seen.add(key)
                        total += st.st_blocks * 512
                        if stat.S_ISDIR(st.st_mode):
                            with contextlib.suppress(OSError):
                                stack.append(os.open(entry.name, flags, dir_fd=fd))
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        for fd in stack:
            os.close(fd)
    return total, entries


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except (OSError, ValueError):
        return []


def private_tmp_used(pid: int, host_tmp_dev: int | None) -> int:
    """Bytes used in the private /tmp of the sandbox the command ``pid`` started (0 when none
    is found): the largest use among its first processes whose /tmp is another filesystem
    than aeval's. Only read (``statvfs`` on an O_PATH descriptor), nothing followed past
    the process's own root."""
    best = 0
    queue, looked = [pid], 0
    while queue and looked < MAX_PIDS:
        p = queue.pop(0)
        looked += 1
        queue += _children(p)
        try:
            fd = os.open(f"/proc/{p}/root/tmp",
                         os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if os.fstat(fd).st_dev == host_tmp_dev:
                continue
            v = os.statvfs(fd)
            best = max(best, (v.f_blocks - v.f_bfree) * v.f_frsize)
        except OSError:
            continue
        finally:
            os.close(fd)
    return best


def _host_tmp_dev() -> int | None:
    try:
        return os.stat("/tmp").st_dev
    except OSError:
        return None


@functools.lru_cache(maxsize=4)
def sized_tmpfs(bwrap: str) -> bool:
    """Whether ``bwrap`` takes ``--size`` before ``--tmpfs`` (bubblewrap 0.7 and later);
    without it the private /tmp is only measured, not sized."""
    try:
        r = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=20,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in r.stdout + r.stderr


def tmp_options(bwrap: str, policy: SandboxPolicy) -> list[str]:
    """bubblewrap's options for the private /tmp: a tmpfs no larger than the disk bound."""
    size = policy.max_disk_bytes
    return [*(["--size", str(size)] if size and sized_tmpfs(bwrap) else []), "--tmpfs", "/tmp"]


class DiskBound:
    """The disk bound of an attempt: `watch` a running command (an
    `aeval.isolation.shell.Guard`)."""

    def __init__(self, roots: list[Path], limit: int, max_entries: int = MAX_ENTRIES):
        self.roots = [Path(r) for r in roots]
        self.limit = limit
        self.max_entries = max_entries

    def walk(self) -> tuple[int, str | None]:
        """(bytes allocated under the roots, why that walk alone is over the bound)."""
        used, entries = allocated(self.roots, self.max_entries)
        if entries > self.max_entries:
            return used, (f"{exceeded_reason(self.limit)}: made more than "
                          f"{self.max_entries:,} files and folders")
        return used, None

    def verdict(self, held: int) -> str | None:
        return f"{exceeded_reason(self.limit)} ({human(held)} held)" if held > self.limit \
            else None

    def watch(self, pid: int, kill: Callable[[], None]) -> Callable[[], str | None]:
        """Measure while the command ``pid`` runs and ``kill`` it over the bound: its private
        /tmp every `TMP_INTERVAL_S` (a ``statvfs``), the roots every `INTERVAL_S` or less
        often when a walk is slow. Returns the function that stops watching and gives the
        reason the command went over, or None; it walks the roots once more, counting the
        private /tmp as last read (gone with the command): a command quicker than one walk
        is measured too."""
        done = threading.Event()
        found: list[str] = []
        tmp_dev = _host_tmp_dev()
        last = {"root": 0, "tmp": 0}

        def loop() -> None:
            next_walk = time.monotonic() + INTERVAL_S
            while not done.wait(TMP_INTERVAL_S):
                last["tmp"] = private_tmp_used(pid, tmp_dev)
                now = time.monotonic()
                why = None
                if now >= next_walk:
                    last["root"], why = self.walk()
                    took = time.monotonic() - now
                    next_walk = time.monotonic() + max(INTERVAL_S, took * SLOW_FACTOR)
                why = why or self.verdict(last["root"] + last["tmp"])
                if why is not None:
                    found.append(why)
                    kill()
                    return

        thread = threading.Thread(target=loop, name="aeval-disk-bound", daemon=True)
        thread.start()

        def stop() -> str | None:
            done.set()
            thread.join()
            if not found:
                used, why = self.walk()
                why = why or self.verdict(used + last["tmp"])
                if why is not None:
                    found.append(why)
            return found[0] if found else None

        return stop


class DiskBounded:
    """What a sandbox gets from its disk bound: ``guard`` (the `aeval.isolation.shell.Guard`
    of its commands, from its policy as it is when the command starts) and ``exceeded``
    (the first reason one of its commands went over, kept for the verdict)."""

    policy: SandboxPolicy
    exceeded: str | None = None

    def measure(self) -> str | None:
        """Measure the attempt once, with no command running (what aeval's own tools wrote
        for an agent, e.g. a write tool, counts too); over the bound, ``exceeded`` says so.
        Returns ``exceeded``."""
        p = self.policy
        if p.max_disk_bytes and self.exceeded is None:
            bound = DiskBound([Path(p.root), *map(Path, p.writable)], p.max_disk_bytes)
            used, why = bound.walk()
            self.exceeded = why or bound.verdict(used)
        return self.exceeded

    def guard(self, pid: int, kill: Callable[[], None]) -> Callable[[], str | None]:
        p = self.policy
        if not p.max_disk_bytes:
            return lambda: None
        stop = DiskBound([Path(p.root), *map(Path, p.writable)], p.max_disk_bytes).watch(
            pid, kill)

        def done() -> str | None:
            why = stop()
            if why is not None and self.exceeded is None:
                self.exceeded = why
            return why

        return done
