"""The deployment path end to end, on a real Prefect server on loopback.

`prefect server start` (own PREFECT_HOME) <- `python -m aeval.deployments.serve` (the MR deployment)
<- `prefect deployment run 'aeval-mr/mr' --param ... --watch`: the CI template's aeval-prefect
script, run by bash with CI's variables, on a git repository whose second commit changes one
skill. Then, through the Prefect API: the MR flow run and its evaluate subflow completed, task
runs are named per case, and the artifacts (a table per skill, the run summary) exist. Also
`prefect deploy --all` with prefect.yaml.
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
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"prefect server exited {proc.returncode}:\n{tail(log)}")
            try:
                with urllib.request.urlopen(f"{api}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"prefect server not healthy after 90 s:\n{tail(log)}")
            time.sleep(0.5)
        yield {**env, "PREFECT_API_URL": api, "PREFECT_RUNNER_POLL_FREQUENCY": "2",
               "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO"}
    finally:
        stop(proc)


@pytest.fixture
def mr_repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A marketplace repository: the examples committed, then csv-stats changed. Returns the
    repository, the base and the head commit."""
    repo = tmp_path / "marketplace"
    shutil.copytree(EXAMPLES, repo)
    sh(repo, "init", "-q", "-b", "main")
    sh(repo, "add", "-A")
    sh(repo, "commit", "-q", "-m", "base")
    base = sh(repo, "rev-parse", "HEAD")
    skill_md = repo / "skills" / "csv-stats" / "SKILL.md"
    skill_md.write_text(skill_md.read_text() + "\nSee fixtures/data.csv for an example.\n")
    sh(repo, "commit", "-q", "-a", "-m", "csv-stats: mention the example")
    return repo, base, sh(repo, "rev-parse", "HEAD")


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


def test_mr_deployment_served_and_triggered_like_ci(server, mr_repo, tmp_path: Path):
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
    )

    repo, base, head = mr_repo
    work = tmp_path / "serve"
    work.mkdir()
    env = dict(server)
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        serve = subprocess.Popen([sys.executable, "-m", "aeval.deployments.serve", "--no-schedule"],
                                 cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_deployment(server, "aeval-mr/mr", serve, log)
        # exactly the command of the CI template's aeval-prefect job, with CI's variables
        ci = yaml.safe_load(TEMPLATE.read_text())
        (command,) = ci["aeval-prefect"]["script"]
        ci_env = {**server, **ci["variables"], "AEVAL_PREFECT_REPO": str(repo),
                  "CI_MERGE_REQUEST_DIFF_BASE_SHA": base, "CI_COMMIT_SHA": head,
                  "CI_MERGE_REQUEST_IID": "7", "CI_PROJECT_ID": "42",
                  "CI_SERVER_URL": "http://127.0.0.1:9",
                  "PATH": os.pathsep.join((str(Path(PREFECT).parent), os.environ["PATH"]))}
        run = subprocess.run(["bash", "-c", f"{command} --watch-timeout 150"], env=ci_env,
                             capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, (f"{command}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}\n"
                                     f"serve log:\n{tail(log, 60)}")
        assert "Completed" in run.stdout

        with api_client(server) as client:
            dep = client.read_deployment_by_name("aeval-mr/mr")
            defaults = dep.parameters["request"]
            assert defaults["repo"] == "." and defaults["post"] is False
            (mr,) = client.read_flow_runs(deployment_filter=DeploymentFilter(
                id=DeploymentFilterId(any_=[dep.id])))
            assert mr.state.is_completed(), mr.state
            assert mr.name.startswith("mr 7: ")
            req = mr.parameters["request"]
            assert req["base"] == base and req["head"] == head
            assert req["mr_iid"] == 7 and req["post"] is False
            assert req["project_id"] == "42"  # a string, as MrRequest declares
            (child,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[mr.id])))
            assert child.state.is_completed(), child.state
            assert child.name.startswith("evaluate ")
            tasks = {t.name for t in client.read_task_runs(flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[child.id])))}
            assert {"case csv-stats/stats [literal]", "execute csv-stats/stats [literal]",
                    "case csv-stats/summary [literal]"} <= tasks, tasks
            assert not any("segmentation" in t for t in tasks), "only the changed skill runs"
            arts = {a.key: a for a in client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[child.id])))}
        assert arts["skill-csv-stats"].type == "table"
        assert arts["run-summary"].type == "markdown"
        assert "Gate: exit 0" in arts["run-summary"].data

        # the run store sits in the serving process's working directory (store=".aeval")
        (manifest,) = (work / ".aeval" / "runs").glob("*/run.json")
        done = json.loads(manifest.read_text())
        assert done["base"] == base and done["head"] == head
        assert [s["name"] for s in done["skills"]] == ["csv-stats"]
        assert done["gate"]["exit_code"] == 0

        # a change to a broken skill: the MR flow run ends Failed with the gate as its
        # message, `--watch` fails the CI job, and the engine logs no traceback
        run_md = repo / "skills" / "segmentation" / "SKILL.md"
        run_md.write_text(run_md.read_text() + "\nTrain on CPU first.\n")
        sh(repo, "commit", "-q", "-a", "-m", "segmentation: a note")
        ci_env.update(CI_MERGE_REQUEST_DIFF_BASE_SHA=head, CI_COMMIT_SHA=sh(repo, "rev-parse",
                                                                             "HEAD"))
        failed = subprocess.run(["bash", "-c", f"{command} --watch-timeout 150"], env=ci_env,
                                capture_output=True, text=True, timeout=180)
        assert failed.returncode != 0, failed.stdout[-2000:]
        with api_client(server) as client:
            runs = client.read_flow_runs(deployment_filter=DeploymentFilter(
                id=DeploymentFilterId(any_=[dep.id])))
        (second,) = [r for r in runs if r.id != mr.id]
        assert second.state.is_failed(), second.state
        assert second.state.message.startswith("aeval gate: exit 1: "), second.state.message
        served = log.read_text(errors="replace")
        assert "Traceback" not in served and "Unexpected result" not in served, tail(log, 80)
    finally:
        stop(serve)


def test_prefect_deploy_all_with_prefect_yaml(server):
    """`prefect deploy --all` accepts prefect.yaml from the project root, as documented."""
    env = dict(server)
    pool = subprocess.run([PREFECT, "work-pool", "create", "aeval", "--type", "process"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert pool.returncode == 0, pool.stdout + pool.stderr
    deploy = subprocess.run(
        [PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file",
         "deployments/prefect.yaml"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=90)
    assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]

    from aeval.deployments.serve import DEPLOYMENTS

    with api_client(server) as client:
        for spec in DEPLOYMENTS:
            dep = client.read_deployment_by_name(spec.full_name)
            assert dep.entrypoint == spec.entrypoint
            assert dep.parameters == spec.parameters
            assert dep.work_pool_name == "aeval"
            assert [s.schedule.cron for s in dep.schedules] == (
                [spec.cron] if spec.cron else [])
            assert dep.pull_steps == [{"prefect.deployments.steps.set_working_directory": {
                "directory": "{{ $AEVAL_PROJECT_DIR }}"}}]
