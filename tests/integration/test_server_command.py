"""What a run leaves running, said and stoppable (issue 46): the first `aeval run` outside CI
says it starts the local Prefect server that later runs reuse and how to stop it; a later run
says which server it uses; `aeval server status` shows the server and the warm process, and
`aeval server stop` stops both (refusing while a run uses the server, unless --force). A
folder without a skill is refused before anything starts.

Real `aeval` processes on a PREFECT_HOME of the test's own (outside /tmp, as ~/.prefect is),
with the warm process on, as a user's shell has them."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from aeval.tasks._engine.servers.home import WARM_LOCK
from aeval.tasks._engine.servers.reused import CLIENTS_LOCK, open_lock
from tests.integration.test_reused_server import (
    AEVAL,
    digest_skill,
    env_for,
    home,  # noqa: F401 (fixture)
    server_pids,
    the_record,
)
from tests.procs import alive

pytestmark = pytest.mark.integration


def aeval(env: dict[str, str], *args: str, timeout: float = 300) -> tuple[int, str, str]:
    proc = subprocess.run([AEVAL, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def warm_pid(state: Path) -> int | None:
    """The warm process of PREFECT_HOME ``state`` (its lock holds its pid), when alive."""
    path = state / "aeval-server" / WARM_LOCK
    with contextlib.suppress(OSError, ValueError):
        pid = int(path.read_text().strip())
        if pid in alive("aeval.deployments.servers.warm"):
            return pid
    return None


def wait_for(predicate, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def warm_home(home):  # noqa: F811
    yield home
    if (pid := warm_pid(home)) is not None:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def test_a_run_says_what_it_leaves_running_and_server_stop_stops_it(tmp_path, warm_home):
    env = {**env_for(warm_home), "AEVAL_WARM": "1"}
    skill = digest_skill(tmp_path, follow_s=0, cases=1)
    code, out, err = aeval(env, "run", str(skill), "--out", str(tmp_path / "store"))
    assert code == 0, out[-2000:] + err[-2000:]
    assert "starting the local Prefect server (kept 10 min idle for later runs; " \
           "`aeval server stop`)" in out, out[:1500]
    record = the_record(warm_home)
    assert wait_for(lambda: warm_pid(warm_home) is not None), "no warm process after the run"

    code, out, err = aeval(env, "run", str(skill), "--out", str(tmp_path / "store"))
    assert code == 0, out[-2000:] + err[-2000:]
    assert f"using the local Prefect server (pid {record.pid}; kept 10 min idle" in out

    code, out, err = aeval(env, "server", "status")
    assert code == 0, err
    assert f"local Prefect server: pid {record.pid}, http://127.0.0.1:{record.port}/api" in out
    warm = warm_pid(warm_home)
    assert warm is not None and f"warm process: pid {warm}" in out

    code, out, err = aeval(env, "server", "stop")
    assert code == 0, err
    assert f"stopped the warm process (pid {warm})" in out
    assert f"stopped the local Prefect server (pid {record.pid}, port {record.port})" in out
    assert wait_for(lambda: not server_pids(warm_home) and warm_pid(warm_home) is None, 30)
    code, out, _ = aeval(env, "server", "status")
    assert "local Prefect server: not running" in out and "warm process: not running" in out
    code, out, _ = aeval(env, "server", "stop")
    assert (code, out.strip()) == (0, "nothing running")


def test_server_stop_refuses_while_a_run_uses_the_server_unless_forced(tmp_path, warm_home):
    env = env_for(warm_home)
    skill = digest_skill(tmp_path, follow_s=0, cases=1)
    code, out, err = aeval(env, "run", str(skill), "--out", str(tmp_path / "store"))
    assert code == 0, out[-2000:] + err[-2000:]
    record = the_record(warm_home)
    lease = open_lock(warm_home / "aeval-server", CLIENTS_LOCK)  # what a running run holds
    try:
        fcntl.flock(lease, fcntl.LOCK_SH)
        code, out, err = aeval(env, "server", "stop")
        assert code == 2 and "a run is using the local Prefect server" in err, (out, err)
        assert server_pids(warm_home) == [record.pid]
        code, out, err = aeval(env, "server", "stop", "--force")
        assert code == 0 and f"stopped the local Prefect server (pid {record.pid}" in out
        assert wait_for(lambda: not server_pids(warm_home), 30)
    finally:
        os.close(lease)


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_folder_without_a_skill_is_refused_before_anything_starts(tmp_path, home,  # noqa: F811
                                                                    command):
    empty = tmp_path / "marketplace"
    (empty / "docs").mkdir(parents=True)
    (empty / "docs" / "README.md").write_text("# Our skills\n\nComing soon.\n")
    code, out, err = aeval(env_for(home), command, str(empty), "--out", str(tmp_path / "s"))
    assert code == 2, (out, err)
    assert err.strip() == f"{empty}: no SKILL.md found"
    assert "Prefect" not in out + err
    assert not (home / "aeval-server").exists(), "a server was started for nothing"
    assert not (tmp_path / "s").exists(), "a run was recorded for nothing"


@pytest.mark.parametrize("argv", [
    ["run", "{skill}", "--dask", "localhost:8786"],
    ["run", "{skill}", "--dask", "tcp://127.0.0.1:9"],
    ["sweep", "{marketplace}", "--dask-allow-insecure-tcp"],
    ["run", "--resume", "20261207-000000-abcdef", "--dask", "local:8786"],
], ids=["no-scheme", "plain-tcp", "insecure-without-dask", "resume"])
def test_a_dask_argument_that_is_no_way_to_run_is_refused_before_anything_starts(
        tmp_path, home, marketplace, argv):  # noqa: F811
    """The address alone says it: one line naming --dask and exit 2, without a Prefect
    server started (it took 5 s to say so after one) or a run recorded."""
    argv = [a.format(skill=marketplace / "skills" / "hello-docs", marketplace=marketplace)
            for a in argv]
    code, out, err = aeval(env_for(home), *argv, "--out", str(tmp_path / "s"))
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "--dask" in err, err
    assert "Prefect" not in out + err
    assert not (home / "aeval-server").exists(), "a server was started for nothing"
    assert not (tmp_path / "s").exists(), "a run was recorded for nothing"


@pytest.mark.parametrize("since", ["origin/main", "HEAD~1"],
                         ids=["unknown-ref", "no-skill-changed"])
def test_a_change_that_ends_the_run_ends_it_before_anything_starts(tmp_path, home,  # noqa: F811
                                                                    marketplace, since):
    """A merge request's CI job: a base the clone does not have is one line and exit 2; a
    change that touches no skill (docs only) says so and exits 0. Neither starts a Prefect
    server nor records a run."""
    def git(*argv: str) -> None:
        subprocess.run(["git", "-C", str(marketplace), *argv], check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x",
                            "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"})

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "skills")
    (marketplace / "README.md").write_text("# Our skills\n\nNow with a table of contents.\n")
    git("add", "-A")
    git("commit", "-qm", "docs: a table of contents")
    code, out, err = aeval(env_for(home), "run", str(marketplace), "--changed-since", since,
                           "--out", str(tmp_path / "s"))
    if since == "origin/main":
        assert code == 2 and len(err.strip().splitlines()) == 1, (out, err)
        assert "origin/main" in err, err
    else:
        assert code == 0 and "no skill changed since HEAD~1: nothing to evaluate" in out, \
            (out, err)
    assert "Prefect" not in out + err
    assert not (home / "aeval-server").exists(), "a server was started for nothing"
    assert not (tmp_path / "s").exists(), "a run was recorded for nothing"
