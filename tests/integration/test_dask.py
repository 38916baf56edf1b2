"""`aeval run --dask local`: the evaluate flow on a local Dask cluster (worker processes, so
every plan, record and exception crosses a process boundary) gives the verdicts of the default
thread pool, an environment error included."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("prefect_dask",
                    reason="prefect-dask not installed: pip install 'aeval-skills[dask]'")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "marketplace"
AEVAL = str(Path(sys.executable).parent / "aeval")
MISSING = "DASKTEST_NOT_SET_TOKEN"

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

EXPECTED = {
    ("csv-stats", "stats"): "pass",
    ("csv-stats", "summary"): "pass",
    ("hello-docs", "smoke"): "pass",
    ("release-notes", "notes"): "pass",
    ("segmentation", "inference"): "fail",
    ("segmentation", "train"): "fail",
    ("invoice-totals", "totals"): "fail",
    ("needs-secret", "uses-token"): "error",  # execute raises MissingCredential
    # SKILL.md's own doc tests beside the contracts (literal)
    ("csv-stats", "skill-md"): "untested",
    ("invoice-totals", "skill-md"): "fail",
    ("release-notes", "skill-md"): "untested",
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example marketplace plus a skill whose case needs a credential that is not set, and
    a PREFECT_HOME shared by the runs of this module (migrated once)."""
    root = tmp_path_factory.mktemp("dask")
    market = root / "marketplace"
    shutil.copytree(EXAMPLES, market)
    skill = market / "skills" / "needs-secret"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: needs-secret\ndescription: Calls a service "
                                    "with a token.\n---\nRun `echo ok`.\n")
    (skill / "eval.config").write_text(json.dumps({"evals": [{
        "id": "uses-token", "prompt": "Call the service.", "expected_outcome": "ok printed",
        "required_credentials": [MISSING], "steps": ["echo ok"],
        "assertions": [{"type": "transcript_contains", "text": "ok"}]}]}))
    return root


def run(workdir: Path, name: str, *extra: str) -> tuple[int, dict, str]:
    """``aeval run`` on the marketplace copy; the exit code, run.json and the output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.pop(MISSING, None)
    env.update(PREFECT_HOME=str(workdir / "prefect-home"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    out = workdir / name
    proc = subprocess.run([AEVAL, "run", str(workdir / "marketplace"), "--out", str(out),
                           "--no-grader", "--concurrency", "2", *extra], env=env,
                          capture_output=True, text=True, timeout=240)
    output = proc.stdout + proc.stderr[-4000:]
    manifests = list((out / "runs").glob("*/run.json"))
    assert len(manifests) == 1, output
    return proc.returncode, json.loads(manifests[0].read_text()), output


def verdicts(manifest: dict) -> dict[tuple[str, str], str]:
    return {(s["name"], c["case_id"]): c["status"] for s in manifest["skills"]
            for c in s["cases"]}


@pytest.fixture(scope="module")
def default_run(workdir: Path) -> tuple[int, dict, str]:
    return run(workdir, "threads")


def test_default_runner_verdicts(default_run):
    code, manifest, output = default_run
    assert verdicts(manifest) == EXPECTED, output
    assert code == 1, output


def test_dask_local_gives_the_default_verdicts(workdir: Path, default_run):
    code, manifest, output = run(workdir, "dask", "--dask", "local")
    assert verdicts(manifest) == verdicts(default_run[1]) == EXPECTED, output
    assert code == default_run[0] == 1, output
    error = next(c for s in manifest["skills"] for c in s["cases"] if c["status"] == "error")
    assert "MissingCredential" in error["reason"] and MISSING in error["reason"]
    # the console shows each case as it ends, as with threads (the chains ran in workers)
    for s in manifest["skills"]:
        for c in s["cases"]:
            line = f"{s['name']}/{c['case_id']} [{c['runtime']}]: {c['status'].upper()}"
            assert line in output, (line, output)


def test_dask_argument_errors_are_usage_errors(workdir: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env["PREFECT_HOME"] = str(workdir / "prefect-home")
    for arg, message in (("localhost:8786", "tls://"),
                         ("tcp://127.0.0.1:9", "--dask-allow-insecure-tcp"),
                         ("tls://127.0.0.1:9", "PREFECT_API_URL")):
        proc = subprocess.run([AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"),
                               "--out", str(workdir / "unused"), "--dask", arg], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert message in proc.stderr


def test_model_calls_stay_bounded_across_dask_worker_processes(tmp_path: Path):
    """AEVAL_MODEL_CONCURRENCY bounds the model calls of the whole run, not of each worker
    process: with --dask the bound is a Prefect global concurrency limit."""
    from aeval.testing import ScriptedModelServer, Turn

    market = tmp_path / "marketplace"
    for name in ("ledger-a", "ledger-b", "ledger-c", "ledger-d"):
        d = market / name
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Totals the {name} "
                                    "ledger.\n---\nAnswer with the total.\n")
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": "total", "prompt": f"What does {name} total?",
            "expected_outcome": "the total", "assertions": [
                {"type": "transcript_contains", "text": "total is"}]}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), OPENAI_API_KEY="sk-scripted",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", AEVAL_MODEL_CONCURRENCY="1")
    delay = 1.5
    with ScriptedModelServer([], default=Turn(text="The total is 12.", delay_s=delay)) as srv:
        proc = subprocess.run([AEVAL, "run", str(market), "--out", str(tmp_path / "out"),
                               "--runtime", "builtin", "--model", "openai/scripted",
                               "--api-base", srv.base_url_openai, "--no-grader",
                               "--dask", "local", "--concurrency", "4"], env=env,
                              capture_output=True, text=True, timeout=240)
        starts = sorted(r.t for r in srv.requests if r.wire == "chat")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(starts) == 4
    # one call in flight at a time: each request arrives after the previous one was answered
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= delay - 0.1, gaps


# Issue 29, item 4: a remote Dask scheduler's workers are asked, before anything runs, whether
# they can run the cases (`aeval.tasks._engine.runners.dask_preflight`, through Client.run).

def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    import contextlib
    import signal

    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait)


DASK = str(Path(sys.executable).parent / "dask")


@pytest.fixture
def scheduler(tmp_path: Path):
    """A real `dask scheduler` on loopback; yields (address, start_worker), where
    start_worker(env, prefix) starts a real `dask worker` (under ``prefix``, e.g. a bwrap
    command line; with aeval's preload unless ``preload`` is False) with ``env`` and returns
    its address once the scheduler has it."""
    from distributed import Client

    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = []
    log = (tmp_path / "dask.log").open("wb")
    procs.append(subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port",
                                   str(port), "--no-dashboard"], stdout=log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True))

    def start_worker(env: dict[str, str], prefix: tuple[str, ...] = (),
                     preload: bool = True) -> str:
        with Client(address, timeout=60) as client:
            before = set(client.scheduler_info()["workers"])
            procs.append(subprocess.Popen(
                [*prefix, DASK, "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                 "--no-dashboard", "--no-nanny",
                 *(["--preload", "aeval.flows.runners"] if preload else [])],
                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True))
            client.wait_for_workers(len(before) + 1, timeout=90)
            (new,) = set(client.scheduler_info()["workers"]) - before
            return new

    try:
        yield address, start_worker
    finally:
        for proc in reversed(procs):
            _stop(proc)
        log.close()


@pytest.fixture(scope="module")
def prefect_api(tmp_path_factory: pytest.TempPathFactory):
    """A real Prefect server (aeval's server app on loopback) for the scheduler's workers."""
    from tests.api_proxy import prefect_server

    with prefect_server(tmp_path_factory.mktemp("dask-preflight") / "home") as (port, _env):
        yield f"http://127.0.0.1:{port}/api"


def _aeval_on(address: str, store: Path, api: str, *extra: str) -> subprocess.CompletedProcess:
    """`aeval run hello-docs --dask ADDRESS` reporting to the Prefect server at ``api`` (the
    scheduler is plain TCP on loopback: --dask-allow-insecure-tcp)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env["PREFECT_API_URL"] = api
    return subprocess.run([AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"), "--out",
                           str(store), "--runtime", "literal", "--dask", address,
                           "--dask-allow-insecure-tcp", *extra],
                          env=env, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def _refusal(proc: subprocess.CompletedProcess) -> str:
    """The one `aeval:` (or `aeval run:`, a usage error) line of a refused run (its other
    stderr lines are warnings)."""
    lines = [line for line in proc.stderr.splitlines()
             if line.startswith(("aeval: ", "aeval run: "))]
    assert len(lines) == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    return lines[0]


def test_a_worker_without_bubblewrap_refuses_a_sandbox_require_run(scheduler, prefect_api,
                                                                   tmp_path):
    """The worker's PATH has bash but no bwrap; this machine has bwrap, and --sandbox require:
    exit 2 before any case, one line naming the worker and bwrap, no run in the store (before:
    the run started and every case on that worker ended in an error of its own)."""
    address, start_worker = scheduler
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "bash").symlink_to(shutil.which("bash"))
    worker = start_worker({**os.environ, "PREFECT_API_URL": prefect_api,
                           "PATH": f"{bindir}{os.pathsep}{Path(sys.executable).parent}"})
    store = tmp_path / "store"
    done = _aeval_on(address, store, prefect_api, "--sandbox", "require")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-3000:]
    line = _refusal(done)
    assert line.startswith(f"aeval: --dask {address}: worker {worker} cannot run the cases: "
                           "no sandbox: bwrap not found on PATH"), line
    assert "run store" not in line and "aeval 0" not in line, line  # only what is wrong
    assert not (store / "runs").exists() and not list(store.iterdir()), list(store.iterdir())


def test_a_worker_that_cannot_see_the_run_store_is_refused(scheduler, tmp_path):
    """A healthy worker and one in a mount namespace (real bubblewrap) where the run store's
    folder is an empty tmpfs: the same path, another folder. Exit 2 naming that worker and
    the store, whatever the sandbox mode, before any flow (no Prefect server is asked: the
    API URL is a closed port); with the healthy worker alone, the preflight passes."""
    from aeval.tasks._engine.runners import dask_preflight

    address, start_worker = scheduler
    hidden = tmp_path / "shared"
    store = hidden / "store"
    store.mkdir(parents=True)
    healthy = start_worker(dict(os.environ))
    assert dask_preflight(address, [str(EXAMPLES / "skills" / "hello-docs")], str(store),
                          sandboxed=True) is None
    blind = start_worker(dict(os.environ), ("bwrap", "--dev-bind", "/", "/", "--tmpfs",
                                            str(hidden), "--die-with-parent", "--"))
    done = _aeval_on(address, store, "http://127.0.0.1:9/api", "--sandbox", "none")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-3000:]
    line = _refusal(done)
    assert line == (f"aeval: --dask {address}: worker {blind} cannot run the cases: cannot "
                    f"see the run store {store} this machine writes (a shared file system "
                    "mounted at the same path)"), line
    assert healthy not in line
    assert not (store / "runs").exists() and not list(store.iterdir())


def test_a_scheduler_without_workers_is_refused(scheduler, tmp_path):
    """No worker at all: exit 2 at once, one line (before: the run waited for a worker that
    never came)."""
    address, _start_worker = scheduler
    done = _aeval_on(address, tmp_path / "store", "http://127.0.0.1:9/api")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-3000:]
    assert _refusal(done).startswith(f"aeval: --dask {address}: the scheduler has no "
                                     "workers"), done.stderr
