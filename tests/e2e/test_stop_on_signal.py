"""SIGTERM (a CI runner's cancel or timeout) stops `aeval run` within moments: the process
and every process it started are gone, the unfinished cases are recorded as cancelled in
run.json, and `aeval run --resume` runs exactly those. Before, the run was still going 8 s
after the signal and started a new Prefect server after its own was stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(400)]

CASES = 6
SLEEP_S = 60


def sleepy_marketplace(root: Path) -> Path:
    """One skill whose documented step takes a minute: a realistic literal marketplace."""
    skill = root / "market" / "skills" / "slow-report"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: slow-report\ndescription: Writes a report after a long computation.\n"
        "---\n\n# Slow report\n\nRun `python3 scripts/report.py out.txt` from the workspace.\n")
    script = skill / "scripts" / "report.py"
    script.write_text("#!/usr/bin/env python3\nimport os, sys, time\n"
                      f"if not os.path.exists({str(root / 'fast')!r}):\n"
                      f"    time.sleep({SLEEP_S})\n"
                      "open(sys.argv[1], 'w').write('report\\n')\nprint('done')\n")
    script.chmod(0o755)
    (skill / "eval.config").write_text(json.dumps({"evals": [{
        "id": f"case-{i}", "prompt": "Write the report.", "expected_outcome": "out.txt",
        "steps": ["python3 $SKILL_DIR/scripts/report.py out.txt"],
        "assertions": [{"type": "file_exists", "path": "out.txt"}], "timeout_s": 300}
        for i in range(CASES)]}))
    return root / "market"


def descendants(pid: int) -> set[int]:
    """Every live process whose ancestry (by /proc's ppid) leads to ``pid`` (those in a
    session of their own too)."""
    parents: dict[int, int] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = Path(f"/proc/{p}/stat").read_text()
                parents[int(p)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        kids = {c for c, pp in parents.items() if pp in frontier and c not in found}
        found |= kids
        frontier = kids
    return found


def a_case_step_runs(pid: int) -> bool:
    """Whether a case's documented step (``python3 .../report.py out.txt``) runs under
    ``pid``: not merely a process naming report.py (the static check's ruff reads it before
    the run's folder exists)."""
    for p in descendants(pid):
        try:
            argv = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[-3:-1] and argv[-3].endswith(b"/report.py") and argv[-2] == b"out.txt":
            return True
    return False


def alive(pids: set[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie is gone)."""
    out = []
    for p in pids:
        try:
            if Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                out.append(p)
        except (OSError, IndexError):
            continue
    return out


def test_sigterm_cancels_the_run_and_resume_finishes_it(tmp_path):
    aeval = os.path.join(os.path.dirname(sys.executable), "aeval")
    market = sleepy_marketplace(tmp_path)
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(home), AEVAL_WARM="0", AEVAL_SERVER="embedded",
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    store = tmp_path / "store"
    proc = subprocess.Popen([aeval, "run", str(market), "--runtime", "literal", "--out",
                             str(store), "--concurrency", "2", "--sandbox", "none"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not a_case_step_runs(proc.pid):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
        started = descendants(proc.pid) | {proc.pid}
        assert len(started) > 2  # the server and the steps
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)  # old: still running, cases and all
        gone_by = time.monotonic() + 10
        while time.monotonic() < gone_by and alive(started):
            time.sleep(0.2)
        assert not alive(started), "processes the run started are still alive"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 143, err[-2000:]
    assert "stopped by SIGTERM" in err
    (run_dir,) = (store / "runs").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "cancelled" and manifest["cancelled_by"] == "SIGTERM"
    assert len(manifest["cancelled"]) == CASES  # none finished: every one is to run again
    assert not list(run_dir.rglob("grading.json"))

    (tmp_path / "fast").write_text("")  # the resumed steps are quick
    r = subprocess.run([aeval, "run", "--resume", run_dir.name, "--out", str(store),
                        "--sandbox", "none"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert len(list(run_dir.rglob("grading.json"))) == CASES
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
