"""Issue 29, item 4: `aeval run --dask tcp://...` asks every real `dask worker` process, before
anything runs, whether it can run the cases (`aeval.tasks._engine.runners.dask_preflight`). The
checks test_dask.py does not cover: a worker whose installed aeval is another version, a worker that
cannot see the skills, a worker without bash on PATH. Each ends the run with exit 2 and one
`aeval:` line naming the worker and only what is wrong with it, before any flow (the Prefect
API is a closed port: nothing asks it) and with nothing written to the run store.

The workers are real processes started by `dask worker`; where a worker must see another file
system than this process (another aeval's metadata, no skills folder), it runs in a mount
namespace of real bubblewrap (`--dev-bind / /` plus one mount), as a worker on another machine
sees its own disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_dask import EXAMPLES, _refusal, scheduler  # noqa: F401 (fixture)

pytest.importorskip("prefect_dask",
                    reason="prefect-dask not installed: pip install 'aeval-skills[dask]'")

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

AEVAL = str(Path(sys.executable).parent / "aeval")
CLOSED_API = "http://127.0.0.1:9/api"  # the refusal comes before any Prefect request
BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="bubblewrap (bwrap) not installed")


def aeval_on(address: str, skill: Path, store: Path) -> subprocess.CompletedProcess:
    """`aeval run SKILL --runtime literal --dask ADDRESS --sandbox none` (the sandbox mode is
    not what these tests are about; the scheduler is plain TCP on loopback:
    --dask-allow-insecure-tcp)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env["PREFECT_API_URL"] = CLOSED_API
    return subprocess.run([AEVAL, "run", str(skill), "--out", str(store), "--runtime",
                           "literal", "--dask", address, "--dask-allow-insecure-tcp",
                           "--sandbox", "none"], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def assert_refused(done: subprocess.CompletedProcess, address: str, worker: str,
                   problem: str, store: Path) -> None:
    """Exit 2, the one line naming ``worker`` and exactly ``problem``, nothing in the store."""
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-3000:]
    line = _refusal(done)
    assert line == f"aeval: --dask {address}: worker {worker} cannot run the cases: {problem}", \
        line
    assert not (store / "runs").exists(), list(store.rglob("*"))


def aeval_metadata(cwd: Path) -> Path:
    """The METADATA file of the installed aeval-skills distribution as a `dask worker` process
    finds it (what its `aeval.__version__` reads): asked of a fresh interpreter outside the
    checkout, whose own ``*.egg-info`` an interpreter started in it would find first."""
    code = ("from importlib.metadata import distribution\n"
            "d = distribution('aeval-skills')\n"
            "print(*[f.locate() for f in d.files or () if f.name == 'METADATA'], sep='\\n')")
    found = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                           text=True, timeout=60, check=True).stdout.split()
    assert found, "aeval-skills has no METADATA file"
    return Path(found[0]).resolve()


@needs_bwrap
def test_a_worker_with_another_aeval_version_is_refused(scheduler, tmp_path):  # noqa: F811
    """The worker's installed aeval says 0.0.1 (its dist-info METADATA, seen in the worker's
    own mount namespace: what an older `pip install` leaves on a worker machine); this
    process's says its own version. A healthy worker beside it is not named."""
    import aeval

    address, start_worker = scheduler
    metadata = aeval_metadata(tmp_path)
    other = tmp_path / "METADATA"
    lines = metadata.read_text(encoding="utf-8").splitlines(keepends=True)
    assert any(line.startswith("Version: ") for line in lines)
    other.write_text("".join("Version: 0.0.1\n" if line.startswith("Version: ") else line
                             for line in lines), encoding="utf-8")
    assert aeval.__version__ != "0.0.1"
    healthy = start_worker(dict(os.environ))
    older = start_worker(dict(os.environ), (BWRAP, "--dev-bind", "/", "/", "--ro-bind",
                                            str(other), str(metadata), "--die-with-parent",
                                            "--"))
    store = tmp_path / "store"
    done = aeval_on(address, EXAMPLES / "skills" / "hello-docs", store)
    assert_refused(done, address, older,
                   f"aeval 0.0.1, not {aeval.__version__} as the caller's", store)
    assert healthy not in done.stderr


@needs_bwrap
def test_a_worker_that_cannot_see_the_skills_is_refused(scheduler, tmp_path):  # noqa: F811
    """The skills folder exists here and is an empty folder in the worker's mount namespace
    (the run store, elsewhere, it sees): the line names the skill path it cannot see."""
    address, start_worker = scheduler
    skills = tmp_path / "skills"
    skill = skills / "hello-docs"
    shutil.copytree(EXAMPLES / "skills" / "hello-docs", skill)
    worker = start_worker(dict(os.environ), (BWRAP, "--dev-bind", "/", "/", "--tmpfs",
                                             str(skills), "--die-with-parent", "--"))
    store = tmp_path / "store"
    done = aeval_on(address, skill, store)
    assert_refused(done, address, worker, f"cannot see the skills at {skill.resolve()}", store)


def test_a_worker_without_bash_on_path_is_refused(scheduler, tmp_path):  # noqa: F811
    """The worker's PATH holds aeval's venv and a folder of the usual tools, but no bash
    (every step and check of a case runs through bash)."""
    address, start_worker = scheduler
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("sh", "env", "ls", "cat", "git"):
        if found := shutil.which(tool):
            (bindir / tool).symlink_to(found)
    path = f"{bindir}{os.pathsep}{Path(sys.executable).parent}"
    assert shutil.which("bash", path=path) is None
    worker = start_worker({**os.environ, "PATH": path})
    store = tmp_path / "store"
    done = aeval_on(address, EXAMPLES / "skills" / "hello-docs", store)
    assert_refused(done, address, worker, "bash not found on PATH", store)


def test_workers_run_no_profiler_a_thread_start_can_deadlock_on(scheduler):  # noqa: F811
    """Dask's worker profiler calls sys._current_frames() every 10 ms, and on CPython before
    3.11.9 that can deadlock a worker whose tasks start threads (gh-106883: a 1,000-case
    `--dask local` run stopped at 1,096 of 1,100 case runs, for good). A `dask worker`
    started with `--preload aeval.flows.runners`, as the README says, and the workers of
    aeval's own LocalCluster run no profiler; the same worker without the preload does."""
    from distributed import Client, LocalCluster

    from aeval.tasks._engine.runners import local_cluster_kwargs

    def _profiling(dask_worker) -> list[str]:  # run on a worker (pickled by value)
        return sorted(name for name, pc in dask_worker.periodic_callbacks.items()
                      if name.startswith("profile") and pc.is_running())

    address, start_worker = scheduler
    preloaded = start_worker(dict(os.environ))
    plain = start_worker(dict(os.environ), preload=False)
    with Client(address, timeout=60) as client:
        got = client.run(_profiling)
    assert got == {preloaded: [], plain: ["profile", "profile-cycle"]}, got
    with LocalCluster(**{**local_cluster_kwargs(2), "dashboard_address": None}) as cluster, \
            Client(cluster) as client:
        got = client.run(_profiling)
    assert len(got) == 2 and all(v == [] for v in got.values()), got
