"""Reading a run folder back through the one reader (`aeval.run.read`), with the paths of
`RunLayout`: what the CLI, the reports and the forges see of a finished run."""

from __future__ import annotations

import pytest

from aeval.artifacts import CaseResult, RunManifest
from aeval.run.layout import RunLayout
from aeval.run.read import RunRecord, read_run
from aeval.run.store import read_model, write_model
from tests.unit.test_deliver import make_run, train_row_fix


def test_a_finished_run_reads_back_as_its_models(tmp_path):
    run_dir = make_run(tmp_path, "r1", [train_row_fix()])
    run = read_run(run_dir)
    assert run.manifest.run_id == "r1" and run.manifest.gate.exit_code == 1
    (case,) = run.cases()
    assert (case.skill.name, case.result.case_id) == ("segmentation", "train")
    assert case.dir == run_dir / "segmentation/builtin/train"
    ((same, grading),) = run.gradings()
    assert same.result == case.result and grading.status == "fail"
    assert [e.id for e in grading.expectations if not e.passed] == ["A1", "A3"]
    (skill,) = run.manifest.skills
    assert [s.start_line for s in run.suggestions(skill, "builtin").suggestions] == [
        train_row_fix().start_line]
    assert run.benchmark(skill, "builtin") is None and run.uplift() is None
    assert case.metadata() is None and case.assertions() is None


def test_an_unfinished_case_is_listed_but_has_no_grading(tmp_path):
    run_dir = make_run(tmp_path, "r1", [])
    manifest = read_model(RunLayout(run_dir).manifest, RunManifest)
    skill = manifest.skills[0]
    skill.cases.append(CaseResult(case_id="eval", runtime="builtin", status="error",
                                  reason="interrupted", dir="segmentation/builtin/eval"))
    write_model(RunLayout(run_dir).manifest, manifest)
    run = read_run(run_dir)
    assert [c.result.case_id for c in run.cases()] == ["train", "eval"]
    assert [c.result.case_id for c, _ in run.gradings()] == ["train"]
    assert run.grading(skill.cases[1]) is None


def test_a_run_not_yet_written_reads_from_its_manifest_in_memory(tmp_path):
    run_dir = make_run(tmp_path, "r1", [])
    manifest = read_model(RunLayout(run_dir).manifest, RunManifest)
    RunLayout(run_dir).manifest.unlink()
    run = RunRecord.of(run_dir, manifest)
    assert [g.case_id for _, g in run.gradings()] == ["train"]


def test_a_folder_without_a_run_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_run(tmp_path)
