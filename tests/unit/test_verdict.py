"""Case verdicts from first-attempt results, and the exit-code gate."""

from __future__ import annotations

import pytest

from aeval.artifacts import CaseResult, Expectation, SkillResult
from aeval.verdict import case_status, gate, skill_status


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


# (skills, require_tested, expected exit code): DESIGN's order, 1 fail; 2 usage or invalid
# (or untested with --require-tested); 4 internal; 3 environment; 0 otherwise
GATE = [
    ([skill("a", "fail"), skill("b", "internal"), skill("c", "error")], False, 1),
    ([skill("a", "internal"), skill("b", invalid=True)], False, 2),
    ([skill("a", "internal"), skill("b", "error"), skill("c", "untested")], False, 4),
    ([skill("a", "error"), skill("b", "untested")], False, 3),
    ([skill("a", "pass"), skill("b", "untested")], False, 0),
    ([skill("a", "pass"), skill("b", "untested")], True, 2),
    ([skill("a", "untested")], False, 0),
    ([skill("a", "internal"), skill("b", "untested")], True, 2),
]


@pytest.mark.parametrize(("skills", "require_tested", "code"), GATE)
def test_gate_order_with_every_status(skills, require_tested, code):
    assert gate(skills, require_tested=require_tested).exit_code == code


def test_untested_is_a_warning_never_a_pass():
    g = gate([skill("a", "pass"), skill("b", "untested")])
    assert g.exit_code == 0 and "1 untested: b/c0" in g.reason
    assert skill_status(skill("b", "untested", "pass").cases) == "untested"
    assert skill_status(skill("b", "pass", "internal", "error").cases) == "internal"


@pytest.mark.parametrize(("threshold", "status"), [(0.75, "pass"), (0.7500001, "fail"),
                                                   (0.7499999, "pass")])
def test_a_rate_exactly_at_the_threshold_passes(threshold, status):
    """3 of 4 graded first-attempt passes (the ungraded one does not count) against a
    threshold at, just above and just below 75 %."""
    es = [exp("A1", "deterministic", "passed"), exp("A2", "deterministic", "passed"),
          exp("A3", "deterministic", "failed"), exp("A4", "natural_language", "ungraded"),
          exp("S1", "structural", "passed")]
    got, reason = case_status(es, threshold)
    assert got == status, reason
    assert reason.startswith("3/4 first-attempt (75% vs threshold")
    assert reason.endswith(", 1 ungraded; first failure A3: A3")
