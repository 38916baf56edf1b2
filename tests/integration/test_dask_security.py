"""Issue 42, item 3: aeval's own Dask services are not open to the machine.

The attack (main 2a1420f): with `--dask local`, a literal step found the LocalCluster
scheduler's port in /proc/net/tcp, imported `distributed` and called `run_on_scheduler` to
write a file outside the sandbox as aeval's own process (and `run` on a worker). Dask's
scheduler, nannies and workers run whatever a client that reaches them sends.

Written as an attacker on the same machine would try it, against real processes: aeval's
LocalCluster (started by aeval's own runner, `task_runner(n, "local")`, inside a flow, in a
process of its own) and the `aeval` command line. Nothing of aeval is mocked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integration.test_dask import (  # noqa: F401 (fixtures)
    AEVAL,
    EXAMPLES,
    _refusal,
    prefect_api,
    scheduler,
)

pytest.importorskip("prefect_dask",
                    reason="prefect-dask not installed: pip install 'aeval-skills[dask]'")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

HOST = textwrap.dedent("""
    import json, os, sys
    from prefect import flow
    from prefect.context import FlowRunContext
    from aeval.tasks._engine.runners import task_runner

    @flow(name="dask-security-host", task_runner=task_runner(2, "local"))
    def host():
        client = FlowRunContext.get().task_runner.client
        workers = client.scheduler_info()["workers"]
        print(json.dumps({"pid": os.getpid(), "scheduler": client.scheduler.address,
                          "workers": sorted(workers),
                          "nannies": sorted(w["nanny"] for w in workers.values()),
                          "dashboard": client.dashboard_link}), flush=True)
        sys.stdin.readline()  # hold the cluster until the test is done

    if __name__ == "__main__":  # the workers are spawned processes that import this file
        host()
""")
"""aeval's LocalCluster, held by a flow in its own process; prints what an attacker would
find (the addresses are also in /proc/net/tcp) and waits."""

ATTACK = textwrap.dedent("""
    import asyncio, json, os, socket, sys
    from distributed import Client
    from distributed.comm import connect
    from distributed.core import rpc
    from distributed.protocol.pickle import dumps
    from distributed.security import Security

    marker, targets = sys.argv[1], json.loads(sys.argv[2])
    seen = []

    def plant(who):
        def write():
            with open(marker, "a") as f:
                f.write(who + "\\n")
        return write

    def host_port(address):
        host, port = address.split("://", 1)[1].rsplit(":", 1)
        return host, int(port)

    def attempt(what, call):
        try:
            call()
            seen.append(f"{what}: ran")
        except BaseException as exc:
            seen.append(f"{what}: refused ({type(exc).__name__})")

    scheduler = targets["scheduler"]
    host, port = host_port(scheduler)
    for scheme in ("tcp", "tls"):
        for security in (None, Security.temporary()):
            # a client of its own: none, or a certificate it made itself
            def client(scheme=scheme, security=security):
                with Client(f"{scheme}://{host}:{port}", timeout=5, security=security,
                            set_as_default=False) as c:
                    c.run_on_scheduler(plant(f"scheduler {scheme} {bool(security)}"))
            attempt(f"Client {scheme} security={bool(security)}", client)

    async def direct(address, op):
        h, p = host_port(address)
        comm = await asyncio.wait_for(connect(f"tcp://{h}:{p}", timeout=5), 10)
        try:
            await comm.write({"op": op, "function": dumps(plant(f"{op} {address}")),
                              "args": dumps(()), "kwargs": dumps({}), "reply": True})
            answer = await asyncio.wait_for(comm.read(), 10)
        finally:
            await comm.close()
        if not (isinstance(answer, dict) and answer.get("status") == "OK"):
            raise RuntimeError(str(answer)[:200])

    for address in targets["workers"]:
        attempt(f"worker run {address}", lambda a=address: asyncio.run(direct(a, "run")))
    attempt("scheduler run_function",
            lambda: asyncio.run(direct(scheduler, "run_function")))

    # a raw TCP connection: a plain Dask listener greets a stranger with its handshake
    for address in [scheduler, *targets["workers"], *targets["nannies"]]:
        with socket.create_connection(host_port(address), timeout=5) as s:
            s.settimeout(2)
            try:
                s.sendall(b"\\x00" * 16)
                got = s.recv(4096)
            except OSError:
                got = b""
        seen.append(f"raw {address}: " + ("dask handshake" if b"pickle-protocol" in got
                                            else "no handshake"))
    print(json.dumps(seen))
""")
"""What a process on the same machine (a case's step under --sandbox none, another user)
tries with the addresses: a distributed.Client over tcp and tls, without a certificate and
with one it made itself, `run_on_scheduler` through it; Dask's `run` and `run_function`
messages sent straight to the workers and the scheduler; a raw TCP connect."""


def listening(pid: int) -> list[tuple[str, int, int]]:
    """(ip, port, pid) of every listening inet socket of ``pid`` and its descendants."""
    import psutil

    root = psutil.Process(pid)
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        found += [(c.laddr.ip, c.laddr.port, proc.pid) for c in conns
                  if c.status == psutil.CONN_LISTEN]
    return found


def http_get(port: int, path: str) -> int | None:
    """The HTTP status of GET ``path`` on loopback ``port``; None when it speaks no HTTP."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


@pytest.fixture
def local_cluster(prefect_api, tmp_path):  # noqa: F811
    """aeval's LocalCluster held by a flow in another process; yields what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(PREFECT_API_URL=prefect_api, PREFECT_HOME=str(tmp_path / "prefect-home"))
    script = tmp_path / "host.py"
    script.write_text(HOST)
    log = (tmp_path / "host.log").open("w")
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log, text=True,
                            start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert line, (tmp_path / "host.log").read_text()[-3000:]
        yield json.loads(line)
    finally:
        from tests.integration.test_dask import _stop

        with __import__("contextlib").suppress(OSError):
            proc.stdin.write("\n")
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            _stop(proc)
        log.close()


def test_nothing_outside_aeval_runs_code_on_its_local_cluster(local_cluster, tmp_path):
    """Every way in that worked on 2a1420f (run_on_scheduler through a plain Client, `run` on
    a worker) and the ones a stronger attacker would try next (a TLS client with a
    certificate of its own, Dask messages on a raw connection) is refused, and nothing ran:
    the file outside is not there. The cluster's listeners are all on 127.0.0.1."""
    marker = tmp_path / "outside" / "planted"
    marker.parent.mkdir()
    script = tmp_path / "attack.py"
    script.write_text(ATTACK)
    done = subprocess.run([sys.executable, str(script), str(marker), json.dumps(local_cluster)],
                          capture_output=True, text=True, timeout=240,
                          env={k: v for k, v in os.environ.items()
                               if not k.startswith(("DASK_", "PREFECT_"))})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert not marker.exists(), (marker.read_text(), seen)
    assert [s for s in seen if s.endswith(": ran") or s.endswith("dask handshake")] == [], seen
    assert len(local_cluster["workers"]) == 2
    listeners = listening(local_cluster["pid"])
    assert listeners, "the cluster listens nowhere?"
    assert {ip for ip, _port, _pid in listeners} == {"127.0.0.1"}, listeners


def test_the_local_clusters_http_endpoints_serve_nothing(local_cluster):
    """Dask starts an HTTP server on the scheduler and every worker even without a dashboard
    (metrics, the /info pages with worker logs and call stacks, JSON state): unauthenticated,
    open to every user of the machine. aeval's cluster serves no page on any of them: every
    listener of its processes either speaks TLS (no HTTP answer) or answers 404."""
    listeners = listening(local_cluster["pid"])
    answers = {}
    for _ip, port, _pid in listeners:
        for path in ("/health", "/metrics", "/info/main/workers.html", "/json/index.html",
                     "/status"):
            status = http_get(port, path)
            if status is not None and status != 404:
                answers[f"{port}{path}"] = status
    assert answers == {}, (answers, listeners)


# Remote schedulers: `tcp://` is plain text, so anyone who reaches the scheduler runs code on
# every worker (as the worker's user). aeval refuses it unless the user says so by name.

def _aeval_run(address: str, store: Path, api: str, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env["PREFECT_API_URL"] = api
    return subprocess.run([AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"), "--out",
                           str(store), "--runtime", "literal", "--sandbox", "none",
                           "--dask", address, *extra], env=env, capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL)


def test_a_plain_tcp_scheduler_is_refused_unless_the_risk_is_named(scheduler, prefect_api,  # noqa: F811
                                                                    tmp_path):
    """`aeval run --dask tcp://...` exits 2 with one line naming --dask-allow-insecure-tcp,
    before it connects (no client reached the scheduler: it still has none) and before
    anything is written; with the option it runs, and says once what it risks."""
    from distributed import Client

    address, start_worker = scheduler
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    start_worker({**env, "PREFECT_API_URL": prefect_api})
    store = tmp_path / "store"
    done = _aeval_run(address, store, prefect_api)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-3000:]
    line = _refusal(done)
    assert "--dask-allow-insecure-tcp" in line and address in line, line
    assert not store.exists() or not list(store.iterdir()), list(store.rglob("*"))
    with Client(address, timeout=30) as client:
        clients = client.run_on_scheduler(
            lambda dask_scheduler: sorted(dask_scheduler.clients))
    assert [c for c in clients if c != "fire-and-forget"] == [client.id], clients

    done = _aeval_run(address, store, prefect_api, "--dask-allow-insecure-tcp")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if "plain TCP" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: "), done.stderr[-3000:]


def test_the_run_parser_takes_the_option_only_with_a_remote_tcp_scheduler(tmp_path):
    """--dask-allow-insecure-tcp with `local` or a tls:// scheduler is a usage error: it
    would say a risk is taken where none is."""
    for dask in ("local", "tls://127.0.0.1:9"):
        done = _aeval_run(dask, tmp_path / "store", "http://127.0.0.1:9/api",
                          "--dask-allow-insecure-tcp")
        assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-3000:]
        assert _refusal(done) == (f"aeval run: --dask-allow-insecure-tcp only means something "
                                  f"with a plain tcp:// scheduler, not --dask {dask} "
                                  "(encrypted and authenticated)"), done.stderr[-2000:]


def test_a_tls_scheduler_runs_with_dasks_own_tls_config(prefect_api, tmp_path):  # noqa: F811
    """The secure way deployments/README.md gives: a real `dask scheduler` and `dask worker`
    speaking TLS (one CA, a certificate per role), and `aeval run --dask tls://...` taking
    its certificate from Dask's own config (``DASK_DISTRIBUTED__COMM__TLS__*``), no option
    and no warning. A client without the certificate is refused by the same scheduler."""
    from distributed import Client
    from distributed.security import Security

    from tests.integration.test_dask import DASK, _free_port, _stop

    made = Security.temporary()  # PEM text: written to files, as a user's certificates are
    files = {}
    for name, text in (("ca.pem", made.tls_ca_file), ("cert.pem", made.tls_client_cert),
                       ("key.pem", made.tls_client_key)):
        files[name] = tmp_path / name
        files[name].write_text(text)
        files[name].chmod(0o600)
    tls = ["--tls-ca-file", str(files["ca.pem"]), "--tls-cert", str(files["cert.pem"]),
           "--tls-key", str(files["key.pem"])]
    port = _free_port()
    address = f"tls://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_", "DASK_"))}
    dask_env = {**env, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(files["ca.pem"]),
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(files["cert.pem"]),
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(files["key.pem"]),
                "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "true"}
    log = (tmp_path / "dask.log").open("wb")
    procs = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--protocol", "tls", "--no-dashboard", *tls], env=env,
                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              start_new_session=True)]
    try:
        procs.append(subprocess.Popen(
            [DASK, "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
             "--no-dashboard", "--no-nanny", "--preload", "aeval.flows.runners", *tls],
            env={**env, "PREFECT_API_URL": prefect_api}, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
        with Client(address, timeout=60, security=Security(
                tls_ca_file=str(files["ca.pem"]), tls_client_cert=str(files["cert.pem"]),
                tls_client_key=str(files["key.pem"]), require_encryption=True)) as client:
            client.wait_for_workers(1, timeout=90)
        with pytest.raises(Exception), Client(  # noqa: B017 (any refusal will do)
                address, timeout=5, security=Security.temporary()) as stranger:
            stranger.run_on_scheduler(os.getpid)
        store = tmp_path / "store"
        done = subprocess.run(
            [AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"), "--out", str(store),
             "--runtime", "literal", "--sandbox", "none", "--dask", address],
            env={**dask_env, "PREFECT_API_URL": prefect_api}, capture_output=True, text=True,
            timeout=180, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "plain TCP" not in done.stderr, done.stderr[-2000:]
        assert len(list((store / "runs").glob("*/run.json"))) == 1
    finally:
        for proc in reversed(procs):
            _stop(proc)
        log.close()
