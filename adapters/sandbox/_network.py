"""The network of a bubblewrap sandbox: a private namespace always, outbound on request.

Every sandboxed command runs in a network namespace of its own (``--unshare-net``): only its
own loopback, no route out. In it, ``/proc/net/tcp``, ``/proc/net/unix`` and the abstract
unix sockets list only the namespace's own: nothing listening on the machine (aeval's Prefect
servers, its warm process, a Dask scheduler or worker, PostgreSQL, anyone else's service) can
be found or reached. The model is reached through the key proxy's unix socket, bound into
the sandbox, and a bridge inside (`aeval.adapters.runtimes.keyproxy.bridged`).

A case that declares ``network: true`` gets outbound access through slirp4netns, a user-mode
network stack (checked facts: shared/notes/sandbox.md). `LAUNCHER` makes the namespace before
bubblewrap starts, so nothing races bubblewrap's own set-up: a child process unshares a new
network namespace (as root; otherwise a user namespace with it), brings its loopback up and
waits; the launcher attaches slirp4netns to it with ``--disable-host-loopback`` (10.0.2.2
does not lead to the host's 127.0.0.1); the child then makes every address of the host
itself unreachable (an ``unreachable`` route per address) and becomes the command, which
starts bubblewrap in that namespace (bubblewrap is then not asked to unshare it). Root inside
the sandbox has no CAP_NET_ADMIN, so the routes stay. Without root, the namespace belongs to a
user namespace of the launcher's own where the user keeps its uid: ``ip`` gets CAP_NET_ADMIN
as an ambient capability (exec drops it otherwise), cleared before bubblewrap starts, and
slirp4netns needs /dev/net/tun open to the user (0666, as distributions ship it).
slirp4netns ends with the launcher (``--exit-fd``), and the launcher's exit status is the
command's.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import os
import shutil
import sys
from pathlib import Path

SLIRP_WAIT_S = 10.0

LAUNCHER = r'''
import ctypes, os, select, subprocess, sys
slirp, ip, addrs, wait_s = sys.argv[1:5]
argv = sys.argv[6:]
ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(ready_r)
    os.close(go_w)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: never outlive the launcher
    uid, gid = os.geteuid(), os.getegid()
    flags = 0x40000000 if uid == 0 else 0x40000000 | 0x10000000  # CLONE_NEWNET (| NEWUSER)
    if libc.unshare(flags) != 0:
        sys.stderr.write(f"unshare: {os.strerror(ctypes.get_errno())}\n")
        os._exit(125)
    if uid != 0:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
        # `ip` runs as this user in the namespace: exec drops the namespace's capabilities of
        # a uid other than 0, so CAP_NET_ADMIN is made ambient for it, and cleared before
        # bubblewrap (which refuses to start with capabilities it was not given setuid)
        hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        caps = (ctypes.c_uint32 * 6)()
        libc.capget(hdr, caps)
        caps[2] |= 1 << 12  # CAP_NET_ADMIN into the inheritable set
        if libc.capset(hdr, caps) != 0 or libc.prctl(47, 2, 12, 0, 0) != 0:  # AMBIENT_RAISE
            sys.stderr.write(f"capset: {os.strerror(ctypes.get_errno())}\n")
            os._exit(125)
    if subprocess.run([ip, "link", "set", "lo", "up"]).returncode != 0:
        os._exit(125)
    os.write(ready_w, b"1")
    os.close(ready_w)
    if os.read(go_r, 1) != b"1":
        os._exit(125)
    os.close(go_r)
    routes = "".join(f"route add unreachable {a}\n" for a in addrs.split(",") if a)
    if routes:
        r = subprocess.run([ip, "-batch", "-"], input=routes.encode(), stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            sys.stderr.write("aeval: the case's network could not be made: the host's own "
                             "addresses could not be closed\n")
            os._exit(125)
    if uid != 0:
        libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    os.execv(argv[0], argv)

os.close(ready_w)
os.close(go_r)

def give_up(why):
    sys.stderr.write(f"aeval: the case's network could not be made: {why}\n")
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    sys.exit(125)

ok, _, _ = select.select([ready_r], [], [], float(wait_s))
if not ok or os.read(ready_r, 1) != b"1":
    give_up("no private namespace")
exit_r, exit_w = os.pipe()
sready_r, sready_w = os.pipe()
slirp_proc = subprocess.Popen(
    [slirp, "--configure", "--mtu=65520", "--disable-host-loopback", "--exit-fd", str(exit_r),
     "--ready-fd", str(sready_w), str(pid), "tap0"],
    pass_fds=(exit_r, sready_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
    stderr=subprocess.PIPE)
os.close(exit_r)
os.close(sready_w)
ok, _, _ = select.select([sready_r], [], [], float(wait_s))
if not ok or os.read(sready_r, 1) != b"1":
    err = ""
    if slirp_proc.poll() is not None:
        err = slirp_proc.stderr.read1(2000).decode("utf-8", "replace").strip()
    give_up(f"slirp4netns: {err.splitlines()[-1] if err else 'no answer'}")
os.write(go_w, b"1")
os.close(go_w)
_, status = os.waitpid(pid, 0)
os.close(exit_w)
try:
    slirp_proc.wait(timeout=5)
except subprocess.TimeoutExpired:
    slirp_proc.kill()
sys.exit(os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status)
         else 128 + os.WTERMSIG(status))
'''


def _tool(name: str) -> str | None:
    found = shutil.which(name, path=os.environ.get("PATH", os.defpath) + ":/usr/sbin:/sbin")
    return str(Path(found).resolve()) if found else None


@functools.lru_cache(maxsize=1)
def network_tools() -> tuple[str, str] | str:
    """(slirp4netns, ip) by absolute path, or why outbound access cannot be made."""
    found = {n: _tool(n) for n in ("slirp4netns", "ip")}
    missing = [n for n, p in found.items() if p is None]
    if missing:
        pkgs = {"slirp4netns": "slirp4netns", "ip": "iproute2"}
        return (f"a case with network: true needs {', '.join(missing)} "
                f"(apt-get install {' '.join(pkgs[m] for m in missing)})")
    return found["slirp4netns"], found["ip"]  # type: ignore[return-value]


def host_addresses() -> list[str]:
    """Every IPv4 address of this machine's own interfaces (``/proc/net/fib_trie``'s local
    host entries), loopback ones aside (slirp4netns never leads to those)."""
    try:
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
    except OSError:
        return []
    out: set[str] = set()
    for prev, line in itertools.pairwise(lines):
        if "/32 host LOCAL" in line:
            addr = prev.strip().split()[-1]
            try:
                if not ipaddress.ip_address(addr).is_loopback:
                    out.add(addr)
            except ValueError:
                continue
    return sorted(out)


def with_outbound(argv: list[str]) -> list[str]:
    """``argv`` (a command line that becomes bubblewrap, not asked to unshare the network)
    started by `LAUNCHER` in a private namespace with outbound access. Raises RuntimeError
    (the reason) when the tools are missing."""
    tools = network_tools()
    if isinstance(tools, str):
        raise RuntimeError(tools)
    python = getattr(sys, "_base_executable", sys.executable)
    return [python, "-I", "-c", LAUNCHER, *tools, ",".join(host_addresses()),
            str(SLIRP_WAIT_S), "--", *argv]
