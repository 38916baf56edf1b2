"""The deployment path end to end, on a real Prefect server on loopback.

`prefect server start` (own PREFECT_HOME) <- `python -m aeval.deployments.serve` (the MR
deployment, the nightly with --marketplace) <- the CI template's aeval-prefect script
(`aeval trigger`), run by bash with CI's variables, on a git repository checked out at base
whose branches hold a good and a defective head. Through the Prefect API: flow runs and the
failing case's task run are Failed (named states), the other MR's run is not disturbed,
`aeval.run.finished` events carry the gates, the CI job gets junit.xml and the Code Quality
report. Also the nightly's marketplace, and `prefect deploy --all` with prefect.yaml beside
`serve`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "marketplace"
TEMPLATE = ROOT / "deployments" / "gitlab" / "aeval.gitlab-ci.yml"
PREFECT = str(Path(sys.executable).parent / "prefect")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """Terminate the process group (the server and the runner start children), bounded."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    # children left in the group after the leader exited (SIGTERM races)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def tail(path: Path, n: int = 40) -> str:
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    return "\n".join(lines[-n:])


def wait_healthy(proc: subprocess.Popen, api: str, log: Path, timeout: float) -> None:
    """Until ``prefect server start`` answers /health; the test fails with its log's tail if
    it exits or stays unhealthy for ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            pytest.fail(f"prefect server exited {proc.returncode}:\n{tail(log)}")
        try:
            with urllib.request.urlopen(f"{api}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"prefect server not healthy after {timeout:.0f} s:\n{tail(log)}")
        time.sleep(0.5)


def sh(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c",
                           "user.name=t", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A real Prefect server on a free loopback port; yields the environment for its clients."""
    home = tmp_path_factory.mktemp("prefect-server")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(PREFECT_HOME=str(home / "home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_LOGGING_LEVEL="WARNING")
    log = home / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([PREFECT, "server", "start", "--host", "127.0.0.1", "--port",
                                 str(port)], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    api = f"http://127.0.0.1:{port}/api"
    try:
        wait_healthy(proc, api, log, 90)
        yield {**env, "PREFECT_API_URL": api, "PREFECT_RUNNER_POLL_FREQUENCY": "2",
               "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO"}
    finally:
        stop(proc)


@pytest.fixture
def mr_repo(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A marketplace repository: the examples committed (base); on one branch csv-stats
    changed harmlessly (good head), on another its script broken (defective head); the
    working tree checked out at base, as a serving checkout that nobody updated would be.
    Returns the repository, base, good head and defective head."""
    repo = tmp_path / "marketplace"
    shutil.copytree(EXAMPLES, repo)
    sh(repo, "init", "-q", "-b", "main")
    sh(repo, "add", "-A")
    sh(repo, "commit", "-q", "-m", "base")
    base = sh(repo, "rev-parse", "HEAD")
    skill_md = repo / "skills" / "csv-stats" / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "\nSee fixtures/data.csv for an example.\n")
    sh(repo, "commit", "-q", "-a", "-m", "csv-stats: mention the example")
    good = sh(repo, "rev-parse", "HEAD")
    sh(repo, "checkout", "-q", "-b", "broken", base)
    script = repo / "skills" / "csv-stats" / "scripts" / "stats.py"
    script.write_text(script.read_text().replace("--out", "--output"))
    sh(repo, "commit", "-q", "-a", "-m", "csv-stats: rename --out (the docs still say --out)")
    bad = sh(repo, "rev-parse", "HEAD")
    sh(repo, "checkout", "-q", base)
    return repo, base, good, bad


def api_client(env: dict[str, str]):
    """A sync Prefect client on the test server (whatever this process's settings say)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}):
        return get_client(sync_client=True)


def wait_for_deployment(env: dict[str, str], name: str, proc: subprocess.Popen,
                        log: Path, timeout: float = 60) -> None:
    from prefect.exceptions import ObjectNotFound

    deadline = time.monotonic() + timeout
    with api_client(env) as client:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"serve exited {proc.returncode}:\n{tail(log)}")
            try:
                client.read_deployment_by_name(name)
                return
            except ObjectNotFound:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} not served after {timeout} s:\n{tail(log)}")
            time.sleep(0.5)


def start_serve(env: dict[str, str], cwd: Path, log: Path, *args: str) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "aeval.deployments.serve", *args],
                                cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def aeval_prefect_job(server: dict[str, str], repo: Path, base: str, head: str, iid: str,
                      job_dir: Path) -> subprocess.Popen:
    """The CI template's aeval-prefect script, run by bash in a job folder of its own with
    CI's variables (the template's own variables first, as GitLab sets them)."""
    ci = list(yaml.safe_load_all(TEMPLATE.read_text()))[1]
    (command,) = ci["aeval-prefect"]["script"]
    job_dir.mkdir()
    env = {**server, **{k: v for k, v in ci["variables"].items() if "$[[" not in v},
           "AEVAL_PREFECT_REPO": str(repo), "AEVAL_PREFECT_TIMEOUT": "170",
           "CI_MERGE_REQUEST_DIFF_BASE_SHA": base, "CI_COMMIT_SHA": head,
           "CI_MERGE_REQUEST_IID": iid, "CI_PROJECT_ID": "42",
           "CI_SERVER_URL": "http://127.0.0.1:9", "CI_PROJECT_DIR": str(job_dir),
           "PATH": os.pathsep.join((str(Path(PREFECT).parent), os.environ["PATH"]))}
    env["AEVAL_CACHE_DIR"] = str(job_dir / ".aeval-cache")
    return subprocess.Popen(["bash", "-c", command], cwd=job_dir, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def events_named(server: dict[str, str], name: str, timeout: float = 30,
                 count: int = 1) -> list[dict]:
    """Events of this name the server stored, once there are ``count`` of them or the time is
    up (the server persists events in the background, in batches: two runs that ended
    together can have their events stored seconds apart)."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        r = httpx.post(f"{server['PREFECT_API_URL']}/events/filter", timeout=10,
                       json={"filter": {"event": {"name": [name]}}, "limit": 50})
        if r.status_code in (429, 503) and time.monotonic() < deadline:  # busy: ask again
            time.sleep(0.5)
            continue
        r.raise_for_status()
        found = r.json()["events"]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(1)


def test_mr_deployment_evaluates_each_mr_head_in_its_own_clone(server, mr_repo, tmp_path):
    """Served from a folder that is not the marketplace, with the marketplace checked out at
    base: two MRs triggered at once by the template's aeval-prefect job (aeval trigger), one
    whose head is fine, one whose head breaks csv-stats. Each run clones the repository at its
    own head: the defective one fails (exit 1, Failed flow run, Failed `SkillDefect` task run,
    an aeval.run.finished event with the gate), the other passes, and neither sees the
    other's code or the serving checkout's."""
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
    )

    repo, base, good, bad = mr_repo
    work = tmp_path / "serve"
    work.mkdir()
    log = tmp_path / "serve.log"
    serve = start_serve(server, work, log, "--no-schedule")  # the MR deployment alone
    try:
        wait_for_deployment(server, "aeval-mr/mr", serve, log)
        jobs = {"good": aeval_prefect_job(server, repo, base, good, "7", tmp_path / "job-7"),
                "bad": aeval_prefect_job(server, repo, base, bad, "8", tmp_path / "job-8")}
        out = {k: p.communicate(timeout=200)[0] for k, p in jobs.items()}
        codes = {k: p.returncode for k, p in jobs.items()}
        assert codes == {"good": 0, "bad": 1}, f"{out}\nserve log:\n{tail(log, 60)}"
        assert "aeval gate: exit 1: " in out["bad"] and "csv-stats/stats" in out["bad"]
        # the serving checkout was never used: still at base, untouched
        assert sh(repo, "rev-parse", "HEAD") == base and not sh(repo, "status", "--porcelain")

        with api_client(server) as client:
            dep = client.read_deployment_by_name("aeval-mr/mr")
            runs = {r.parameters["request"]["mr_iid"]: r for r in client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id])))}
            assert set(runs) == {7, 8}
            assert runs[7].state.is_completed(), runs[7].state
            failed = runs[8]
            assert failed.state.is_failed(), failed.state
            assert failed.state.message.startswith("aeval gate: exit 1: "), failed.state.message
            assert failed.name == f"mr 8: {base[:12]}...{bad[:12]}"
            (child,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[failed.id])))
            assert child.state.is_failed() and child.name.startswith("evaluate ")
            tasks = {t.name: t for t in client.read_task_runs(flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[child.id])))}
        case = tasks["case csv-stats/stats [literal]"]
        assert case.state.is_failed() and case.state.name == "SkillDefect", case.state
        assert not any("segmentation" in t for t in tasks), "only the changed skill runs"

        # each run recorded its own head, and the CI job got its reports
        for iid, head, verdict in (("7", good, 0), ("8", bad, 1)):
            (manifest,) = (tmp_path / f"job-{iid}" / ".aeval" / "runs").glob("*/junit.xml")
            served = json.loads((work / ".aeval" / "runs" / manifest.parent.name /
                                 "run.json").read_text())
            assert served["head"] == head and served["gate"]["exit_code"] == verdict
            junit = manifest.read_text()
            assert ("<failure" in junit) == (verdict == 1), junit
            assert (manifest.parent / "gl-code-quality.json").is_file()

        finished = events_named(server, "aeval.run.finished", count=2)
        gates = {e["payload"]["run_id"]: e["payload"]["gate"]["exit_code"] for e in finished}
        assert sorted(gates.values()) == [0, 1], finished
        served_log = log.read_text(errors="replace")
        assert "Traceback" not in served_log, tail(log, 80)
    finally:
        stop(serve)


def test_the_served_nightly_sweeps_only_the_marketplace_it_is_given(server, mr_repo, tmp_path):
    """Without --marketplace no nightly is served (its marketplace was `.`, the serving
    folder: aeval itself); with one, the deployment names it and a run fails when a case
    fails, with the gate as its message."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    repo, _base, _good, bad = mr_repo
    sh(repo, "checkout", "-q", bad)
    log = tmp_path / "serve.log"
    serve = start_serve(server, ROOT, log, "--no-schedule")  # from aeval's own checkout
    try:
        wait_for_deployment(server, "aeval-mr/mr", serve, log)
        from prefect.exceptions import ObjectNotFound

        with api_client(server) as client, pytest.raises(ObjectNotFound):
            client.read_deployment_by_name("aeval-sweep/nightly")
        deadline = time.monotonic() + 30  # the serve log may lag its deployments on a busy box
        while "aeval-sweep/nightly not served" not in log.read_text() \
                and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "aeval-sweep/nightly not served: no --marketplace" in log.read_text()
    finally:
        stop(serve)
    serve = start_serve(server, tmp_path, log, "--no-schedule", "--marketplace", str(repo))
    try:
        wait_for_deployment(server, "aeval-sweep/nightly", serve, log)
        with api_client(server) as client:
            dep = client.read_deployment_by_name("aeval-sweep/nightly")
        assert dep.parameters["request"]["marketplace"] == str(repo)
        run = subprocess.run([PREFECT, "deployment", "run", "aeval-sweep/nightly", "--watch",
                              "--watch-timeout", "170", "--param",
                              "request=" + json.dumps({"marketplace": str(repo),
                                                       "epochs": 1})],
                             env=server, capture_output=True, text=True, timeout=200)
        assert run.returncode != 0, run.stdout[-2000:]
        with api_client(server) as client:
            (sweep_run,) = client.read_flow_runs(deployment_filter=DeploymentFilter(
                id=DeploymentFilterId(any_=[dep.id])))
        assert sweep_run.state.is_failed(), sweep_run.state
        assert sweep_run.state.message.startswith("aeval gate: exit 1: ")
        assert (tmp_path / ".aeval" / "baselines.json").is_file()
    finally:
        stop(serve)


def test_prefect_deploy_all_with_prefect_yaml_beside_serve(server, tmp_path):
    """`prefect deploy --all` accepts prefect.yaml from anywhere (module entrypoints, aeval
    installed), fills the nightly's marketplace from AEVAL_MARKETPLACE, and its -pool names
    leave the served deployments alone; serve refuses to take over a deployment of its own
    name that a work pool holds (it did so silently, and the next run crashed on `/None`)."""
    env = dict(server)
    pool = subprocess.run([PREFECT, "work-pool", "create", "aeval", "--type", "process"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert pool.returncode == 0, pool.stdout + pool.stderr
    where = tmp_path / "elsewhere"
    where.mkdir()
    deploy = subprocess.run(
        [PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file",
         str(ROOT / "deployments" / "prefect.yaml")], cwd=where,
        env={**env, "AEVAL_MARKETPLACE": "https://gitlab.example.com/skills/mp.git"},
        capture_output=True, text=True, timeout=90)
    assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]

    from aeval.deployments.serve import DEPLOYMENTS, POOL_SUFFIX

    with api_client(server) as client:
        for spec in DEPLOYMENTS:
            dep = client.read_deployment_by_name(spec.full_name + POOL_SUFFIX)
            assert dep.entrypoint == spec.entrypoint
            assert dep.work_pool_name == "aeval"
            assert [s.schedule.cron for s in dep.schedules] == (
                [spec.cron] if spec.cron else [])
            assert dep.pull_steps == [{"prefect.deployments.steps.set_working_directory": {
                "directory": "{{ $AEVAL_WORKDIR }}"}}]
        nightly = client.read_deployment_by_name("aeval-sweep/nightly" + POOL_SUFFIX)
        assert nightly.parameters["request"]["marketplace"] == \
            "https://gitlab.example.com/skills/mp.git"

    # serve beside them: its own names, the pool's deployments unchanged
    log = tmp_path / "serve.log"
    serve = start_serve(server, tmp_path, log, "--no-schedule")
    try:
        wait_for_deployment(server, "aeval-mr/mr", serve, log)
        with api_client(server) as client:
            assert client.read_deployment_by_name("aeval-mr/mr").work_pool_name is None
            assert client.read_deployment_by_name("aeval-mr/mr-pool").work_pool_name == "aeval"
    finally:
        stop(serve)

    # a deployment of serve's own name bound to the pool (an older prefect.yaml): refused
    with api_client(server) as client:
        flow_id = client.read_deployment_by_name("aeval-mr/mr-pool").flow_id
        client.delete_deployment(client.read_deployment_by_name("aeval-mr/mr").id)
        client.create_deployment(flow_id=flow_id, name="mr", work_pool_name="aeval",
                                 entrypoint="aeval.flows.mr.evaluate_mr")
    refused = subprocess.run([sys.executable, "-m", "aeval.deployments.serve", "--no-schedule"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith("serve: aeval-mr/mr exists on this server as a "
                                     "deployment of work pool 'aeval'"), refused.stderr
    with api_client(server) as client:
        assert client.read_deployment_by_name("aeval-mr/mr").work_pool_name == "aeval"
