"""Case verdicts from first-attempt results, and the exit-code gate."""

from __future__ import annotations

import pytest

from aeval.artifacts import CaseResult, Expectation, SkillResult
from aeval.verdicts.status import case_status, counted, gate, skill_status, summarize


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


def test_the_reason_of_a_structural_failure_names_each_and_the_first_evidence():
    es = [exp("A1", "deterministic", "passed"), exp("A2", "natural_language", "ungraded"),
          exp("S0", "structural", "failed"), exp("S1", "structural", "failed"),
          exp("S2", "structural", "failed"), exp("S3", "structural", "failed"),
          exp("S9", "structural", "failed")]
    es[2].evidence = "SKILL.md line 14: runs scripts/run.py\nwhich the skill\ndoes not have"
    status, reason = case_status(es, 0.0)
    assert status == "fail"
    assert reason == ("the static skill check found a defect; skill files modified during "
                      "execution; a documented command failed; the documented workflow failed "
                      "as written; S9 (1/6 first-attempt, 1 ungraded): SKILL.md line 14: runs "
                      "scripts/run.py")
    es = [exp("S1", "structural", "failed")]
    es[0].evidence = "x" * 500
    assert case_status(es, 1.0)[1] == ("skill files modified during execution "
                                       "(0/1 first-attempt): " + "x" * 400)
    es[0].evidence = ""
    assert case_status(es, 1.0)[1] == "skill files modified during execution (0/1 first-attempt)"


def test_the_reason_when_nothing_was_graded_or_all_passed():
    assert case_status([exp("S1", "structural", "passed")], 1.0) == (
        "error", "the case has no assertions")
    assert case_status([exp("A1", "natural_language", "ungraded"),
                        exp("A2", "natural_language", "ungraded")], 1.0) == (
        "error", "nothing could be graded: 2 natural-language assertion(s) need a grader model "
                 "(--grader-model)")
    assert case_status([exp("A1", "deterministic", "passed")], 1.0) == (
        "pass", "1/1 first-attempt (100% vs threshold 100%)")


def test_the_summary_counts_first_attempt_and_terminal_passes_over_graded_assertions():
    s = summarize([exp("A1", "deterministic", "passed"),
                   exp("A2", "deterministic", "failed", terminal=True),
                   exp("A3", "deterministic", "failed", terminal=False),
                   exp("A4", "natural_language", "ungraded")])
    assert (s.passed, s.failed, s.ungraded, s.total) == (1, 2, 1, 4)
    assert s.pass_rate == s.first_attempt_pass_rate == 1 / 3
    assert s.terminal_pass_rate == 2 / 3
    none = summarize([exp("A1", "natural_language", "ungraded")])
    assert none.first_attempt_pass_rate is None and none.terminal_pass_rate is None


def case(status, supplementary=False, i=0):
    return CaseResult(case_id=f"c{i}", runtime="literal", status=status, reason="r", dir="x",
                      supplementary=supplementary)


@pytest.mark.parametrize(("cases", "counted_ids", "status"), [
    # an untested supplementary doc test beside the contract's cases does not count
    ([case("pass", i=0), case("untested", True, i=1)], ["c0"], "pass"),
    # alone, it is the skill's verdict
    ([case("untested", True, i=1)], ["c1"], "untested"),
    # beside only other supplementary cases, nothing else tests the skill: it counts
    ([case("untested", True, i=1), case("pass", True, i=2)], ["c1", "c2"], "untested"),
    # a supplementary doc test that found something always counts
    ([case("pass", i=0), case("fail", True, i=1)], ["c0", "c1"], "fail"),
    ([case("pass", i=0), case("pass", True, i=1)], ["c0", "c1"], "pass"),
    ([case("untested", i=0), case("pass", True, i=1)], ["c0", "c1"], "untested"),
])
def test_which_cases_count(cases, counted_ids, status):
    assert [c.case_id for c in counted(cases)] == counted_ids
    assert skill_status(cases) == status


def test_a_skill_without_cases_is_untested():
    assert skill_status([]) == "untested"


def test_an_environment_error_the_change_introduced_fails_the_gate():
    s = skill("a", "error", "pass")
    s.cases[0].introduced = "setup failed in a case this change adds"
    g = gate([s, skill("b", invalid=True)])
    assert (g.exit_code, g.reason) == (1, "1 environment error(s) introduced by this change: "
                                          "a/c0")
    assert gate([skill("a", "fail"), s]).reason == "1 case(s) failed: a/c0"


def test_a_skill_whose_conclusion_failed_is_an_internal_error_of_the_run():
    """Every case passed, but aeval could not conclude a skill (its suggestions, summary and
    benchmark are missing): exit 4, naming the skill; a failing case or an invalid skill
    still comes first, an environment error after."""
    why = ["scan [literal]: AttributeError: 'tuple' object has no attribute 'case_id'"]
    g = gate([skill("scan", "pass"), skill("b", "error")], unconcluded=why)
    assert (g.exit_code, g.reason) == (4, "aeval failed concluding 1 skill(s) (a bug to report, "
                                          f"not the skill's): {why[0]}")
    assert gate([skill("a", "fail")], unconcluded=why).exit_code == 1
    assert gate([skill("a", invalid=True)], unconcluded=why).exit_code == 2
    assert gate([skill("a", "pass")], unconcluded=[]).exit_code == 0


def test_the_gate_reasons():
    assert (gate([]).exit_code, gate([]).reason) == (0, "no skill to evaluate")
    assert (gate([skill("a", "pass")]).exit_code, gate([skill("a", "pass")]).reason) == (
        0, "every case passed")
    assert gate([skill("a", "error")]).reason == "1 case(s) hit an environment error: a/c0"
    assert gate([skill("a", "internal")]).reason == (
        "aeval failed on 1 case(s) (a bug to report, not the skill's): a/c0")
    assert gate([skill("a", invalid=True)]).reason == "invalid skill(s): a"
    assert gate([skill("a", "untested")], require_tested=True).reason == (
        "1 case(s) untested (--require-tested): a/c0")


@pytest.mark.parametrize(("n", "tail"), [(5, "a/c4"), (6, "a/c4 and 1 more"),
                                         (7, "a/c4 and 2 more")])
def test_a_reason_names_five_cases_and_counts_the_rest(n, tail):
    g = gate([skill("a", *["fail"] * n)])
    assert g.reason == f"{n} case(s) failed: a/c0, a/c1, a/c2, a/c3, {tail}"


def test_every_graded_assertion_failed_is_a_zero_rate():
    assert case_status([exp("A1", "deterministic", "failed")], 0.5) == (
        "fail", "0/1 first-attempt (0% vs threshold 50%); first failure A1: A1")
    assert case_status([exp("A1", "deterministic", "failed")], 0.0)[0] == "pass"


# --- the terminal rate is shown only where a later attempt exists ------------------------

def rated(runtime: str, first: float | None, terminal: float | None) -> CaseResult:
    return CaseResult(case_id="c", runtime=runtime, status="pass", reason="r", dir="x",
                      first_attempt_pass_rate=first, terminal_pass_rate=terminal)


@pytest.mark.parametrize("runtime, first, terminal, shown", [
    # an agent that made an assertion pass only after correcting something: both rates
    ("builtin", 0.5, 1.0, 1.0),
    ("claude-code", 2 / 3, 1.0, 1.0),
    # an agent that corrected nothing: only its first attempt, no terminal rate to show
    ("builtin", 1.0, 1.0, None),
    ("codex", 0.5, 0.5, None),
    # nothing graded on the final state
    ("builtin", 0.5, None, None),
    # literal runs the documented commands once: never a later attempt, whatever the rates
    ("literal", 0.5, 1.0, None),
    ("literal", 1.0, 1.0, None),
])
def test_the_terminal_rate_is_shown_only_after_a_later_attempt(runtime, first, terminal, shown):
    from aeval.verdicts.status import has_later_attempt, terminal_rate

    c = rated(runtime, first, terminal)
    assert terminal_rate(c) == shown
    assert has_later_attempt(c) is (shown is not None)


@pytest.mark.parametrize("runtime, passed, terminal, corrected", [
    ("builtin", False, True, True),     # failed first, passed once corrected
    ("builtin", True, True, False),     # passed at once: nothing was corrected
    ("builtin", False, False, False),   # failed both times
    ("builtin", False, None, False),    # the final state was not graded
    ("literal", False, True, False),    # literal corrects nothing
])
def test_passed_after_correction(runtime, passed, terminal, corrected):
    from aeval.verdicts.status import passed_after_correction

    e = Expectation(id="a", text="a", kind="deterministic",
                    status="passed" if passed else "failed",
                    passed=passed, terminal_passed=terminal, graded_by="check")
    assert passed_after_correction(e, runtime) is corrected


def epochs(name, status, n=3, case_id="smoke"):
    """One case of skill ``name`` run ``n`` epochs, each with ``status``."""
    cases = [CaseResult(case_id=case_id, runtime="literal", status=status, reason="r",
                        dir=f"{name}/literal/{case_id}/epoch-{e}", epoch=e)
             for e in range(1, n + 1)]
    return SkillResult(name=name, path="/x", status=status, cases=cases)


def test_a_run_that_tested_nothing_passes_the_gate_but_says_so():
    g = gate([epochs("brand-voice", "untested"), epochs("meeting-notes", "untested")])
    assert (g.exit_code, g.tested, g.untested, g.nothing_tested) == (0, 0, 6, True)
    assert g.reason == ("no case was tested (2 skill(s), 6 case run(s) untested: brand-voice, "
                        "meeting-notes)")


def test_the_gate_names_each_epoch_of_a_case_run():
    g = gate([epochs("csv-stats", "pass"), epochs("brand-voice", "untested", n=2)])
    assert g.reason == ("every tested case passed; 2 untested: brand-voice/smoke #1, "
                        "brand-voice/smoke #2")
    assert (g.tested, g.nothing_tested) == (3, False)
    flaky = epochs("csv-stats", "pass")
    flaky.cases[1] = flaky.cases[1].model_copy(update={"status": "fail"})
    assert gate([flaky]).reason == "1 case(s) failed: csv-stats/smoke #2"


# (skills, min_tested, exit code): fewer tested case runs than asked is 5, after 1, 2, 4, 3
MIN_TESTED = [
    ([epochs("a", "untested")], 1, 5),
    ([epochs("a", "pass", n=2), epochs("b", "untested")], 3, 5),
    ([epochs("a", "pass", n=2), epochs("b", "untested")], 2, 0),
    ([epochs("a", "fail"), epochs("b", "untested")], 5, 1),
    ([epochs("a", "error"), epochs("b", "untested")], 1, 3),
    ([epochs("a", "internal")], 1, 4),
    ([epochs("a", "pass", n=1)], 0, 0),
]


@pytest.mark.parametrize(("skills", "min_tested", "code"), MIN_TESTED)
def test_min_tested_is_exit_5_after_every_other_failure(skills, min_tested, code):
    g = gate(skills, min_tested=min_tested)
    assert (g.exit_code, g.min_tested) == (code, min_tested)


def test_too_few_tested_says_how_many_were():
    g = gate([epochs("csv-stats", "pass", n=2), epochs("brand-voice", "untested", n=1)],
             min_tested=3)
    assert g.reason == ("2 case run(s) tested; 1 untested: brand-voice/smoke #1: fewer than "
                        "--min-tested 3")


@pytest.mark.parametrize(("skills", "min_tested", "state"), [
    ([epochs("brand-voice", "untested")], 0, ("COMPLETED", "NothingTested")),
    ([epochs("brand-voice", "untested")], 1, ("FAILED", "NothingTested")),
    ([epochs("csv-stats", "pass"), epochs("brand-voice", "untested")], 4,
     ("FAILED", "TooFewTested")),
    ([epochs("csv-stats", "pass"), epochs("brand-voice", "untested")], 0,
     ("COMPLETED", "Completed")),
    ([epochs("csv-stats", "error")], 1, ("FAILED", "Failed")),  # exit 3 says why itself
])
def test_the_flow_runs_state_is_named_for_a_run_that_tested_too_little(skills, min_tested,
                                                                         state):
    from datetime import UTC, datetime

    from aeval.artifacts import RunManifest
    from aeval.flows.evaluate import gate_state

    now = datetime(2026, 12, 6, tzinfo=UTC)
    manifest = RunManifest(run_id="r", created_at=now, aeval_version="0", paths=["/mp"],
                           runtimes=["literal"], skills=skills,
                           gate=gate(skills, min_tested=min_tested))
    got = gate_state(manifest)
    assert (got.type.value, got.name) == state
    assert manifest.gate.reason in got.message
