"""A case with ``network: true`` where aeval does not run as root (a GitHub runner, a
developer's laptop): the launcher makes the network namespace inside a user namespace of its
own, so the ``ip`` it runs there must keep CAP_NET_ADMIN across exec (a uid other than 0
loses it), and bubblewrap must start without it. Run as an unprivileged user for real: the
launcher (`aeval.adapters.sandbox._network.LAUNCHER`, standard library only) under the
system's Python, around a real bubblewrap, with slirp4netns; the probe inside reaches the
registry the host reaches and none of the host's own addresses.

As root (.ci/run here), the test drops to ``nobody`` with ``runuser``. Where rootless
slirp4netns cannot open /dev/net/tun (a container that keeps it root-only: this machine), the
namespace and its loopback must still be made, and the failure must be slirp4netns's, named."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import tempfile
import threading
import urllib.request
from pathlib import Path

import pytest

from aeval.adapters.sandbox._network import LAUNCHER, SLIRP_WAIT_S, host_addresses, network_tools

pytestmark = pytest.mark.integration

SYSTEM_PYTHON = "/usr/bin/python3"
REGISTRY = "https://pypi.org/simple/"


def _unprivileged() -> list[str]:
    """The command prefix that runs as an unprivileged user."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("runuser"):
        pytest.skip("runuser is not installed: cannot drop to an unprivileged user")
    return ["runuser", "-u", "nobody", "--"]


def _tun_usable_unprivileged() -> bool:
    try:
        mode = os.stat("/dev/net/tun").st_mode
    except OSError:
        return False
    return os.geteuid() != 0 or bool(mode & 0o006)


@pytest.fixture
def host_listener():
    srv = http.server.ThreadingHTTPServer(("0.0.0.0", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()


def test_network_true_works_without_root(host_listener, tmp_path):
    tools = network_tools()
    if isinstance(tools, str):
        pytest.skip(tools)
    bwrap = shutil.which("bwrap")
    if not bwrap or not Path(SYSTEM_PYTHON).exists():
        pytest.skip("needs bubblewrap and the system's python3")
    targets = ["127.0.0.1", "10.0.2.2", *host_addresses()]
    probe = ("import socket, urllib.request as u\n"
             f"for host in {targets!r}:\n"
             "    s = socket.socket(); s.settimeout(3)\n"
             f"    try: s.connect((host, {host_listener})); print('REACHED', host)\n"
             "    except OSError as e: print('closed', host, e)\n"
             f"try: print('OUT', u.urlopen({REGISTRY!r}, timeout=15).status)\n"
             "except Exception as e: print('no way out', e)\n")
    work = Path(tempfile.mkdtemp(prefix="aeval-rootless-", dir="/tmp"))
    os.chmod(work, 0o755)
    try:
        (work / "probe.py").write_text(probe)
        os.chmod(work / "probe.py", 0o644)
        sandbox = [bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/usr", "/usr",
                   "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
                   "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc", "/etc",
                   "--proc", "/proc", "--dev", "/dev", "--ro-bind", str(work), "/probe",
                   "--", SYSTEM_PYTHON, "/probe/probe.py"]
        argv = [*_unprivileged(), SYSTEM_PYTHON, "-I", "-c", LAUNCHER, *tools,
                ",".join(host_addresses()), str(SLIRP_WAIT_S), "--", *sandbox]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = r.stdout + r.stderr
    assert "REACHED" not in out, out
    if not _tun_usable_unprivileged():
        # the namespace, its loopback and the user's capability in it were made: what is left
        # is slirp4netns opening the root-only tun device
        assert "RTNETLINK" not in out and "no private namespace" not in out, out
        assert "the case's network could not be made: slirp4netns" in out, out
        return
    assert r.returncode == 0, out
    assert "closed 127.0.0.1" in out, out
    try:
        host_out = urllib.request.urlopen(REGISTRY, timeout=15).status == 200
    except OSError:
        host_out = False
    if host_out:  # the registry answers the host: it answers the case too
        assert "OUT 200" in out, out
