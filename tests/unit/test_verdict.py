"""Case verdicts from first-attempt results, and the exit-code gate."""

from __future__ import annotations

from aeval.artifacts import CaseResult, Expectation, SkillResult
from aeval.verdict import case_status, gate


def exp(id, kind, status, terminal=None):
    passed = None if status == "ungraded" else status == "passed"
    return Expectation(id=id, text=id, kind=kind, status=status, passed=passed,
                       terminal_passed=passed if terminal is None else terminal,
                       graded_by="none" if status == "ungraded" else "check")


def test_structural_failure_fails_the_case_whatever_else_passed():
    status, reason = case_status([exp("A1", "deterministic", "passed"),
                                  exp("S1", "structural", "failed", terminal=True)], 0.0)
    assert status == "fail" and "modified" in reason


def test_threshold_and_ungraded():
    es = [exp("A1", "deterministic", "passed"), exp("A2", "deterministic", "failed"),
          exp("A3", "natural_language", "ungraded"), exp("S1", "structural", "passed")]
    assert case_status(es, 1.0)[0] == "fail"
    status, reason = case_status(es, 0.6)
    assert status == "pass" and "1 ungraded" in reason  # 2/3 graded >= 0.6


def test_nothing_graded_is_error_not_pass():
    status, reason = case_status([exp("A1", "natural_language", "ungraded"),
                                  exp("S1", "structural", "passed")], 1.0)
    assert status == "error" and "need a grader model" in reason


def skill(name, *statuses, invalid=False):
    cases = [CaseResult(case_id=f"c{i}", runtime="literal", status=s, reason="r", dir="x")
             for i, s in enumerate(statuses)]
    return SkillResult(name=name, path="/x", status="invalid" if invalid else "pass",
                       cases=cases)


def test_gate_first_match_wins():
    assert gate([skill("a", "pass"), skill("b", "fail"), skill("c", invalid=True),
                 skill("d", "error")]).exit_code == 1
    assert gate([skill("a", "pass"), skill("c", invalid=True), skill("d", "error")]).exit_code == 2
    assert gate([skill("a", "pass"), skill("d", "error")]).exit_code == 3
    assert gate([skill("a", "pass", "pass")]).exit_code == 0
    assert gate([skill("a", "pass")], usage_error="bad flag").exit_code == 2
