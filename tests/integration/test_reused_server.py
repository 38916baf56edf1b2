"""The local Prefect server reused across `aeval run` invocations (AEVAL_SERVER=reuse, the
default outside CI): later invocations use the server the first one started; a server killed
with -9 in the middle of a run is started again and the run keeps every verdict; two
invocations at once share one server; an idle server stops; the sandbox cannot reach it.

Every run is a real `aeval` process on a PREFECT_HOME of the test's own, outside /tmp (which
every sandbox has private), as ~/.prefect is."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.tasks._engine.servers.reused import (
    SERVE_MODULE,
    ServerRecord,
    is_server_process,
    read_record,
)
from tests.integration.test_services_unreachable import assert_refused, health_skill
from tests.procs import alive

pytestmark = pytest.mark.integration

CANARY = "sk-reused-canary-5521"
AEVAL = os.path.join(os.path.dirname(sys.executable), "aeval")

DIGEST = textwrap.dedent('''\
    #!/usr/bin/env python3
    """Follow a log file for a while and print how many lines of each level it saw."""
    import argparse
    import collections
    import time

    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--follow-s", type=float, default=0.0, help="keep reading this long")
    args = ap.parse_args()
    seen = collections.Counter()
    deadline = time.monotonic() + args.follow_s
    with open(args.log) as fh:
        while True:
            line = fh.readline()
            if line:
                seen[line.split(" ", 1)[0]] += 1
            elif time.monotonic() >= deadline:
                break
            else:
                time.sleep(0.1)
    print(" ".join(f"{k}={v}" for k, v in sorted(seen.items())))
''')


def digest_skill(root: Path, follow_s: float, cases: int = 2) -> Path:
    skill = root / "skills" / "log-digest"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(textwrap.dedent("""\
        ---
        name: log-digest
        description: Count the lines of each level (INFO, WARN, ERROR) in a log file.
        ---

        # log-digest

        Run `python3 scripts/digest.py app.log` to print `INFO=n WARN=n ERROR=n`;
        `--follow-s S` keeps reading lines appended during S seconds.
        """))
    (skill / "scripts" / "digest.py").write_text(DIGEST)
    (skill / "scripts" / "digest.py").chmod(0o755)
    (skill / "fixtures").mkdir()
    (skill / "fixtures" / "app.log").write_text(
        "INFO started\nWARN disk 91%\nINFO request 1\nERROR timeout\nINFO request 2\n")
    evals = [{
        "id": f"follow-{i}", "prompt": "Count the levels in fixtures/app.log with log-digest.",
        "expected_outcome": "INFO=3 ERROR=1 WARN=1 is printed.",
        "files": ["fixtures/app.log"],
        "steps": [f"python3 $SKILL_DIR/scripts/digest.py fixtures/app.log "
                  f"--follow-s {follow_s}"],
        "assertions": [{"type": "transcript_contains", "text": "ERROR=1 INFO=3 WARN=1",
                        "source": "tool_output"}],
        "timeout_s": 120} for i in range(cases)]
    (skill / "eval.config").write_text(json.dumps({"evals": evals}))
    return skill


@pytest.fixture
def home():
    """A PREFECT_HOME of this test; every reused server started on it is stopped after."""
    path = Path(__file__).parent / f".prefect-home-{uuid.uuid4().hex[:12]}"
    path.mkdir()
    yield path
    for pid in server_pids(path):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(path, ignore_errors=True)


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.pop("CI", None)
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               AEVAL_SERVER="reuse", AEVAL_WARM="0", OPENAI_API_KEY=CANARY, **extra)
    return env


def aeval_run(skill: Path, store: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen([AEVAL, "run", str(skill), "--runtime", "literal", "--out",
                             str(store), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def verdicts(store: Path) -> dict[str, str]:
    """case id -> status, from each run's run.json (aeval's own record of the verdicts)."""
    found = {}
    for manifest in (store / "runs").glob("*/run.json"):
        data = json.loads(manifest.read_text())
        assert data["status"] == "finished", manifest
        for skill in data["skills"]:
            for case in skill["cases"]:
                found[f"{manifest.parent.name}/{case['case_id']}"] = case["status"]
    return found


def server_pids(home: Path) -> list[int]:
    """The reused servers of ``home`` alive now."""
    state = str(home / "aeval-server")
    return sorted(set(alive(SERVE_MODULE)) & set(alive(state)))


def the_record(home: Path) -> ServerRecord:
    record = read_record(home / "aeval-server")
    assert record is not None, "no reused server recorded"
    return record


def test_a_later_invocation_uses_the_server_the_first_one_started(tmp_path, home):
    skill = digest_skill(tmp_path, follow_s=0)
    code, out, err = finish(aeval_run(skill, tmp_path / "store", env_for(home)))
    assert code == 0, out[-2000:] + err[-2000:]
    first = the_record(home)
    assert is_server_process(first), "the reused server did not outlive the invocation"
    # in a session of its own (a terminal's Ctrl-C is not for it), without the model key
    assert os.getsid(first.pid) == first.pid
    assert CANARY.encode() not in Path(f"/proc/{first.pid}/environ").read_bytes()
    state = home / "aeval-server"
    assert state.stat().st_mode & 0o777 == 0o700
    assert (state / "server.json").stat().st_mode & 0o777 == 0o600
    assert first.auth_string not in out + err

    code, out, err = finish(aeval_run(skill, tmp_path / "store", env_for(home)))
    assert code == 0, out[-2000:] + err[-2000:]
    assert the_record(home) == first, "the second invocation started a server of its own"
    assert server_pids(home) == [first.pid]
    assert sorted(verdicts(tmp_path / "store").values()) == ["pass"] * 4


def test_a_server_killed_in_the_middle_of_a_run_loses_no_verdict(tmp_path, home):
    skill = digest_skill(tmp_path, follow_s=4)
    proc = aeval_run(skill, tmp_path / "store", env_for(home), "--concurrency", "1")
    # the cases run one after the other for ~4 s each: kill the server in the first one
    deadline = time.monotonic() + 240
    while not list((tmp_path / "store").glob("runs/*/log-digest/literal/follow-0")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    killed = the_record(home)
    assert is_server_process(killed)
    os.kill(killed.pid, signal.SIGKILL)
    code, out, err = finish(proc)
    assert code == 0, out[-3000:] + err[-3000:]
    assert f"the local Prefect server (pid {killed.pid}) stopped; started it again" in err
    assert sorted(verdicts(tmp_path / "store").values()) == ["pass", "pass"]
    assert len(list((tmp_path / "store").glob("runs/*/log-digest/literal/*/grading.json"))) == 2
    again = the_record(home)
    assert again.pid != killed.pid and again.port == killed.port
    assert is_server_process(again)


def test_two_invocations_at_once_share_one_server(tmp_path, home):
    skill = digest_skill(tmp_path, follow_s=1)
    env = env_for(home)
    procs = [aeval_run(skill, tmp_path / f"store-{i}", env) for i in range(2)]
    results = [finish(p) for p in procs]
    for code, out, err in results:
        assert code == 0, out[-2000:] + err[-2000:]
    record = the_record(home)
    assert server_pids(home) == [record.pid], \
        f"more than one server for one PREFECT_HOME: {[err[-1500:] for _, _, err in results]}"
    for i in range(2):
        assert sorted(verdicts(tmp_path / f"store-{i}").values()) == ["pass", "pass"]


def test_an_idle_server_stops_and_the_next_invocation_starts_one(tmp_path, home):
    skill = digest_skill(tmp_path, follow_s=0, cases=1)
    env = env_for(home, AEVAL_SERVER_IDLE_S="2")
    code, out, err = finish(aeval_run(skill, tmp_path / "store", env))
    assert code == 0, out[-2000:] + err[-2000:]
    first = the_record(home)
    deadline = time.monotonic() + 60
    while is_server_process(first):
        assert time.monotonic() < deadline, "the idle server did not stop"
        time.sleep(0.2)
    assert read_record(home / "aeval-server") is None
    code, out, err = finish(aeval_run(skill, tmp_path / "store", env))
    assert code == 0, out[-2000:] + err[-2000:]
    assert the_record(home).pid != first.pid


@pytest.mark.skipif(bwrap_problem() is not None,
                    reason=f"the sandbox hides the Prefect home; bubblewrap: {bwrap_problem()}")
def test_a_step_can_neither_read_the_record_nor_use_the_reused_server(tmp_path, home):
    mark = uuid.uuid4().hex
    skill = health_skill(tmp_path, mark, home / "aeval-server" / "server.json")
    proc = subprocess.run([AEVAL, "run", str(skill), "--runtime", "literal", "--no-grader",
                           "--out", str(tmp_path / "store")], env=env_for(home),
                          capture_output=True, text=True, timeout=300)
    (run_dir,) = (tmp_path / "store" / "runs").iterdir()
    events = [json.loads(x) for x in next(run_dir.rglob("events.jsonl")).read_text()
              .splitlines()]
    probe = next(e.get("output") or e.get("text") or "" for e in events
                 if "PREFECT-PROBE" in json.dumps(e))
    found = json.loads(probe.split("PREFECT-PROBE ", 1)[1].splitlines()[0])
    assert_refused(proc, found)  # "db" here is the record, with the auth string; no server
    assert the_record(home).port  # ... though the reused server was up on its port
