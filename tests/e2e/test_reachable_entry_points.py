"""What a case can reach when it is started from the entry points that are not a plain
`aeval` on this machine (issue 42, done-when): a remote `dask worker`, the MR deployment on a
served flow, and the GitHub Action's command. tests/e2e/test_reachable_from_a_case.py covers
`aeval run`, `aeval run --dask local` and `aeval sweep`.

Each entry point is started as its documentation says, with real processes (a `dask
scheduler` and a `dask worker` with aeval's preload; `prefect server start`, `python -m
aeval.deployments.serve` and the CI template's `aeval trigger` job; action.yml's steps run as
a runner would). The services each one starts (the scheduler's and worker's ports, the
Prefect server, the serving process) are listening *before* the skill's inventory is written,
so every one of them is in the list the port-audit case tries, beside the test's own
listeners (loopback, all addresses, the host's address, unix and abstract sockets) and full
scans of loopback, the user-mode gateway and the host's addresses (`tests.reach`). A case
with ``network: false`` and one with ``network: true`` each reach nothing, and the socket
tables they read hold none of the host's sockets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem

# fixtures
from tests.integration.test_prefect_server import server  # noqa: F401
from tests.reach import (
    AUDIT_CASES,
    Listeners,
    SocketWatch,
    add_port_audit,
    assert_no_host_sockets,
    assert_nothing_answers,
    audit_targets,
    listening_tcp,
    named_unix_sockets,
    read_audit,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600),  # past its own 400-420 s waits
              pytest.mark.skipif(bwrap_problem() is not None,
                                 reason=f"bubblewrap: {bwrap_problem()}")]

BIN = Path(sys.executable).parent
AEVAL, DASK = str(BIN / "aeval"), str(BIN / "dask")


@dataclass
class Audited:
    """One entry point's run of the port-audit skill, and what the test saw from outside."""

    label: str
    services: dict[str, int]  # what this entry point listens on: name -> port
    targets: dict = field(default_factory=dict)
    listening: list = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    host_sockets: dict[int, str] = field(default_factory=dict)
    host_unix_names: set[str] = field(default_factory=set)
    run_dir: Path | None = None
    why: str = ""


def audit_through(label: str, services: dict[str, int], socket_dir: Path,
                  start: Callable[[dict], tuple[Path | None, str]]) -> Audited:
    """Open the test's listeners, write the inventory (every listener of the machine now,
    ``services`` among them), and call ``start(targets)``, which runs the port-audit skill
    through the entry point and returns the run folder and what to show on failure."""
    a = Audited(label, services)
    with Listeners(uuid.uuid4().hex[:12], socket_dirs=[socket_dir]) as listening, \
            SocketWatch() as watch:
        a.targets = audit_targets(listening)
        up = {port for _, port in listening_tcp()}
        assert set(services.values()) <= up, (
            f"[{label}] a service is not listening when the inventory is made, so the case "
            f"would not try it: {services}")
        a.run_dir, a.why = start(a.targets)
        a.host_unix_names = named_unix_sockets()
    a.host_sockets, a.accepted, a.listening = watch.seen, list(listening.accepted), listening.tcp
    return a


def assert_reaches_nothing(a: Audited) -> None:
    """Both cases ran sandboxed and found nothing that answers and none of the host's
    sockets; each of the entry point's own services was on the list they tried."""
    assert a.run_dir is not None and (a.run_dir / "run.json").is_file(), \
        f"[{a.label}] no run folder\n{a.why}"
    manifest = json.loads((a.run_dir / "run.json").read_text())
    assert (manifest.get("sandbox") or {}).get("used") == "bwrap", (
        f"[{a.label}] the run was not sandboxed, so it proves nothing: {manifest.get('sandbox')}")
    tried = {tuple(t) for t in a.targets["tcp"]}
    for name, port in a.services.items():
        assert ("127.0.0.1", port) in tried or ("::1", port) in tried, (name, port)
    for case, network in AUDIT_CASES.items():
        label = f"{a.label}, network: {str(network).lower()}"
        report, tables = read_audit(a.run_dir / "port-audit" / "literal" / case / "outputs",
                                    a.why)
        assert_nothing_answers(report, a.listening, a.accepted, label, a.services)
        assert_no_host_sockets(tables, a.host_sockets, a.host_unix_names, label)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_API", "DASK_")) and k != "TMPDIR"}
    env.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", AEVAL_RETRIES="0", **extra)
    return env


def tail(proc: subprocess.CompletedProcess | None, log: Path | None = None) -> str:
    out = "" if proc is None else f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n" \
                                  f"{(proc.stderr or '')[-2000:]}"
    if log is not None and log.exists():
        out += f"\n{log.name}:\n" + log.read_text(errors="replace")[-2000:]
    return out


@pytest.fixture
def host_dir(tmp_path_factory):
    """Outside /tmp (every sandbox has its /tmp private anyway), as a checkout is."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="aeval-reach-entry-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ---- a remote `dask worker` --------------------------------------------------------------

def test_a_case_on_a_remote_dask_worker_reaches_nothing(host_dir):
    """deployments/README §5: a `dask scheduler` (listening on every address, as one other
    machines reach must), a `dask worker` with `--preload aeval.flows.runners` and
    PREFECT_API_URL to a Prefect server it reaches, the run store on a path both see; `aeval
    run --dask tcp://... --dask-allow-insecure-tcp --sandbox require`. The cases run in the
    worker, whose own ports, the scheduler's and the Prefect server's are all in reach of an
    unsandboxed process on this machine: none answers a case."""
    pytest.importorskip("prefect_dask")
    from distributed import Client

    from tests.api_proxy import prefect_server
    from tests.integration.test_dask import _free_port, _stop

    with prefect_server(host_dir / "prefect-home") as (api_port, _env):
        api = f"http://127.0.0.1:{api_port}/api"
        port = _free_port()
        address = f"tcp://127.0.0.1:{port}"
        log_path = host_dir / "dask.log"
        procs = []
        with log_path.open("wb") as log:
            try:
                procs.append(subprocess.Popen(
                    [DASK, "scheduler", "--host", "0.0.0.0", "--port", str(port),
                     "--no-dashboard"], env=clean_env(), stdout=log,
                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
                procs.append(subprocess.Popen(
                    [DASK, "worker", address, "--host", "127.0.0.1", "--nthreads", "2",
                     "--no-dashboard", "--no-nanny", "--preload", "aeval.flows.runners"],
                    env=clean_env(PREFECT_API_URL=api,
                                  PREFECT_HOME=str(host_dir / "worker-prefect-home")),
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True))
                with Client(address, timeout=60) as client:
                    client.wait_for_workers(1, timeout=90)
                    (worker,) = client.scheduler_info()["workers"]
                services = {"prefect server": api_port, "dask scheduler": port,
                            "dask worker": int(worker.rsplit(":", 1)[1])}

                def start(targets: dict) -> tuple[Path | None, str]:
                    mp = host_dir / "marketplace"
                    add_port_audit(mp, targets)
                    store = host_dir / "store"
                    proc = subprocess.run(
                        [AEVAL, "run", str(mp), "--out", str(store), "--runtime", "literal",
                         "--sandbox", "require", "--no-grader", "-q", "--dask", address,
                         "--dask-allow-insecure-tcp"],
                        env=clean_env(PREFECT_API_URL=api,
                                      PREFECT_HOME=str(host_dir / "client-prefect-home")),
                        capture_output=True, text=True, timeout=420, stdin=subprocess.DEVNULL)
                    runs = sorted((store / "runs").glob("*/run.json"))
                    return (runs[-1].parent if runs else None), tail(proc, log_path)

                audited = audit_through("remote dask worker", services, host_dir, start)
            finally:
                for proc in reversed(procs):
                    _stop(proc)
    assert_reaches_nothing(audited)


# ---- the MR deployment on a served flow ---------------------------------------------------

def listening_ports(pid: int) -> list[int]:
    """The TCP ports ``pid`` and its descendants listen on."""
    import psutil

    root = psutil.Process(pid)
    ports = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            ports += [c.laddr.port for c in proc.net_connections(kind="inet")
                      if c.status == psutil.CONN_LISTEN]
        except psutil.NoSuchProcess:
            continue
    return sorted(set(ports))


def test_a_case_of_the_served_mr_deployment_reaches_nothing(server, host_dir):  # noqa: F811
    """deployments/README: `prefect server start`, `python -m aeval.deployments.serve`
    serving the MR deployment (flow runs execute in the serving process), triggered by the CI
    template's aeval-prefect job (`aeval trigger`) for an MR that adds the port-audit skill.
    The Prefect server (and whatever the serving process listens on) is on the list the
    cases try: none answers."""
    from tests.integration.test_prefect_server import (
        aeval_prefect_job,
        sh,
        start_serve,
        stop,
        wait_for_deployment,
    )

    api_port = int(server["PREFECT_API_URL"].rsplit(":", 1)[1].split("/")[0])
    work = host_dir / "serve"
    work.mkdir()
    log = host_dir / "serve.log"
    serve = start_serve({**server, "AEVAL_RETRIES": "0"}, work, log, "--no-schedule")
    try:
        wait_for_deployment(server, "aeval-mr/mr", serve, log)
        services = {"prefect server": api_port,
                    **{f"serve ({port})": port for port in listening_ports(serve.pid)}}

        def start(targets: dict) -> tuple[Path | None, str]:
            repo = host_dir / "marketplace"
            repo.mkdir()
            (repo / "README.md").write_text("# Our skills\n")
            sh(repo, "init", "-q", "-b", "main")
            sh(repo, "add", "-A")
            sh(repo, "commit", "-q", "-m", "base")
            base = sh(repo, "rev-parse", "HEAD")
            sh(repo, "checkout", "-q", "-b", "port-audit")
            add_port_audit(repo, targets)
            sh(repo, "add", "-A")
            sh(repo, "commit", "-q", "-m", "port-audit: a new skill")
            head = sh(repo, "rev-parse", "HEAD")
            sh(repo, "checkout", "-q", "main")
            job = aeval_prefect_job(server, repo, base, head, "9", host_dir / "job-9")
            out = job.communicate(timeout=400)[0]
            runs = sorted((work / ".aeval" / "runs").glob("*/run.json"))
            why = f"the CI job exited {job.returncode}:\n{out[-2500:]}\n{tail(None, log)}"
            return (runs[-1].parent if runs else None), why

        audited = audit_through("served MR deployment", services, host_dir, start)
    finally:
        stop(serve)
    assert_reaches_nothing(audited)


# ---- the GitHub Action's command ----------------------------------------------------------

def test_a_case_run_by_the_github_actions_command_reaches_nothing(host_dir):
    """action.yml's steps run as a runner would (tests/integration/test_github_action.py's
    Job), `mode: run` on a pull_request that adds the port-audit skill, with the default
    `sandbox: require`, on a runner image that has aeval already (the Action then uses it and
    installs nothing). aeval starts its own Prefect server during the run, after the inventory
    was written: the full scans of loopback, the gateway and the host's addresses are what
    would find it."""
    from tests.integration.test_github_action import ROOT, Job, runner_env, write_event
    from tests.integration.test_gitlab_template import git

    image_bin = host_dir / "image-bin"
    image_bin.mkdir()
    (image_bin / "aeval").symlink_to(AEVAL)
    base_env = runner_env(image_bin) | {"PREFECT_HOME": str(host_dir / "prefect-home"),
                                        "AEVAL_RETRIES": "0"}
    base_env.pop("TMPDIR", None)

    def start(targets: dict) -> tuple[Path | None, str]:
        repo = host_dir / "marketplace"
        repo.mkdir()
        (repo / "README.md").write_text("# Our skills\n")
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        base = git(repo, "rev-parse", "HEAD")
        add_port_audit(repo, targets)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "port-audit: a new skill")
        head = git(repo, "rev-parse", "HEAD")
        event = {"action": "synchronize", "number": 5, "pull_request": {
            "number": 5, "base": {"sha": base}, "head": {"sha": head, "repo": {
                "full_name": "acme/skills"}}}}
        job = Job(repo, base_env, {
            "repository": "acme/skills", "api_url": "http://127.0.0.1:9",
            "action_path": str(ROOT), "run_id": 7, "sha": head, "token": "",
            "event_name": "pull_request", "event": event,
            "event_path": write_event(host_dir / "event.json", event)},
            {"args": "--runtime literal --no-grader"}, host_dir / "artifacts")
        code = job.run()
        ran = {name: c for name, c, _ in job.ran}
        why = f"the job exited {code}, steps {ran}:\n{job.output()[-3000:]}"
        assert "Evaluate the changed skills" in ran and "Install aeval" not in ran, why
        assert job.ctx["steps"]["run"]["outputs"]["exit-code"] == str(code), why
        runs = sorted((repo / ".aeval" / "runs").glob("*/run.json"))
        return (runs[-1].parent if runs else None), why

    assert_reaches_nothing(audit_through("GitHub Action", {}, host_dir, start))
