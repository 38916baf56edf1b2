"""The attempt owns its workspace (Δ recorded even when the runtime raised), and the run
layout keeps every skill apart (two skills with one name both kept)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from aeval.run.layout import RunLayout, skill_keys
from aeval.tasks.run.prefect_artifacts import artifact_key
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.segmentation_case import load, segmentation_copy

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SKILL = ".agents/skills/segmentation"


def test_an_edit_before_the_runtime_crashed_is_recorded_in_the_attempt(tmp_path, monkeypatch):
    """The agent edits SKILL.md, then the model API fails for good: the case ends `error`,
    and the failed attempt still records the edit it made (Δ is always computed)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("AEVAL_RETRIES", "0")
    skill = segmentation_copy(tmp_path, healthy=True)
    script = Script(name="edit-then-outage", match="Train a segmentation model", turns=[
        Turn(tool_calls=[ToolCall(name="edit_file", arguments={
            "path": f"{SKILL}/SKILL.md", "old_text": "| `train` |",
            "new_text": "| `fit` |"})]),
        Turn(fault=503, fault_times=999, text="never answered"),
    ])
    with ScriptedModelServer([script]) as srv:
        code = main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(tmp_path / "s"), "-q", "--no-grader"])
    assert code == 3
    (run_dir,) = (tmp_path / "s" / "runs").iterdir()
    case = RunLayout(run_dir).case_dir("segmentation", "builtin", "train")
    assert load(case / "grading.json")["status"] == "error"
    attempt = load(case / "attempts" / "1" / "attempt.json")
    assert attempt["outcome"] in ("transient_error", "error")
    assert attempt["changes"] == ["modified SKILL.md"]


def _skill(root: Path, folder: str, name: str, script: str) -> Path:
    d = root / folder
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Writes release notes.\n---\n"
                                "# Notes\n\nRun `notes.sh`.\n")
    (d / "notes.sh").write_text(script)
    (d / "eval.config").write_text(json.dumps({"evals": [{
        "id": "write", "prompt": "Write the notes.", "expected_outcome": "notes.md exists",
        "steps": ["bash $SKILL_DIR/notes.sh"],
        "assertions": [{"type": "file_exists", "path": "notes.md"}]}]}))
    return d


def test_two_skills_with_one_name_are_both_kept(tmp_path):
    mp = tmp_path / "mp"
    good = _skill(mp, "team-a/notes", "notes", "echo ok > notes.md\n")
    bad = _skill(mp, "team-b/notes", "notes", "echo nothing here\n")
    code = main(["run", str(mp), "--out", str(tmp_path / "s"), "-q"])
    assert code == 1  # team-b's skill fails; team-a's pass is not overwritten by it
    (run_dir,) = (tmp_path / "s" / "runs").iterdir()
    manifest = load(run_dir / "run.json")
    keys = skill_keys([("notes", good.resolve()), ("notes", bad.resolve())])
    assert len(set(keys.values())) == 2
    by_path = {s["path"]: s for s in manifest["skills"]}
    assert by_path[str(good.resolve())]["status"] == "pass"
    assert by_path[str(bad.resolve())]["status"] == "fail"
    for s in manifest["skills"]:
        assert any("also used by another skill" in w for w in s["warnings"])
        (case,) = s["cases"]
        assert case["dir"].startswith(keys[Path(s["path"])] + "/")
        assert load(run_dir / case["dir"] / "grading.json")["status"] == s["status"]
    # resuming the finished run runs nothing and keeps both verdicts (exit 1 stays 1)
    assert main(["run", "--resume", manifest["run_id"], "--out", str(tmp_path / "s"),
                 "-q"]) == 1


def test_names_that_collide_with_the_runs_files_or_each_other_are_all_kept(tmp_path):
    """Skills named like the run's own files and case ids that a lax mapping would fold into
    one folder: every skill and case is graded, in its own folder, and the run's report,
    junit.xml and run.json are still files."""
    mp = tmp_path / "mp"
    for name in ("run.json", "report.html", "junit.xml"):
        _skill(mp, name, name, "echo ok > notes.md\n")
    ids = _skill(mp, "ids", "ids", "echo ok > notes.md\n")
    case = {"prompt": "Write the notes.", "expected_outcome": "notes.md exists",
            "steps": ["bash $SKILL_DIR/notes.sh"]}
    (ids / "eval.config").write_text(json.dumps({"evals": [
        {**case, "id": "c", "assertions": [{"type": "file_exists", "path": "notes.md"}]},
        {**case, "id": "c.", "assertions": [{"type": "file_exists", "path": "absent.md"}]},
        {**case, "id": "summary.md",
         "assertions": [{"type": "file_exists", "path": "notes.md"}]}]}))
    code = main(["run", str(mp), "--out", str(tmp_path / "s"), "-q"])
    assert code == 1  # case `c.` fails; nothing is internal
    (run_dir,) = (tmp_path / "s" / "runs").iterdir()
    for name in ("run.json", "report.html", "junit.xml"):
        assert (run_dir / name).is_file(), name
    manifest = load(run_dir / "run.json")
    by_name = {s["name"]: s for s in manifest["skills"]}
    assert {n: by_name[n]["status"] for n in ("run.json", "report.html", "junit.xml")} == {
        "run.json": "pass", "report.html": "pass", "junit.xml": "pass"}
    got = {c["case_id"]: load(run_dir / c["dir"] / "grading.json")["status"]
           for c in by_name["ids"]["cases"]}
    assert got == {"c": "pass", "c.": "fail", "summary.md": "pass"}
    dirs = [c["dir"] for s in manifest["skills"] for c in s["cases"]]
    assert len(set(dirs)) == len(dirs)
    assert "c." in (run_dir / "junit.xml").read_text() and "ids" in (
        run_dir / "report.html").read_text()


def test_case_ids_that_differ_only_in_case_are_refused_with_one_line(tmp_path, capsys):
    mp = tmp_path / "mp"
    d = _skill(mp, "ids", "ids", "echo ok > notes.md\n")
    case = {"prompt": "p", "expected_outcome": "o", "steps": ["bash $SKILL_DIR/notes.sh"]}
    (d / "eval.config").write_text(json.dumps({"evals": [{**case, "id": "Train"},
                                                          {**case, "id": "train"}]}))
    assert main(["validate", str(mp)]) == 2
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "differ only" in ln)
    assert "eval.config" in line and "evals[1].id" in line and "'Train'" in line


def test_skill_keys_are_unique_path_safe_and_stable():
    keys = skill_keys([("a b", Path("/x/1")), ("..", Path("/x/2")), ("dup", Path("/x/3")),
                       ("dup", Path("/y/3")), ("a-b", Path("/x/4")), ("Dup", Path("/x/5"))])
    assert keys[Path("/x/4")] == "a-b"  # an ordinary name is its own folder
    assert len({k.casefold() for k in keys.values()}) == len(keys)
    assert keys[Path("/x/2")] not in ("", ".", "..")
    assert keys[Path("/x/3")] != keys[Path("/y/3")]
    again = skill_keys([("dup", Path("/y/3")), ("dup", Path("/x/3"))])
    assert again[Path("/x/3")] == keys[Path("/x/3")]


def test_file_names_that_are_not_utf8_are_reported_not_fatal(tmp_path):
    """A step creating a non-UTF-8 file name, as an output and inside the skill copy: the
    case gets its real verdict (the skill edit fails it), and every artifact is valid JSON."""
    mp = tmp_path / "mp"
    out_only = _skill(mp, "odd-output", "odd-output",
                      "touch $'\\xff\\xfe.txt' && echo ok > notes.md")
    in_skill = _skill(mp, "odd-skill-file", "odd-skill-file",
                      "touch $SKILL_DIR/$'\\xff.dat' && echo ok > notes.md")
    assert main(["run", str(mp), "--out", str(tmp_path / "s"), "-q"]) == 1
    (run_dir,) = (tmp_path / "s" / "runs").iterdir()
    manifest = load(run_dir / "run.json")
    by = {s["path"]: s for s in manifest["skills"]}
    assert by[str(out_only.resolve())]["status"] == "pass"
    assert by[str(in_skill.resolve())]["status"] == "fail"
    case = run_dir / by[str(in_skill.resolve())]["cases"][0]["dir"]
    s1 = next(e for e in load(case / "grading.json")["expectations"] if e["id"] == "S1")
    assert "\\xff.dat" in s1["evidence"]
    meta = load(run_dir / by[str(out_only.resolve())]["cases"][0]["dir"] / "eval_metadata.json")
    assert "\\xff\\xfe.txt" in [o["path"] for o in meta["outputs"]]


def _literal_run(mp: Path, tmp_path: Path, concurrency: int):
    """`aeval run --runtime literal` over ``mp`` (it must pass): the run folder, the path of
    a skill's benchmark.json by name, and run.json's skills by name."""
    assert main(["run", str(mp), "--runtime", "literal", "--concurrency", str(concurrency),
                 "--out", str(tmp_path / "s"), "-q"]) == 0
    (run_dir,) = (tmp_path / "s" / "runs").iterdir()
    skills = {s["name"]: s for s in load(run_dir / "run.json")["skills"]}

    def bench(name: str) -> Path:
        return RunLayout(run_dir).skill_dir(skills[name]["key"], "literal") / "benchmark.json"

    return run_dir, bench, skills


def test_a_skill_is_concluded_while_another_skills_case_still_runs(tmp_path):
    """Each skill's conclusion (suggestions, aggregates, coverage) is written as soon as its
    own last case is done, not after the slowest case of the run: the quick skill's
    benchmark.json exists before the slow skill's case has been graded, and the slow skill,
    whose second case takes seconds, is concluded after that case, over both its cases."""
    mp = tmp_path / "mp"
    _skill(mp, "quick-notes", "quick-notes", "echo ok > notes.md\n")
    slow = _skill(mp, "slow-notes", "slow-notes", "sleep 4; echo ok > notes.md\n")
    config = json.loads((slow / "eval.config").read_text())
    (slow / "tidy.sh").write_text("echo ok > notes.md\n")
    config["evals"].append({**config["evals"][0], "id": "again",
                            "steps": ["bash $SKILL_DIR/tidy.sh"]})
    (slow / "eval.config").write_text(json.dumps(config))
    run_dir, bench, skills = _literal_run(mp, tmp_path, concurrency=3)
    quick_bench, slow_bench = bench("quick-notes"), bench("slow-notes")
    slow_case = run_dir / next(c["dir"] for c in skills["slow-notes"]["cases"]
                               if c["case_id"] == "write") / "grading.json"
    assert quick_bench.stat().st_mtime < slow_case.stat().st_mtime
    assert slow_bench.stat().st_mtime >= slow_case.stat().st_mtime
    assert load(slow_bench)["runs"] == 2


def test_with_one_worker_a_skill_is_concluded_before_the_next_skills_cases(tmp_path):
    """The chains are submitted a window (--concurrency) at a time: a finished skill's
    conclusion gets the next free worker instead of waiting behind every case of the run."""
    mp = tmp_path / "mp"
    for name in ("alpha-notes", "beta-notes", "gamma-notes"):
        _skill(mp, name, name, "echo ok > notes.md\n")
    run_dir, bench, skills = _literal_run(mp, tmp_path, concurrency=1)
    (gamma_case,) = skills["gamma-notes"]["cases"]
    assert bench("alpha-notes").stat().st_mtime < (
        run_dir / gamma_case["dir"] / "grading.json").stat().st_mtime


def test_the_publish_step_attaches_a_table_per_skill_and_the_summary_to_its_task_run(
        tmp_path):
    """The per-skill tables and the run summary are the publish task run's, in the evaluate
    flow run, one table per skill."""
    import warnings

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterName,
    )

    mp = tmp_path / "mp"
    names = [f"notes-{i:02d}" for i in range(12)]
    for name in names:
        _skill(mp, name, name, "echo ok > notes.md\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["run", str(mp), "--runtime", "literal", "--out", str(tmp_path / "s"),
                     "-q"]) == 0
    assert not [w for w in caught if "outside of a flow or task run" in str(w.message)]
    (run_dir,) = (tmp_path / "s" / "runs").iterdir()
    with get_client(sync_client=True) as client:
        (flow_run,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            name=FlowRunFilterName(any_=[f"evaluate {run_dir.name}"])))
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run.id])))
    tables = {a.key: a for a in artifacts if (a.key or "").startswith("skill-")}
    assert sorted(tables) == sorted(artifact_key("skill", n) for n in names)
    (summary,) = [a for a in artifacts if a.key == "run-summary"]
    assert "Gate: exit 0" in summary.data
    publish = {a.task_run_id for a in [*tables.values(), summary]}
    assert len(publish) == 1 and None not in publish
    assert all(t.type == "table" and "pass" in t.description for t in tables.values())
