"""The embedded Prefect server is a process of aeval's own: it must not hold the model keys
(a tool running as the same user could read /proc/<pid>/environ)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from aeval.tasks._engine.runners import scrubbed_environ

pytestmark = pytest.mark.integration

CANARY = "sk-embedded-canary-7781"


def test_the_embedded_server_starts_without_the_keys(tmp_path):
    code = (
        "import os, sys\n"
        "from aeval.tasks._engine.runners import start_embedded_server\n"
        "from prefect.server.api.server import SubprocessASGIServer\n"
        "start_embedded_server()\n"
        "srv = SubprocessASGIServer()\n"
        "env = open(f'/proc/{srv.server_process.pid}/environ', 'rb').read()\n"
        "mine = os.environ.get('OPENAI_API_KEY')\n"
        "srv.stop()\n"
        f"sys.exit(3 if b'{CANARY}' in env else 4 if mine != '{CANARY}' else 0)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(OPENAI_API_KEY=CANARY, AEVAL_GITLAB_TOKEN=CANARY + "-gl",
               HF_TOKEN=CANARY + "-hf", PREFECT_HOME=str(tmp_path / "ph"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode != 3, "the embedded server inherited the model key"
    assert r.returncode != 4, "aeval's own environment lost the key"
    assert r.returncode == 0, r.stderr[-2000:]


def test_scrubbing_keeps_what_a_server_needs():
    env = scrubbed_environ({"PATH": "/usr/bin", "HOME": "/root", "PREFECT_HOME": "/p",
                            "OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "y",
                            "AEVAL_GITLAB_TOKEN": "z", "MY_SERVICE_PASSWORD": "w",
                            "AWS_SECRET_ACCESS_KEY": "v", "LANG": "C.UTF-8"})
    assert env == {"PATH": "/usr/bin", "HOME": "/root", "PREFECT_HOME": "/p",
                   "LANG": "C.UTF-8"}


SERVER_MARK = "aeval.deployments.servers.server_app:create_app"


def _cli_env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(OPENAI_API_KEY=CANARY, PREFECT_HOME=str(tmp_path / "ph"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false", AEVAL_SANDBOX="none")
    return env


def _children(pid: int, mark: str) -> list[int]:
    from tests.procs import alive

    out = []
    for child in alive(mark):
        try:
            with open(f"/proc/{child}/stat") as fh:
                if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(child)
        except OSError:
            continue
    return out


def _wait_for(predicate, timeout_s: float):
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    return None


def _example_skill(tmp_path):
    import shutil

    from tests.conftest import EXAMPLES

    dst = tmp_path / "skills"
    shutil.copytree(EXAMPLES / "skills" / "invoice-totals", dst / "invoice-totals")
    return dst


def test_aeval_run_boots_its_server_early_scrubbed_and_stops_it(tmp_path):
    """`aeval run` spawns the embedded server itself, before Prefect is imported: a child of
    aeval's, without the model key, gone when aeval exits."""
    aeval = os.path.join(os.path.dirname(sys.executable), "aeval")
    proc = subprocess.Popen([aeval, "run", str(_example_skill(tmp_path)), "--runtime",
                             "literal", "--out", str(tmp_path / "store"), "-q"],
                            env=_cli_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    server = _wait_for(lambda: _children(proc.pid, SERVER_MARK), 60)
    assert server, "no embedded server started as a child of aeval"
    with open(f"/proc/{server[0]}/environ", "rb") as fh:
        env = fh.read()
    assert CANARY.encode() not in env
    assert b"PREFECT__SERVER_EPHEMERAL=1" in env
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err  # invoice-totals fails under literal (its docs are wrong)
    assert "internal error" not in err
    assert "invoice-totals" in out
    assert _wait_for(lambda: not os.path.exists(f"/proc/{server[0]}"), 10), \
        "the embedded server outlived aeval"


def test_the_embedded_server_dies_with_a_killed_aeval(tmp_path):
    import signal

    aeval = os.path.join(os.path.dirname(sys.executable), "aeval")
    proc = subprocess.Popen([aeval, "run", str(_example_skill(tmp_path)), "--runtime",
                             "literal", "--out", str(tmp_path / "store"), "-q"],
                            env=_cli_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    server = _wait_for(lambda: _children(proc.pid, SERVER_MARK), 60)
    assert server
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert _wait_for(lambda: not os.path.exists(f"/proc/{server[0]}"), 10), \
        "the embedded server was orphaned by a killed aeval"


def test_a_fresh_prefect_home_starts_from_the_cached_migrated_database(tmp_path):
    """The first fresh PREFECT_HOME leaves its migrated database in aeval's cache; the next
    fresh one starts from it (a marker planted in the template shows up there)."""
    import sqlite3

    cache = tmp_path / "cache"
    aeval = os.path.join(os.path.dirname(sys.executable), "aeval")
    skills = _example_skill(tmp_path)

    def run(home: str) -> subprocess.CompletedProcess:
        env = {**_cli_env(tmp_path), "PREFECT_HOME": str(tmp_path / home),
               "AEVAL_CACHE_DIR": str(cache)}
        return subprocess.run([aeval, "run", str(skills), "--runtime", "literal", "--out",
                               str(tmp_path / f"store-{home}"), "-q"], env=env,
                              capture_output=True, text=True, timeout=300)

    first = run("home-1")
    assert first.returncode == 1, first.stderr  # invoice-totals fails under literal
    (template,) = cache.glob("prefect-*.db")
    db = sqlite3.connect(template)
    assert db.execute("select count(*) from alembic_version").fetchone() == (1,)
    assert db.execute("select count(*) from flow_run").fetchone() == (0,)  # no run in it
    db.execute("create table aeval_test_marker (x int)")
    db.commit()
    db.close()  # closing checkpoints the write-ahead log into the file
    second = run("home-2")
    assert second.returncode == 1, second.stderr
    db = sqlite3.connect(tmp_path / "home-2" / "prefect.db")
    try:
        tables = {r[0] for r in db.execute("select name from sqlite_master")}
        assert "aeval_test_marker" in tables
        assert db.execute("select count(*) from flow_run").fetchone()[0] >= 1
    finally:
        db.close()
