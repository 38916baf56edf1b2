"""`aeval run` end to end on the example marketplace and on broken inputs: exit codes,
artifact contents, schema validity, originals untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from aeval.artifacts import json_schema
from aeval.deployments.cli.main import main
from aeval.isolation.workspace import manifest
from aeval.run.layout import schema_for

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def run_dir(out: Path) -> Path:
    runs = sorted((out / "runs").iterdir())
    assert len(runs) == 1
    return runs[0]


def load(p: Path) -> dict:
    return json.loads(p.read_text())


def validate_tree(root: Path) -> int:
    """Validate every artifact under root against its exported JSON Schema; return count."""
    n = 0
    for path in root.rglob("*"):
        name = schema_for(path.name)
        if not name or "attempts" in path.parts:
            continue
        schema = json_schema(name)
        docs = ([json.loads(line) for line in path.read_text().splitlines() if line]
                if path.suffix == ".jsonl" else [load(path)])
        for doc in docs:
            jsonschema.validate(doc, schema)
        n += 1
    return n


@pytest.fixture(scope="module")
def example_run(tmp_path_factory, prefect_harness):
    """One run over a copy of the examples, shared by the assertions below."""
    import shutil

    from tests.conftest import EXAMPLES

    base = tmp_path_factory.mktemp("examples")
    mp = base / "marketplace"
    shutil.copytree(EXAMPLES, mp)
    before = {p.name: manifest(p) for p in (mp / "skills").iterdir()}
    code = main(["run", str(mp), "--out", str(base / "store"), "-q"])
    return code, run_dir(base / "store"), mp, before


def case(rd: Path, skill: str, case_id: str, runtime: str = "literal") -> Path:
    return rd / skill / runtime / case_id


def test_exit_code_is_1_because_the_broken_skills_fail(example_run):
    code, rd, _, _ = example_run
    assert code == 1
    run = load(rd / "run.json")
    assert run["gate"]["exit_code"] == 1 and run["gate"]["reason"] == (
        "4 case(s) failed: invoice-totals/skill-md, invoice-totals/totals, "
        "segmentation/inference, segmentation/train")
    assert run["gate"]["tested"] == 8 and not run["gate"]["nothing_tested"]
    statuses = {s["name"]: s["status"] for s in run["skills"]}
    assert statuses == {"csv-stats": "pass", "segmentation": "fail", "release-notes": "pass",
                        "hello-docs": "pass", "invoice-totals": "fail"}
    assert run["totals"] == {"pass": 4, "fail": 4, "untested": 2}


def test_a_documented_command_that_fails_is_structural_evidence(example_run):
    """invoice-totals documents `totals.py summarize`; the script only knows `summary`."""
    _, rd, _, _ = example_run
    g = load(case(rd, "invoice-totals", "totals") / "grading.json")
    by = {e["id"]: e for e in g["expectations"]}
    assert by["S2"]["status"] == "failed" and "invalid choice: 'summarize'" in by["S2"]["evidence"]
    assert "S3" not in by  # the probe is for agent runtimes: literal runs the steps itself
    assert "a documented command failed" in g["status_reason"]


def test_segmentation_fails_with_the_keyerror_as_evidence(example_run):
    _, rd, _, _ = example_run
    g = load(case(rd, "segmentation", "train") / "grading.json")
    assert g["status"] == "fail"
    by_id = {e["id"]: e for e in g["expectations"]}
    assert by_id["A3"]["passed"] is False
    assert "KeyError: 'segment_train'" in by_id["A3"]["evidence"]
    assert g["summary"]["first_attempt_pass_rate"] < 1.0
    errs = g["self_correction"]["first_attempt_errors"]
    assert len(errs) == 1 and "KeyError" in errs[0]["excerpt"] and errs[0]["exit_code"] == 1
    assert "segment_train" in errs[0]["command"]
    transcript = (case(rd, "segmentation", "train") / "transcript.md").read_text()
    assert "KeyError: 'segment_train'" in transcript and "FAILED, exit 1" in transcript


def test_clean_skill_passes_with_its_outputs(example_run):
    _, rd, _, _ = example_run
    g = load(case(rd, "csv-stats", "stats") / "grading.json")
    assert g["status"] == "pass" and g["summary"]["passed"] == g["summary"]["total"] == 10
    # the commands csv-stats documents worked when its steps ran them (structural S2)
    assert {e["id"]: e["status"] for e in g["expectations"]}["S2"] == "passed"
    stats = load(case(rd, "csv-stats", "stats") / "outputs" / "outputs" / "stats.json")
    assert stats["rows"] == 5
    meta = load(case(rd, "csv-stats", "stats") / "eval_metadata.json")
    assert meta["tier"] == "per-skill" and meta["wall_s"] > 0
    assert [o["path"] for o in meta["outputs"]] == ["data.csv", "outputs/stats.json"]


def test_natural_language_assertion_is_ungraded_never_passed(example_run):
    _, rd, _, _ = example_run
    g = load(case(rd, "csv-stats", "summary") / "grading.json")
    nl = [e for e in g["expectations"] if e["kind"] == "natural_language"]
    assert len(nl) == 1 and nl[0]["status"] == "ungraded" and nl[0]["passed"] is None
    assert g["summary"]["ungraded"] == 1 and g["summary"]["passed"] == 5
    assert g["status"] == "pass" and "1 ungraded" in g["status_reason"]


def test_tiers_are_recorded(example_run):
    _, rd, _, _ = example_run
    assert load(case(rd, "hello-docs", "smoke") / "eval_metadata.json")["tier"] == "generic"
    meta = load(case(rd, "release-notes", "notes") / "eval_metadata.json")
    assert meta["tier"] == "per-name" and meta["contract"].endswith("release-notes.config")


def test_assertions_are_written_before_execution(example_run):
    _, rd, _, _ = example_run
    d = case(rd, "segmentation", "train")
    a = load(d / "assertions.json")
    meta = load(d / "eval_metadata.json")
    assert a["written_at"] < meta["attempts"][0]["started_at"]
    assert a["assertions"][-1]["kind"] == "structural"
    from aeval.artifacts import AssertionsFile, AssertionSpec
    specs = [AssertionSpec.model_validate(x) for x in a["assertions"]]
    assert AssertionsFile.digest(specs) == a["sha256"]


def test_every_artifact_validates_against_its_schema(example_run):
    _, rd, _, _ = example_run
    # 7 cases x 4 files, 5 skills x 5 aggregates (with regression.json), run.json
    assert validate_tree(rd) == 10 * 4 + 5 * 5 + 1  # 7 contract cases + 3 SKILL.md doc tests
    junit = (rd / "junit.xml").read_text()
    assert "<testsuite" in junit and "KeyError" in junit


def test_original_skills_are_byte_identical(example_run):
    _, _, mp, before = example_run
    assert {p.name: manifest(p) for p in (mp / "skills").iterdir()} == before


def test_aggregates_per_skill(example_run):
    _, rd, _, _ = example_run
    b = load(rd / "segmentation" / "literal" / "benchmark.json")
    assert b["runs"] == 2 and b["statuses"] == {"fail": 2}
    assert b["assertion_matrix"]["train"]["A3"] is False
    assert b["assertion_matrix"]["train"]["A4"] is None
    notes = load(rd / "segmentation" / "literal" / "analysis_notes.json")["notes"]
    assert {"kind": "always_failing", "subject": "train:A3"} in [
        {"kind": n["kind"], "subject": n["subject"]} for n in notes]
    summary = (rd / "segmentation" / "literal" / "summary.md").read_text()
    assert summary.startswith("# segmentation [literal]: FAIL")


def test_report_html_shows_the_failure_and_escapes_evidence(example_run):
    _, rd, _, _ = example_run
    html = (rd / "report.html").read_text()
    assert html.startswith("<!doctype html>") and "exit 1: 4 case(s) failed" in html
    assert "KeyError: &#39;segment_train&#39;" in html  # evidence, escaped
    assert '<a href="segmentation/literal/train/">train</a>' in html
    assert "<script" not in html


def test_each_defect_s0_proves_gets_its_fix_with_no_model(example_run):
    """A zero-key run of the examples suggests a fix for each documented action the scripts
    name otherwise (issue 46, item 4): LV1, static, the exact line, shown in report.html."""
    _, rd, mp, _ = example_run
    fixed = {}
    for skill in ("segmentation", "invoice-totals"):
        doc = load(rd / skill / "literal" / "fix_suggestions.json")
        lines = (mp / "skills" / skill / "SKILL.md").read_text().splitlines()
        for s in doc["suggestions"]:
            assert (s["level"], s["source"], s["validated"], s["path"]) == (
                "LV1", "static", False, "SKILL.md")
            assert s["original"] == lines[s["start_line"] - 1]
            assert s["grounded_in"].endswith(":S0")
            fixed[(skill, s["start_line"])] = s["replacement"]
    assert sorted(v.split("run.py " if "run.py" in v else "totals.py ")[1].split()[0]
                  for v in fixed.values()) == ["evaluate", "inference", "summary", "train"]
    html = (rd / "report.html").read_text()
    assert all(f"+{v}" in html for v in fixed.values())  # beside the evidence, as a diff


def test_show_reprints_the_run(example_run, capsys):
    _, rd, _, _ = example_run
    assert main(["show", str(rd)]) == 1
    out = capsys.readouterr().out
    assert "segmentation" in out and "KeyError: 'segment_train'" in out


# ---- broken inputs ---------------------------------------------------------------------------


def make_skill(root: Path, name: str, config: dict | str | None, body: str = "") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: test skill {name}\n---\n{body}")
    (d / "scripts").mkdir()
    (d / "scripts" / "say.sh").write_text('echo "$@"\n')
    if config is not None:
        (d / "eval.config").write_text(config if isinstance(config, str) else json.dumps(config))
    return d


GOOD = {"evals": [{"id": "ok", "prompt": "p", "expected_outcome": "o",
                   "steps": ["bash $SKILL_DIR/scripts/say.sh fine > out.txt"],
                   "assertions": [{"type": "file_contains", "path": "out.txt",
                                   "pattern": "fine"}]}]}


def test_validate_malformed_config_prints_path_field_problem(tmp_path, capsys):
    d = make_skill(tmp_path, "broken", {"evals": [{"id": "x", "prompt": "p",
                                                   "assertions": [{"type": "nope"}]}]})
    assert main(["validate", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert f"{d / 'eval.config'}:evals[0].expected_outcome: Field required" in out
    assert f"{d / 'eval.config'}:evals[0].assertions[0]: unknown check type 'nope'" in out
    make_skill(tmp_path / "fine", "good", GOOD)
    assert main(["validate", str(tmp_path / "fine")]) == 0


def test_one_invalid_skill_does_not_stop_the_others(tmp_path):
    make_skill(tmp_path / "mp", "good", GOOD)
    make_skill(tmp_path / "mp", "broken", '{"evals": [}')
    code = main(["run", str(tmp_path / "mp"), "--out", str(tmp_path / "s"), "-q"])
    assert code == 2
    rd = run_dir(tmp_path / "s")
    run = load(rd / "run.json")
    by = {s["name"]: s for s in run["skills"]}
    assert by["good"]["status"] == "pass" and by["broken"]["status"] == "invalid"
    assert "not valid JSON" in by["broken"]["problems"][0] or "JSON" in by["broken"]["problems"][0]
    assert (rd / "good" / "literal" / "ok" / "grading.json").is_file()


def test_missing_credential_is_an_environment_error(tmp_path):
    cfg = json.loads(json.dumps(GOOD))
    cfg["evals"][0]["required_credentials"] = ["SKILLTEST_NEVER_SET"]
    make_skill(tmp_path / "mp", "needs-key", cfg)
    code = main(["run", str(tmp_path / "mp"), "--out", str(tmp_path / "s"), "-q"])
    assert code == 3
    g = load(run_dir(tmp_path / "s") / "needs-key" / "literal" / "ok" / "grading.json")
    assert g["status"] == "error" and "SKILLTEST_NEVER_SET" in g["status_reason"]
    # a permanent environment error is recorded once, never retried
    meta = load(run_dir(tmp_path / "s") / "needs-key" / "literal" / "ok" / "eval_metadata.json")
    assert [(x["outcome"], x["error_type"]) for x in meta["attempts"]] == [
        ("error", "MissingCredential")]


def test_declared_credential_reaches_steps_but_never_artifacts(tmp_path, monkeypatch):
    canary = "canary-Zx81-secret-value"
    monkeypatch.setenv("SKILLTEST_TOKEN", canary)
    monkeypatch.setenv("SKILLTEST_UNDECLARED", "undeclared-visible")
    cfg = {"evals": [{"id": "c", "prompt": "p", "expected_outcome": "o",
                      "required_credentials": ["SKILLTEST_TOKEN"],
                      "steps": ['echo "tok=$SKILLTEST_TOKEN" | tee out.txt',
                                'echo "undeclared=${SKILLTEST_UNDECLARED:-absent}"'],
                      "assertions": [
                          {"type": "command", "run": 'test ${#SKILLTEST_TOKEN} -eq '
                                                     + str(len(canary))},
                          {"type": "transcript_contains", "text": "undeclared=absent"}]}]}
    make_skill(tmp_path / "mp", "secretive", cfg)
    code = main(["run", str(tmp_path / "mp"), "--out", str(tmp_path / "s"), "-q"])
    assert code == 0
    for p in (tmp_path / "s").rglob("*"):
        if p.is_file():
            assert canary not in p.read_text(errors="replace"), p


def test_failing_preflight_is_retried_and_ends_as_error(tmp_path, monkeypatch):
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    cfg = json.loads(json.dumps(GOOD))
    cfg["evals"][0]["preflight"] = ["echo 'cluster unreachable' >&2; exit 1"]
    make_skill(tmp_path / "mp", "flaky-env", cfg)
    code = main(["run", str(tmp_path / "mp"), "--out", str(tmp_path / "s"), "-q"])
    assert code == 3
    d = run_dir(tmp_path / "s") / "flaky-env" / "literal" / "ok"
    meta = load(d / "eval_metadata.json")
    assert [a["outcome"] for a in meta["attempts"]] == ["transient_error"] * 3
    assert all("cluster unreachable" in a["error"] for a in meta["attempts"])
    assert load(d / "grading.json")["status"] == "error"
    # the retries are Prefect's, on the case's own task run (the UI's state history), and
    # the case is one task run: no nested task run per attempt
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(task_run_filter=TaskRunFilter(name=TaskRunFilterName(
            any_=["case flaky-env/ok [literal]", "execute flaky-env/ok [literal]"])))
        assert [r.name for r in runs] == ["case flaky-env/ok [literal]"]
        history = [st.name for st in client.read_task_run_states(runs[0].id)]
    assert history.count("AwaitingRetry") == 2 and history[-1] == "EnvironmentError", history


def test_skill_failure_is_not_retried(tmp_path, monkeypatch):
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    cfg = json.loads(json.dumps(GOOD))
    cfg["evals"][0]["steps"] = ["exit 1"]
    make_skill(tmp_path / "mp", "broken-skill", cfg)
    assert main(["run", str(tmp_path / "mp"), "--out", str(tmp_path / "s"), "-q"]) == 1
    meta = load(run_dir(tmp_path / "s") / "broken-skill" / "literal" / "ok" / "eval_metadata.json")
    assert [a["outcome"] for a in meta["attempts"]] == ["completed"]


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope")]) == 2
    assert main(["run", str(tmp_path)]) == 2  # no SKILL.md anywhere
    assert "no SKILL.md" in capsys.readouterr().err


@pytest.mark.parametrize("argv, line", [
    (["--runtime", "claude"], "aeval run: --runtime claude: unknown runtime; known: builtin, "
                              "claude-code"),
    (["--epochs", "101"], "aeval run: --epochs 101: must be from 1 to 100"),
    (["--epochs", "0"], "aeval run: --epochs 0: must be from 1 to 100"),
    (["--concurrency", "0"], "aeval run: --concurrency 0: must be at least 1"),
])
def test_bad_run_options_are_one_line_before_anything_runs(tmp_path, capsys, argv, line):
    """A typo in a runtime name was one environment error per case after minutes of retries
    (exit 3); --epochs 101 an internal error (exit 4)."""
    from tests.conftest import EXAMPLES

    assert main(["run", str(EXAMPLES / "skills" / "hello-docs"), "--out", str(tmp_path),
                 *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


def test_console_script_as_a_user_runs_it(tmp_path):
    """The installed `aeval` entry point, in its own process with its own embedded Prefect."""
    from tests.conftest import EXAMPLES

    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    exe = Path(sys.executable).parent / "aeval"
    proc = subprocess.run([str(exe), "run", str(EXAMPLES / "skills" / "segmentation"),
                           "--out", str(tmp_path / "s")], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "KeyError: 'segment_train'" in proc.stdout
    assert "exit 1: 2 case(s) failed" in proc.stdout
