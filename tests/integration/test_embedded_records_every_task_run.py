"""What the Prefect UI shows of a CI run (one embedded server per invocation): every case's
task run and its final state reach the server's database before the server stops.

Prefect's task-run recorder writes one event per transaction by default; with 8 case chains
at once it fell behind, and when aeval stopped its embedded server at the end of the run the
events it had not written yet were dropped: a 200-case run showed 107-117 of its 462 task
runs (issue 29). The artifacts and events were all there; only the task runs were missing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.tasks.case.chain import STATE_NAMES
from tests.api_proxy import write_marketplace

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

AEVAL = str(Path(sys.executable).parent / "aeval")
SKILLS, CASES = 8, 10


def test_a_ci_run_records_every_case_task_run_and_its_state(tmp_path: Path):
    market = tmp_path / "marketplace"
    write_marketplace(market, SKILLS, CASES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(CI="true", AEVAL_SERVER="embedded", PREFECT_HOME=str(tmp_path / "home"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    done = subprocess.run([AEVAL, "run", str(market), "--runtime", "literal", "--concurrency",
                           "8", "--out", str(tmp_path / "out"), "-q"], env=env,
                          capture_output=True, text=True, timeout=540,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    db = sqlite3.connect(tmp_path / "home" / "prefect.db")
    ((flow_run,),) = db.execute("SELECT id FROM flow_run").fetchall()
    cases = db.execute("SELECT name, state_type, state_name FROM task_run WHERE flow_run_id = ? "
                       "AND name LIKE 'case %'", (flow_run,)).fetchall()
    runs = SKILLS * (CASES + 1)  # each skill's cases and its SKILL.md doc test
    assert len(cases) == runs, f"{len(cases)} of {runs} case task runs recorded"
    # each in its verdict's named state (aeval.tasks.case.chain.case_state), as run.json says
    (manifest,) = (tmp_path / "out" / "runs").glob("*/run.json")
    verdicts = {f"case {s['name']}/{c['case_id']} [literal]": c["status"]
                for s in json.loads(manifest.read_text())["skills"] for c in s["cases"]}
    assert len(verdicts) == runs
    assert {name: (state, state_name) for name, state, state_name in cases} == {
        name: ("COMPLETED", STATE_NAMES[status]) for name, status in verdicts.items()}
    # one task run per case: no nested `execute` task run (its bookkeeping was half the
    # task runs the server recorded), and every task run of the flow is a case's, a skill's
    # conclusion, or one of the run's own three steps
    names = [n for (n,) in db.execute("SELECT name FROM task_run WHERE flow_run_id = ?",
                                      (flow_run,)).fetchall()]
    assert not [n for n in names if n.startswith("execute ")]
    assert len(names) == runs + SKILLS + 2, sorted({n.split(" ")[0] for n in names})
    # the case results reach the conclusions and publish quoted: no task run lists every
    # case's task run among its inputs (from ~11,000 case runs publish's state event passed
    # Prefect's 1.5 MB limit: EventTooLarge, exit 4, after every case had run)
    inputs = {n: json.loads(t) for n, t in db.execute(
        "SELECT name, task_inputs FROM task_run WHERE flow_run_id = ? AND name NOT LIKE "
        "'case %'", (flow_run,)).fetchall()}
    assert len(inputs) == SKILLS + 2
    assert {n.split(" ")[0]: each.get("cases", each.get("results")) for n, each
            in inputs.items() if not n.startswith("prepare ")} == {"conclude": [], "publish": []}
    (publish,) = [each for n, each in inputs.items() if n.startswith("publish ")]
    assert publish == {"prepared": [], "results": [], "unconcluded": []}  # the plans share ids
    assert max(len(refs) for each in inputs.values() for refs in each.values()) <= 2, {
        n: {k: len(v) for k, v in each.items()} for n, each in inputs.items()}
