"""Resume after kill -9, the nightly sweep's baselines, and regression.json."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


def make_skill(root: Path, name: str, cases: list[dict]) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: test skill {name}\n---\n"
                                "Run `scripts/ok.sh`.\n")
    (d / "scripts").mkdir()
    (d / "scripts" / "ok.sh").write_text("echo ok\n")
    (d / "eval.config").write_text(json.dumps({"evals": cases}))
    return d


def case(cid: str, step: str, *checks: dict) -> dict:
    return {"id": cid, "prompt": f"do {cid}", "expected_outcome": "done", "steps": [step],
            "assertions": list(checks) or [{"type": "file_exists", "path": "out.txt"}]}


def only_run(store: Path) -> Path:
    (rd,) = (store / "runs").iterdir()
    return rd


def test_kill_9_then_resume_runs_only_unfinished_cases(tmp_path):
    mp = tmp_path / "mp"
    make_skill(mp, "slow", [case(f"c{i}", "sleep 2 && bash $SKILL_DIR/scripts/ok.sh > out.txt")
                            for i in range(4)])
    store = tmp_path / "store"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home")}
    env.pop("PREFECT_API_URL", None)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "aeval"), "run", str(mp),
                             "--out", str(store), "--concurrency", "1", "-q"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline:
            if list(store.glob("runs/*/slow/literal/*/grading.json")):
                break
            assert proc.poll() is None, "aeval finished before it could be killed"
            time.sleep(0.1)
        else:
            pytest.fail("no case finished in time")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    rd = only_run(store)
    finished = {p.parent.name: p.stat().st_mtime_ns
                for p in rd.glob("slow/literal/*/grading.json")}
    assert 1 <= len(finished) < 4
    # nothing half-written: every JSON file parses (a write cut short leaves at most its
    # temporary file, which the resume removes)
    for p in rd.rglob("*.json"):
        json.loads(p.read_text())
    assert json.loads((rd / "run.json").read_text())["status"] == "running"

    assert main(["run", "--resume", rd.name, "--out", str(store), "-q"]) == 0
    run = json.loads((rd / "run.json").read_text())
    assert run["status"] == "finished" and run["totals"] == {"pass": 4}
    assert not list(rd.rglob("*.tmp"))
    for cid, mtime in finished.items():  # finished cases were not executed again
        d = rd / "slow" / "literal" / cid
        assert (d / "grading.json").stat().st_mtime_ns == mtime
        assert [p.name for p in (d / "attempts").iterdir()] == ["1"]
    redone = [d for d in (rd / "slow" / "literal").iterdir()
              if d.is_dir() and d.name not in finished]
    assert len(redone) == 4 - len(finished)
    for d in redone:
        assert (d / "grading.json").is_file()


@pytest.mark.usefixtures("prefect_harness")
def test_resume_of_an_unknown_run_is_a_usage_error(tmp_path, capsys):
    assert main(["run", "--resume", "nope", "--out", str(tmp_path)]) == 2
    assert "cannot resume nope" in capsys.readouterr().err


@pytest.mark.usefixtures("prefect_harness")
def test_sweep_refreshes_baselines_and_runs_compare_against_them(tmp_path, capsys):
    mp = tmp_path / "mp"
    d = make_skill(mp, "flip", [case(
        "c", "cp $SKILL_DIR/value.txt out.txt",
        {"type": "file_exists", "path": "out.txt"},
        {"type": "file_contains", "path": "out.txt", "pattern": "^good$"})])
    (d / "value.txt").write_text("good\n")
    store = tmp_path / "store"
    assert main(["sweep", str(mp), "--epochs", "2", "--out", str(store), "-q"]) == 0
    base = json.loads((store / "baselines.json").read_text())
    (sweep_run,) = [p.name for p in (store / "runs").iterdir()]
    entry = base["entries"]["flip/literal/c"]
    assert entry["run_id"] == sweep_run and entry["first_attempt_pass_rate"] == 1.0
    assert "baselines refreshed" in capsys.readouterr().out

    (d / "value.txt").write_text("bad\n")  # the skill regresses
    assert main(["run", str(mp), "--out", str(store), "-q"]) == 1
    (new_run,) = [p for p in (store / "runs").iterdir() if p.name != sweep_run]
    reg = json.loads((new_run / "flip" / "literal" / "regression.json").read_text())
    assert reg["baseline_run"] == sweep_run
    assert reg["pass_rate_delta"] == {"c": pytest.approx(-1 / 4, abs=1e-3)}  # A1 A2 S0 S1
    assert [x["text"] for x in reg["newly_failing"]] == ["File out.txt matches /^good$/"]
    assert reg["newly_failing"][0]["assertion_id"] == "A2"
    # a failing run does not replace the last-known-good baseline ...
    assert json.loads((store / "baselines.json").read_text()) == base

    (d / "value.txt").write_text("good\n")
    assert main(["run", str(mp), "--out", str(store), "-q", "--baseline", new_run.name]) == 0
    (fixed,) = [p for p in (store / "runs").iterdir() if p.name not in (sweep_run, new_run.name)]
    reg = json.loads((fixed / "flip" / "literal" / "regression.json").read_text())
    # ... and --baseline compares with any chosen run instead
    assert reg["baseline_run"] == new_run.name
    assert [x["assertion_id"] for x in reg["newly_passing"]] == ["A2"]


def _intervals(run_dir: Path) -> list[tuple[str, str]]:
    out = []
    for attempt in run_dir.glob("**/attempt.json"):
        a = json.loads(attempt.read_text())
        out.append((a["started_at"], a["ended_at"]))
    return sorted(out)


@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("concurrency, overlap", [(1, False), (3, True)])
def test_sweep_runs_its_cases_at_the_concurrency_asked(tmp_path, concurrency, overlap):
    """`aeval sweep --concurrency N` reaches the nested evaluate run (a subflow runs on its
    own task runner: it ran 4 at a time whatever was asked)."""
    mp = tmp_path / "mp"
    for name in ("fetch-a", "fetch-b", "fetch-c"):
        make_skill(mp, name, [case("slow", "sleep 1 && bash $SKILL_DIR/scripts/ok.sh > out.txt")])
    store = tmp_path / "store"
    assert main(["sweep", str(mp), "--epochs", "1", "--concurrency", str(concurrency),
                 "--out", str(store), "-q"]) == 0
    spans = _intervals(only_run(store))
    assert len(spans) == 3
    overlapping = any(b[0] < a[1] for a, b in itertools.pairwise(spans))
    assert overlapping is overlap, spans


@pytest.mark.usefixtures("prefect_harness")
def test_sweep_reuses_the_verdict_of_what_did_not_change(tmp_path, capsys):
    """A second sweep runs only what changed: unchanged case runs keep their pass or fail
    (copied, and said so), an edited skill runs again, --no-skip runs everything."""
    mp = tmp_path / "mp"
    for name, value in (("rates-good", "good"), ("rates-bad", "bad")):
        d = make_skill(mp, name, [case(
            "lookup", "cp $SKILL_DIR/value.txt out.txt",
            {"type": "file_contains", "path": "out.txt", "pattern": "^good$"})])
        (d / "value.txt").write_text(f"{value}\n")
    store = tmp_path / "store"

    def sweep(*extra: str) -> tuple[int, dict, str]:
        before = set((store / "runs").glob("*")) if (store / "runs").exists() else set()
        code = main(["sweep", str(mp), "--epochs", "1", "--out", str(store), *extra])
        (rd,) = set((store / "runs").glob("*")) - before
        run = json.loads((rd / "run.json").read_text())
        return code, {s["name"]: s["cases"][0] for s in run["skills"]}, rd

    code, first, first_dir = sweep()
    assert code == 1 and first["rates-bad"]["status"] == "fail"
    assert first["rates-good"]["reused_from"] is None
    capsys.readouterr()

    code, second, second_dir = sweep()
    out = capsys.readouterr().out
    assert code == 1, "a reused fail still fails the sweep"
    assert "2 case run(s) unchanged since their last verdict" in out
    assert "(unchanged: reused)" in out
    for name in ("rates-good", "rates-bad"):
        c = second[name]
        assert c["status"] == first[name]["status"]
        assert c["reused_from"] == f"{first_dir.name}/{first[name]['dir']}"
        # the case folder is the earlier one's, not a new execution
        old = json.loads((first_dir / first[name]["dir"] / "attempts/1/attempt.json").read_text())
        new = json.loads((second_dir / c["dir"] / "attempts/1/attempt.json").read_text())
        assert new["started_at"] == old["started_at"]
    validate = json.loads((ROOT / "eval_skill" / "schemas" / "verdicts.schema.json").read_text())
    import jsonschema

    jsonschema.validate(json.loads((store / "verdicts.json").read_text()), validate)

    (mp / "rates-bad" / "value.txt").write_text("good\n")  # the author fixes the skill
    code, third, _ = sweep()
    assert code == 0
    assert third["rates-bad"]["status"] == "pass" and third["rates-bad"]["reused_from"] is None
    assert third["rates-good"]["reused_from"] is not None

    code, fourth, _ = sweep("--no-skip")
    assert code == 0 and all(c["reused_from"] is None for c in fourth.values())


@pytest.mark.usefixtures("prefect_harness")
def test_sweep_resume_finishes_the_sweep_and_its_flow_runs_end_as_it_did(tmp_path, capsys):
    """A sweep whose last case did not finish (its grading.json gone, as a kill leaves it)
    is `aeval sweep --resume`d: only that case runs, the baselines refresh, and the sweep's
    first flow run and its evaluate subflow run no longer show Failed in the UI."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    mp = tmp_path / "mp"
    d = make_skill(mp, "rates-lookup", [case(
        "lookup", "cp $SKILL_DIR/value.txt out.txt",
        {"type": "file_contains", "path": "out.txt", "pattern": "^good$"})])
    (d / "value.txt").write_text("stale\n")
    store = tmp_path / "store"
    assert main(["sweep", str(mp), "--epochs", "1", "--out", str(store), "-q"]) == 1
    rd = only_run(store)
    first = json.loads((rd / "run.json").read_text())
    (d / "value.txt").write_text("good\n")  # fixed while the case run was being redone
    (grading,) = rd.glob("rates-lookup/literal/*/grading.json")
    grading.unlink()
    capsys.readouterr()

    assert main(["sweep", "--resume", rd.name, "--out", str(store), "-q"]) == 0
    out = capsys.readouterr().out
    assert f"resuming sweep {rd.name}" in out and "baselines refreshed" in out
    assert only_run(store) == rd
    baselines = json.loads((store / "baselines.json").read_text())
    assert rd.name in json.dumps(baselines)
    with get_client(sync_client=True) as client:
        sweep_run = client.read_flow_run(first["parent_flow_run_id"])
        eval_run = client.read_flow_run(first["flow_run_id"])
        resumed = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            name=FlowRunFilterName(any_=[f"evaluate {rd.name}"])))
    assert sweep_run.name == f"sweep {mp}" and eval_run.name == f"evaluate {rd.name}"
    for run in (sweep_run, eval_run):
        assert run.state.is_completed(), run.state
        assert run.state.message.startswith("resumed in flow run ")
    again = [r for r in resumed if r.id != eval_run.id]
    assert len(again) == 1 and again[0].state.is_completed()
    assert str(again[0].id) in eval_run.state.message
    assert json.loads((rd / "run.json").read_text())["flow_run_id"] == str(eval_run.id)
