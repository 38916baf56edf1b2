"""Issue 29, item 3: the production setup of deployments/README.md, a Prefect server on
PostgreSQL. A private PostgreSQL (tests/postgres.py: Debian's binaries, an unprivileged user,
127.0.0.1 on a free port) <- `prefect server start` with
``PREFECT_API_DATABASE_CONNECTION_URL=postgresql+asyncpg://...`` <- `python -m
aeval.deployments.serve` (the MR deployment) <- `aeval trigger` of a good and a defective MR
head of the example marketplace, then `aeval sweep` of the defective head. The verdicts and the
exit codes are those of the SQLite server (tests/integration/test_prefect_server.py), and the
flow runs are rows of PostgreSQL's flow_run table, not of a SQLite file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_prefect_server import (
    EXAMPLES,
    PREFECT,
    api_client,
    free_port,
    sh,
    start_serve,
    stop,
    tail,
    wait_for_deployment,
    wait_healthy,
)
from tests.postgres import Postgres, running_postgres

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

AEVAL = str(Path(sys.executable).parent / "aeval")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL server for the session (skipped, with the reason, where none can be had);
    stopped and removed at the end, whatever the tests did."""
    with running_postgres() as pg:
        yield pg


@pytest.fixture(scope="module")
def pg_server(postgres: Postgres,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`prefect server start` on a database of its own on ``postgres``, as the README says;
    yields its clients' environment (they get PREFECT_API_URL, never the database URL)."""
    postgres.create_database("prefect_mr")
    home = tmp_path_factory.mktemp("pg-prefect") / "home"
    port = free_port()
    clients = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    clients.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                   PREFECT_SERVER_LOGGING_LEVEL="WARNING")
    log = home.parent / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            env={**clients, "PREFECT_API_DATABASE_CONNECTION_URL": postgres.url("prefect_mr")},
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    api = f"http://127.0.0.1:{port}/api"
    try:
        wait_healthy(proc, api, log, 120)
        yield {**clients, "PREFECT_API_URL": api, "PREFECT_RUNNER_POLL_FREQUENCY": "2",
               "PREFECT_SERVER_LOGGING_LEVEL": "WARNING"}
    finally:
        stop(proc)
    assert "Traceback" not in log.read_text(errors="replace"), tail(log, 80)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str, str]:
    """The example marketplace committed (base); a branch changing csv-stats harmlessly
    (good head) and one renaming its script's --out the docs still use (defective head)."""
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


def flow_run_processes_gone(serve: subprocess.Popen, timeout: float) -> None:
    """Wait (bounded) until no process of ``serve``'s session carries a flow run
    (``PREFECT__FLOW_RUN_ID`` in its environment): the runner has reaped every run it
    started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.getsid(int(pid)) != serve.pid:
                    continue
                if b"PREFECT__FLOW_RUN_ID=" in Path(f"/proc/{pid}/environ").read_bytes():
                    busy.append(pid)
            except (OSError, ProcessLookupError):
                continue
        if not busy:
            return
        time.sleep(0.5)
    raise AssertionError(f"flow run processes still running after {timeout:.0f} s: {busy}")


def cases(run_dir: Path) -> dict[str, str]:
    """``skill/case`` -> status from a run's run.json."""
    manifest = json.loads((run_dir / "run.json").read_text())
    return {f"{s['name']}/{c['case_id']}": c["status"]
            for s in manifest["skills"] for c in s["cases"]}


def test_mr_flow_and_sweep_on_a_postgres_backed_server(pg_server, postgres, repo, tmp_path):
    """Two MRs through the served MR deployment (`aeval trigger`: exit 0 for the good head, 1
    for the defective one, csv-stats/stats failing), then `aeval sweep` of the defective head
    (exit 1, the same case failing, the others passing). Every flow run the API reports is a
    row of PostgreSQL's flow_run table with the state the API gives, and the server made no
    SQLite database."""
    repo_dir, base, good, bad = repo
    work = tmp_path / "serve"
    work.mkdir()
    log = tmp_path / "serve.log"
    serve = start_serve(pg_server, work, log, "--no-schedule")
    try:
        wait_for_deployment(pg_server, "aeval-mr/mr", serve, log, timeout=120)
        jobs = {}
        for iid, head in (("7", good), ("8", bad)):
            out = tmp_path / f"job-{iid}"
            jobs[iid] = subprocess.Popen(
                [AEVAL, "trigger", "aeval-mr/mr", "--repo", str(repo_dir), "--base", base,
                 "--head", head, "--mr", iid, "--timeout", "300", "--out", str(out)],
                env=pg_server, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)
        said = {k: p.communicate(timeout=330)[0] for k, p in jobs.items()}
        codes = {k: p.returncode for k, p in jobs.items()}
        assert codes == {"7": 0, "8": 1}, f"{said}\nserve log:\n{tail(log, 60)}"
        assert "aeval gate: exit 1: " in said["8"] and "csv-stats/stats" in said["8"], said
        runs = {p.name: p for p in (work / ".aeval" / "runs").iterdir()}
        assert len(runs) == 2, runs
        by_head = {json.loads((d / "run.json").read_text())["head"]: d for d in runs.values()}
        assert cases(by_head[bad])["csv-stats/stats"] == "fail"
        fine = cases(by_head[good])
        assert fine["csv-stats/stats"] == "pass", fine
        assert not {"fail", "error"} & set(fine.values()), fine
        # the trigger returns once a run's state is final; its process may still be closing.
        # Prefect's runner, stopped then, forces every run it still tracks to Cancelled (its
        # shutdown's cancel_all), a finished one too: stop the serve process once they are gone
        flow_run_processes_gone(serve, timeout=60)
    finally:
        stop(serve)

    # the sweep of the defective head: the verdicts and the exit code of the same sweep on
    # aeval's embedded SQLite server (the examples have defective skills of their own)
    sh(repo_dir, "checkout", "-q", bad)
    swept = {}
    for where, env in (("postgres", pg_server),
                       ("sqlite", {**{k: v for k, v in pg_server.items()
                                      if k != "PREFECT_API_URL"},
                                   "PREFECT_HOME": str(tmp_path / "sqlite-home")})):
        store = tmp_path / f"sweep-{where}"
        done = subprocess.run([AEVAL, "sweep", str(repo_dir), "--epochs", "1", "--runtime",
                               "literal", "--out", str(store), "-q"], env=env,
                              capture_output=True, text=True, timeout=330,
                              stdin=subprocess.DEVNULL)
        (run_dir,) = (store / "runs").iterdir()
        swept[where] = (done.returncode, cases(run_dir))
        assert "internal error" not in done.stderr, done.stderr[-3000:]
    code, got = swept["postgres"]
    assert code == 1 and got["csv-stats/stats"] == "fail", swept
    assert "pass" in got.values() and "error" not in got.values(), got
    assert swept["postgres"] == swept["sqlite"], swept

    # the runs are PostgreSQL's rows, with the states the API reports
    with api_client(pg_server) as client:
        api_runs = {str(r.id): (r.name, r.state_type.value) for r in client.read_flow_runs()}
    rows = postgres.query("prefect_mr", "SELECT id::text, name, state_type::text FROM flow_run")
    in_db = {i: (n, s) for i, n, s in rows}
    assert in_db == api_runs, (in_db, api_runs)
    names = sorted(n for n, _ in in_db.values())
    assert f"mr 7: {base[:12]}...{good[:12]}" in names and \
        f"mr 8: {base[:12]}...{bad[:12]}" in names, names
    assert sum(n.startswith("sweep ") for n in names) == 1, names
    assert sum(n.startswith("evaluate ") for n in names) >= 3, names
    states = {n: s for n, s in in_db.values()}
    assert states[f"mr 8: {base[:12]}...{bad[:12]}"] == "FAILED"
    assert states[f"mr 7: {base[:12]}...{good[:12]}"] == "COMPLETED"
    (sweep_state,) = [s for n, s in in_db.values() if n.startswith("sweep ")]
    assert sweep_state == "FAILED"
    tasks = postgres.query("prefect_mr", "SELECT name, state_name FROM task_run "
                                         "WHERE name = 'case csv-stats/stats [literal]'")
    assert ("case csv-stats/stats [literal]", "SkillDefect") in tasks, tasks
    home = Path(pg_server["PREFECT_HOME"])
    assert not list(home.glob("*.db")), list(home.iterdir())
