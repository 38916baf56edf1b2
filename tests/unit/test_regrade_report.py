"""The regrade report read from run folders: missing verdicts and failing graders are errors of
their rater, never disagreements; tiers compared per suggestion location."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from aeval.artifacts import (
    CaseResult,
    Expectation,
    FixSuggestion,
    FixSuggestions,
    GraderInfo,
    Grading,
    GradingSummary,
    RunManifest,
    SelfCorrection,
    SkillResult,
)
from aeval.run.store import write_model
from aeval.tasks.studies.compare import agreement_report, regraded_dir

TEXT = {"A1": "outputs/model.json exists", "A2": "The final mIoU is printed"}


def grading(verdicts: dict[str, str], evidence: str = "[3] printed mIoU=0.81") -> Grading:
    exps = [Expectation(id=i, text=TEXT[i], kind="deterministic" if i == "A1" else
                        "natural_language", status=v, passed=None if v == "ungraded" else
                        v == "passed", terminal_passed=None, evidence=evidence,
                        graded_by="check" if i == "A1" else "grader")
            for i, v in verdicts.items()]
    return Grading(skill="segmentation", case_id="train", runtime="builtin", status="fail",
                   status_reason="", expectations=exps,
                   summary=GradingSummary(passed=0, failed=0, ungraded=0, total=len(exps),
                                          pass_rate=None, first_attempt_pass_rate=None,
                                          terminal_pass_rate=None),
                   self_correction=SelfCorrection(was_needed=False),
                   grader=GraderInfo(model=None, protocol_fidelity=True))


def suggestion(level: str) -> FixSuggestions:
    return FixSuggestions(skill="segmentation", runtime="builtin", causal_share=None,
                          suggestions=[FixSuggestion(
                              level=level, grounded_in="train#1:A2", path="SKILL.md",
                              start_line=24, end_line=24, original="x", replacement="y",
                              rationale="", validated=False)])


def source_run(root: Path) -> Path:
    src = root / "runs" / "src"
    cases = [CaseResult(case_id="train", runtime="builtin", epoch=e, status="fail", reason="",
                        dir=f"segmentation/builtin/train/epoch-{e}") for e in (1, 2)]
    write_model(src / "run.json", RunManifest(
        run_id="src", created_at=datetime.now(UTC), aeval_version="test", paths=["."],
        runtimes=["builtin"], grader_model=None, epochs=2,
        skills=[SkillResult(name="segmentation", path="mp/segmentation", status="fail",
                            cases=cases)]))
    for e in (1, 2):  # no grader in the original run: A2 stayed ungraded
        write_model(src / f"segmentation/builtin/train/epoch-{e}/grading.json",
                    grading({"A1": "passed", "A2": "ungraded"}, "no grader model"))
    write_model(src / "segmentation/builtin/fix_suggestions.json", suggestion("LV2"))
    return src


def test_missing_gradings_and_failed_runs_are_errors_of_their_rater(tmp_path):
    src = source_run(tmp_path)
    g1 = tmp_path / "runs" / "g1"  # graded epoch 1 only; epoch 2 never finished
    write_model(g1 / regraded_dir("segmentation/builtin/train/epoch-1", "builtin")
                / "grading.json", grading({"A1": "passed", "A2": "failed"}))
    write_model(g1 / "segmentation/replay/fix_suggestions.json", suggestion("LV1"))
    report = agreement_report(src, "rg", ["a", "b"], [("a", "builtin", g1)],
                              [("b", "builtin", "ValidationError: bad model")])
    raters = {r.rater: r for r in report.raters}
    assert [e.reason for e in raters["original"].errors] == ["no grader model"] * 2
    assert [(e.epoch, e.reason) for e in raters["a"].errors] == [
        (2, "no grading.json: the case did not finish")]
    assert [(e.epoch, e.reason) for e in raters["b"].errors] == [
        (1, "ValidationError: bad model"), (2, "ValidationError: bad model")]
    assert (raters["a"].judged, raters["original"].judged, raters["b"].judged) == (1, 0, 0)
    # one rater with verdicts: nothing to agree about, said so; no disagreement invented
    assert report.overall.raters == ["a"] and report.overall.kappa is None
    assert report.overall.kappa_note == "fewer than two raters gave any verdict"
    assert report.among_graders is None and report.disagreements == []
    a2 = next(v for v in report.assertions if (v.epoch, v.assertion_id) == (1, "A2"))
    assert {r: v.verdict for r, v in a2.verdicts.items()} == {
        "original": None, "a": "failed", "b": None}
    assert a2.agree is None  # one verdict is not an agreement
    a1 = next(v for v in report.assertions if (v.epoch, v.assertion_id) == (1, "A1"))
    assert not a1.counted and a1.agree is True
    # the same SKILL.md line: LV2 for the original, LV1 for grader a
    (tier,) = report.tier_differences
    assert tier.levels == {"original": ["LV2"], "a": ["LV1"], "b": []}
    assert (raters["original"].causal_share, raters["a"].causal_share,
            raters["b"].causal_share) == (0.0, 1.0, None)


def test_regraded_dir_renames_only_the_runtime_folder():
    assert regraded_dir("builtin/builtin/train/epoch-2", "builtin") == \
        "builtin/replay/train/epoch-2"
    assert regraded_dir("seg/codex/codex", "codex") == "seg/replay/codex"
