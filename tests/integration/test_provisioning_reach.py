"""The provisioning phase reaches the package registries and nothing else: not a server on the
host's loopback (aeval's Prefect API, a key proxy, anyone's service), directly or through the
registry proxy, whatever name it is asked by."""

from __future__ import annotations

import http.server
import socket
import subprocess
import threading

import pytest

from aeval.adapters.sandbox._toolchain import toolchain
from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.adapters.sandbox.provision import provisioning_env, provisioning_sandbox

pytestmark = pytest.mark.skipif(bwrap_problem() is not None,
                                reason=f"no bubblewrap: {bwrap_problem()}")

PROBE = r'''
import os, socket, sys
port = int(sys.argv[1])
proxy = int(os.environ["HTTPS_PROXY"].rsplit(":", 1)[1])

def direct(host):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except OSError:
        return "unreachable"

def through_proxy(target):
    s = socket.create_connection(("127.0.0.1", proxy), timeout=20)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return s.recv(200).split(b"\r\n")[0].decode()

print("direct", direct("127.0.0.1"))
for target in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "pypi.org:22",
               "example.com:443"):
    print("proxy", target, through_proxy(target))
if len(sys.argv) > 2:
    print("proxy pypi.org:443", through_proxy("pypi.org:443"))
'''


@pytest.fixture
def host_service():
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def _registry_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


def test_the_provisioning_phase_reaches_the_registry_and_no_host_service(tmp_path, host_service):
    dest = tmp_path / "build"
    dest.mkdir()
    env = provisioning_env(dest)
    extra = ["registry"] if _registry_reachable() else []
    probe = [str(toolchain() / "bin" / "python"), "-I", "-c", PROBE, str(host_service), *extra]
    with provisioning_sandbox(probe, dest, env, "require") as (argv, proxy, _):
        assert proxy is not None
        r = subprocess.run(argv, cwd=dest, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "direct unreachable" in lines, r.stdout  # its own loopback, not the host's
    for target in (f"127.0.0.1:{host_service}", f"localhost:{host_service}",
                   f"[::1]:{host_service}", "pypi.org:22", "example.com:443"):
        assert f"proxy {target} HTTP/1.1 403 Forbidden" in lines, r.stdout
    if extra:
        assert "proxy pypi.org:443 HTTP/1.1 200 Connection established" in lines, r.stdout


def test_a_configured_index_host_is_reachable_and_file_indexes_are_not_hosts(monkeypatch):
    from aeval.adapters.sandbox.provision import registry_hosts

    monkeypatch.setenv("PIP_EXTRA_INDEX_URL",
                       "https://pkgs.example.test/simple file:///opt/wheels/simple")
    monkeypatch.setenv("UV_INDEX_URL", "http://mirror.example.test:8080/pypi/simple")
    hosts = registry_hosts()
    assert ("pkgs.example.test", 443) in hosts and ("mirror.example.test", 8080) in hosts
    assert ("pypi.org", 443) in hosts and ("files.pythonhosted.org", 443) in hosts
    assert not any(h in ("", "opt", "localhost") for h, _ in hosts)
