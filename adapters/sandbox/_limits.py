"""Limits of a bubblewrap sandbox: capabilities, rlimits and the attempt's cgroups.

- **Capabilities.** bubblewrap started by root keeps *every* capability inside unless told
  otherwise: a step could ``mount -o remount,rw /`` and write the host, or unmount the tmpfs
  that hides the original skill. The sandbox keeps only `KEPT_CAPS` (the file-owner ones a
  root-run tool expects, as in a container's default set), never ``CAP_SYS_ADMIN`` (mounts),
  ``CAP_SYS_RESOURCE`` (raising the limits below), ``CAP_DAC_READ_SEARCH``
  (``open_by_handle_at`` past the mount view), ``CAP_MKNOD`` (a disk's device node),
  ``CAP_NET_RAW`` / ``CAP_NET_ADMIN`` (the shared network's traffic and routes) or
  ``CAP_SYS_PTRACE``. A nested bubblewrap (Codex's own sandbox) cannot start without them:
  the codex runtime turns its own sandbox off inside aeval's.
- **rlimits** (``prlimit`` on the sandboxed command, inherited by every descendant):
  RLIMIT_DATA bounds the private writable memory each process allocates (RLIMIT_AS would
  break node: V8 reserves ~10 GB of address space for one WebAssembly memory);
  RLIMIT_FSIZE bounds the size of any file written, sparse ones included; RLIMIT_NPROC is
  set but the kernel exempts root from it.
- **the kernel's key rings** (a seccomp filter, `key_filter`): a case runs as root of the
  machine's user namespace, where root's user and session key rings are one for every
  process of the machine; ``add_key``, ``request_key`` and ``keyctl`` fail with EPERM inside
  (a container's default), so a case can neither read the host's keys nor leave one for
  another case or for later.
- **cgroups, where one can be made** (cgroup v1 hierarchies or v2 with the controller
  enabled): one ``pids`` cgroup per attempt (``pids.max``: a fork bomb stops there) and one
  ``memory`` cgroup per attempt (``memory.limit_in_bytes`` / ``memory.max``: all the
  attempt's processes together, so N parallel attempts cannot take the host). Every command
  of the attempt joins them before it becomes bubblewrap. Where none can be made, only the
  per-process RLIMIT_DATA holds (recorded as such in the README's security model).
"""

from __future__ import annotations

import contextlib
import os
import platform
import signal
import struct
import time
import uuid
from pathlib import Path

KEPT_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
             "CAP_SETGID", "CAP_SETUID", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
             "CAP_AUDIT_WRITE")
CGROUP = Path("/sys/fs/cgroup")
# controller -> (v1 hierarchy, the file that sets its limit there, the same under v2)
CONTROLLERS = {"pids": (CGROUP / "pids", "pids.max", "pids.max"),
               "memory": (CGROUP / "memory", "memory.limit_in_bytes", "memory.max")}


def cap_options() -> list[str]:
    """bubblewrap options: drop every capability, keep `KEPT_CAPS`."""
    out = ["--cap-drop", "ALL"]
    for cap in KEPT_CAPS:
        out += ["--cap-add", cap]
    return out


# audit arch -> the numbers of add_key, request_key and keyctl there (asm/unistd*.h)
_KEY_CALLS = {"x86_64": ((0xC000003E, (248, 249, 250)), (0x40000003, (286, 287, 288))),
              "aarch64": ((0xC00000B7, (217, 218, 219)), (0x40000028, (309, 310, 311)))}
_X32 = 0x40000000  # x86_64's x32 system calls: the same numbers with this bit


def key_filter(machine: str | None = None) -> bytes | None:
    """A seccomp program (classic BPF, as bubblewrap's ``--seccomp`` reads it) that makes the
    key ring calls fail with EPERM, for the native and the compat (32-bit) system calls; every
    other call is allowed. None on a machine whose numbers are not known here."""
    arches = _KEY_CALLS.get(machine or platform.machine())
    if arches is None:
        return None
    ld, jeq, and_, ret = 0x20, 0x15, 0x54, 0x06  # BPF_LD|W|ABS, JMP|JEQ|K, ALU|AND|K, RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    body: list[tuple[int, int, int, int]] = []
    for arch, calls in arches:
        block = [(ld, 0, 0, 0)]  # the call's number
        if arch == 0xC000003E:
            block.append((and_, 0, 0, 0xFFFFFFFF & ~_X32))
        for i, nr in enumerate(calls):
            block.append((jeq, len(calls) - i, 0, nr))  # to the deny below
        block += [(ret, 0, 0, allow), (ret, 0, 0, deny)]
        body.append((jeq, 0, len(block), arch))  # this arch's block, else the next test
        body += block
    prog = [(ld, 0, 0, 4), *body, (ret, 0, 0, allow)]  # the arch, then per arch
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


def rlimit_options(data: int | None, fsize: int | None, nproc: int | None) -> list[str]:
    """``prlimit`` options for the limits that are set (soft and hard alike)."""
    out = []
    if data:
        out.append(f"--data={data}")
    if fsize:
        out.append(f"--fsize={fsize}")
    if nproc:
        out.append(f"--nproc={nproc}")
    return out


def make_cgroup(controller: str, limit: int, root: Path = CGROUP) -> Path | None:
    """A fresh cgroup of ``controller`` with its limit set, or None where none can be made
    (no such hierarchy, not writable, or the v2 controller not enabled)."""
    v1, v1_file, v2_file = CONTROLLERS[controller]
    v1 = root / v1.relative_to(CGROUP)
    candidates = [(v1, v1_file), (root, v2_file)]
    for base, limit_file in candidates:
        if not (base / "cgroup.procs").is_file() or not os.access(base, os.W_OK):
            continue
        cg = base / f"aeval-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            cg.mkdir()
            (cg / limit_file).write_text(str(limit))
            return cg
        except OSError:
            with contextlib.suppress(OSError):
                cg.rmdir()
    return None


def remove_cgroup(cg: Path, wait_s: float = 2.0) -> None:
    """Kill what is left in the attempt's cgroup (a namespace init still dying), then remove
    it; a cgroup stays busy until its last process is gone."""
    deadline = time.monotonic() + wait_s
    while cg.exists():
        with contextlib.suppress(OSError):
            for pid in (cg / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
        try:
            cg.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def join_cgroups(cgroups: list[Path], argv: list[str]) -> list[str]:
    """``argv`` started by a shell that first joins ``cgroups`` (all its descendants
    follow)."""
    if not cgroups:
        return argv
    joins = "; ".join(f'echo $$ > "${i + 1}"' for i in range(len(cgroups)))
    return ["/bin/sh", "-c", f'{{ {joins}; }} 2>/dev/null; shift {len(cgroups)}; exec "$@"',
            "aeval-join", *(str(c / "cgroup.procs") for c in cgroups), *argv]


def oom_kills(cg: Path | None) -> int:
    """How many processes the kernel's OOM killer has killed in memory cgroup ``cg`` (the
    ``oom_kill`` line of ``memory.oom_control`` under v1, ``memory.events`` under v2); 0
    where there is no such cgroup or counter."""
    if cg is None:
        return 0
    for name in ("memory.events", "memory.oom_control"):
        try:
            text = (cg / name).read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return 0
