"""The judge, table-driven: one row per verdict rule of DESIGN.md ("Verdicts", "The
first-attempt rule"). Inputs are what grading observed; the judge is pure."""

from __future__ import annotations

import pytest

from aeval.artifacts import ChangeMade, FirstAttemptError, GraderVerdict, ProbeResult
from aeval.artifacts.case import AssertionSpec
from aeval.skill.contract import FileExists
from aeval.verdicts.checks import CheckOutcome
from aeval.verdicts.doctest import DocTestSummary
from aeval.verdicts.finding import StaticFinding
from aeval.verdicts.judge import NO_GRADER, change_evidence, judge

CHECK = AssertionSpec(id="A1", text="File out.json exists", kind="deterministic",
                      source="author", check=FileExists(type="file_exists", path="out.json"))
NL = AssertionSpec(id="A2", text="The report names the winner", kind="natural_language",
                   source="author")
S1 = AssertionSpec(id="S1", text="The skill's files were not modified during execution",
                   kind="structural", source="structural")
EDIT = ChangeMade(id="C1", path="SKILL.md", change="modified", diff="-a\n+b\n", event_seq=4,
                  tool="edit_file", attribution="direct")


def ok(evidence="found"):
    return CheckOutcome(True, evidence)


def bad(evidence="missing"):
    return CheckOutcome(False, evidence)


def says(passed=True, corrected=False, evidence="quoted line"):
    return GraderVerdict(id="A2", passed=passed, needed_correction=corrected, evidence=evidence)


# (rule, assertions, changes, checks, verdicts, threshold, grader_error,
#  expected status, expected first-attempt verdicts by id ("passed"/"failed"/"ungraded"))
RULES = [
    ("everything passes", [CHECK, NL, S1], [], {"A1": ok()}, {"A2": says()}, 1.0, None,
     "pass", {"A1": "passed", "A2": "passed", "S1": "passed"}),
    ("a skill edit fails the case whatever else passed", [CHECK, NL, S1], [EDIT],
     {"A1": ok()}, {"A2": says()}, 1.0, None,
     "fail", {"A1": "passed", "A2": "passed", "S1": "failed"}),
    ("a skill edit fails even at threshold 0", [CHECK, S1], [EDIT], {"A1": ok()}, {}, 0.0,
     None, "fail", {"A1": "passed", "S1": "failed"}),
    ("a failed check fails the case", [CHECK, S1], [], {"A1": bad()}, {}, 1.0, None,
     "fail", {"A1": "failed", "S1": "passed"}),
    ("a check the grader says needed a correction fails the first attempt", [CHECK, NL, S1],
     [], {"A1": ok()}, {"A1": GraderVerdict(id="A1", passed=True, needed_correction=True,
                                             evidence="retried after KeyError"),
                        "A2": says()}, 1.0, None,
     "fail", {"A1": "failed", "A2": "passed", "S1": "passed"}),
    ("a grader pass that needed a correction fails the first attempt", [NL, S1], [], {},
     {"A2": says(corrected=True)}, 1.0, None, "fail", {"A2": "failed", "S1": "passed"}),
    ("a grader fail fails", [NL, S1], [], {}, {"A2": says(passed=False)}, 1.0, None,
     "fail", {"A2": "failed", "S1": "passed"}),
    ("below the threshold fails", [CHECK, NL, S1], [], {"A1": bad()}, {"A2": says()}, 0.9,
     None, "fail", {"A1": "failed", "A2": "passed", "S1": "passed"}),
    ("at the threshold passes", [CHECK, NL, S1], [], {"A1": bad()}, {"A2": says()}, 0.6,
     None, "pass", {"A1": "failed", "A2": "passed", "S1": "passed"}),
    ("no grader: natural language is ungraded, never passed", [CHECK, NL, S1], [],
     {"A1": ok()}, {}, 1.0, None, "pass", {"A1": "passed", "A2": "ungraded", "S1": "passed"}),
    ("nothing but the structural assertion graded: error", [NL, S1], [], {}, {}, 1.0, None,
     "error", {"A2": "ungraded", "S1": "passed"}),
    ("a broken grader turns a would-be pass into error", [CHECK, NL, S1], [], {"A1": ok()},
     {}, 1.0, "grader answer invalid after 3 attempt(s)",
     "error", {"A1": "passed", "A2": "ungraded", "S1": "passed"}),
    ("a broken grader never hides a deterministic fail", [CHECK, NL, S1], [], {"A1": bad()},
     {}, 1.0, "grader answer invalid after 3 attempt(s)",
     "fail", {"A1": "failed", "A2": "ungraded", "S1": "passed"}),
    ("a broken grader never hides a skill edit", [CHECK, NL, S1], [EDIT], {"A1": ok()}, {},
     1.0, "grader model failed: 503", "fail", {"A1": "passed", "A2": "ungraded",
                                               "S1": "failed"}),
    ("a check that did not run is not a pass", [CHECK, S1], [], {}, {}, 1.0, None,
     "error", {"A1": "ungraded", "S1": "passed"}),
]


@pytest.mark.parametrize(("rule", "specs", "changes", "checks", "verdicts", "threshold",
                          "grader_error", "status", "by_id"), RULES, ids=[r[0] for r in RULES])
def test_rule(rule, specs, changes, checks, verdicts, threshold, grader_error, status, by_id):
    j = judge(specs, changes, checks, verdicts, threshold, grader_error)
    assert j.status == status, j.reason
    assert {e.id: e.status for e in j.expectations} == by_id
    for e in j.expectations:
        assert (e.passed is None) == (e.status == "ungraded")
        assert e.passed is (True if e.status == "passed" else False if e.status == "failed"
                            else None)


def test_corrected_assertions_pass_terminally_and_are_marked():
    j = judge([CHECK, NL, S1], [EDIT], {"A1": ok()}, {"A2": says(corrected=True)}, 1.0)
    e = {x.id: x for x in j.expectations}
    assert e["A2"].terminal_passed is True and e["A2"].needed_correction
    assert e["S1"].terminal_passed is True and e["S1"].needed_correction
    assert e["A1"].terminal_passed is True and not e["A1"].needed_correction


def test_the_structural_evidence_names_the_change_and_the_event_that_made_it():
    j = judge([S1], [EDIT], {}, {}, 1.0)
    assert j.expectations[0].evidence == "C1 modified SKILL.md by event 4 (edit_file)"
    assert "skill files modified" in j.reason
    assert change_evidence([]) == "no skill file changed (manifest diff empty)"


def test_ungraded_evidence_says_why():
    j = judge([NL, CHECK, S1], [], {"A1": ok()}, {}, 1.0)
    assert j.expectations[0].evidence == NO_GRADER
    j = judge([NL, CHECK, S1], [], {"A1": ok()}, {}, 1.0, "grader model failed: 429")
    assert j.expectations[0].evidence == "grader model failed: 429"
    assert j.status == "error" and "grader model failed: 429" in j.reason


def test_the_reason_counts_ungraded_beside_the_verdict():
    j = judge([CHECK, NL, S1], [], {"A1": ok()}, {}, 1.0)
    assert j.status == "pass" and "1 ungraded" in j.reason


S2 = AssertionSpec(id="S2", text="Every command the skill documents worked when the executor "
                               "ran it", kind="structural", source="structural")
DOCUMENTED_FAILED = FirstAttemptError(seq=5, tool="bash", exit_code=1, command="python3 run.py "
                                      "segment_train", excerpt="KeyError: 'segment_train'",
                                      documented="scripts/run.py segment_train")
S3 = AssertionSpec(id="S3", text="The documented workflow (the case's steps) runs as written",
                   kind="structural", source="structural")
PROBE_FAILED = ProbeResult(status="failed", evidence="step 1 exited 1: KeyError")

# Without the skill installed (uplift's without-skill arm), only the assertions count:
# (rule, assertions, changes, errors, probe, checks, verdicts, threshold, grader_error,
#  run_status, doc_test, expected status, expected verdicts by id)
WITHOUT_SKILL = [
    ("the assertions pass: pass, and no structural assertion is listed", [CHECK, S1, S2], [],
     [], None, {"A1": ok()}, {}, 1.0, None, "completed", False, "pass", {"A1": "passed"}),
    ("a file written where $SKILL_DIR points is not a skill edit", [CHECK, S1], [EDIT], [],
     None, {"A1": ok()}, {}, 1.0, None, "completed", False, "pass", {"A1": "passed"}),
    ("a failed command matching the skill's docs is not S2", [CHECK, S1, S2], [],
     [DOCUMENTED_FAILED], None, {"A1": ok()}, {}, 1.0, None, "completed", False, "pass",
     {"A1": "passed"}),
    ("a failed probe does not apply", [CHECK, S1, S3], [], [], PROBE_FAILED, {"A1": ok()}, {},
     1.0, None, "completed", False, "pass", {"A1": "passed"}),
    ("a failed assertion fails", [CHECK, NL, S1], [], [], None, {"A1": bad()}, {"A2": says()},
     1.0, None, "completed", False, "fail", {"A1": "failed", "A2": "passed"}),
    ("the threshold still decides", [CHECK, NL, S1], [], [], None, {"A1": bad()},
     {"A2": says()}, 0.5, None, "completed", False, "pass", {"A1": "failed", "A2": "passed"}),
    ("a correction the grader saw still fails the first attempt", [NL, S1], [], [], None, {},
     {"A2": says(corrected=True)}, 1.0, None, "completed", False, "fail", {"A2": "failed"}),
    ("nothing graded is still error", [NL, S1], [], [], None, {}, {}, 1.0, None, "completed",
     False, "error", {"A2": "ungraded"}),
    ("a broken grader still turns a would-be pass into error", [CHECK, NL, S1], [], [], None,
     {"A1": ok()}, {}, 1.0, "grader model failed: 503", "completed", False, "error",
     {"A1": "passed", "A2": "ungraded"}),
    ("untested stays untested", [CHECK, S1], [], [], None, {"A1": bad()}, {}, 1.0, None,
     "untested", False, "untested", {"A1": "failed"}),
    ("the doc-test rule does not apply", [CHECK, S1], [], [], None, {"A1": bad()}, {}, 1.0,
     None, "failed", True, "fail", {"A1": "failed"}),
]


@pytest.mark.parametrize(("rule", "specs", "changes", "errors", "probe", "checks", "verdicts",
                          "threshold", "grader_error", "run_status", "doc_test", "status",
                          "by_id"), WITHOUT_SKILL, ids=[r[0] for r in WITHOUT_SKILL])
def test_rule_without_the_skill(rule, specs, changes, errors, probe, checks, verdicts,
                                threshold, grader_error, run_status, doc_test, status, by_id):
    j = judge(specs, changes, checks, verdicts, threshold, grader_error, errors, probe,
              run_status=run_status,
              doc_test=DocTestSummary(run_status, "") if doc_test else None,
              skill_installed=False)
    assert j.status == status, j.reason
    assert {e.id: e.status for e in j.expectations} == by_id


def test_the_same_inputs_with_the_skill_fail_on_the_skill_rules():
    """The rows above differ from a normal run only by skill_installed."""
    assert judge([CHECK, S1], [EDIT], {"A1": ok()}, {}, 1.0).status == "fail"
    assert judge([CHECK, S1, S2], [], {"A1": ok()}, {}, 1.0, None,
                 [DOCUMENTED_FAILED]).status == "fail"
    assert judge([CHECK, S1, S3], [], {"A1": ok()}, {}, 1.0, None, [],
                 PROBE_FAILED).status == "fail"


# ---- the static check (S0), the doc test as S2, and the honest pass ----------------------

S0 = AssertionSpec(id="S0", text="Every path SKILL.md names exists, and what it runs and "
                                 "documents the skill accepts", kind="structural",
                   source="structural")
MISSING = StaticFinding(file="SKILL.md", line=14, kind="missing", path="scripts/run.py",
                        problem="runs scripts/run.py, which the skill does not have")
RAN = ["scripts/run.py executed by event 2"]

# (rule, assertions, findings, checks, run_status, run_text, doc_test, exercised,
#  expected status, expected verdicts by id)
HONEST = [
    ("a static finding fails a case that would pass", [S0, CHECK, S1], [MISSING],
     {"A1": ok()}, "completed", "", False, RAN, "fail",
     {"S0": "failed", "A1": "passed", "S1": "passed"}),
    ("a static finding fails a case the doc test left untested", [S0, S1, S2], [MISSING], {},
     "untested", "needs pdftotext", True, [], "fail",
     {"S0": "failed", "S1": "passed", "S2": "passed"}),
    ("a doc-test defect fails S2 with its line", [S0, S1, S2], [], {}, "failed",
     "SKILL.md line 9: KeyError: 'segment_train' raised in the skill's scripts/run.py:15",
     True, RAN, "fail", {"S0": "passed", "S1": "passed", "S2": "failed"}),
    ("a doc test that ran something of the skill passes", [S0, S1, S2], [], {}, "completed",
     "1 of 1 documented block(s) ran", True, RAN, "pass",
     {"S0": "passed", "S1": "passed", "S2": "passed"}),
    ("a doc test whose blocks ran nothing of the skill is untested", [S0, S1, S2], [], {},
     "completed", "1 of 1 documented block(s) ran", True, [], "untested",
     {"S0": "passed", "S1": "passed", "S2": "passed"}),
    ("a contract case that ran nothing of the skill is untested", [S0, CHECK, S1], [],
     {"A1": ok()}, "completed", "", False, [], "untested",
     {"S0": "passed", "A1": "passed", "S1": "passed"}),
    ("a failing case that ran nothing of the skill still fails", [S0, CHECK, S1], [],
     {"A1": bad()}, "completed", "", False, [], "fail",
     {"S0": "passed", "A1": "failed", "S1": "passed"}),
    ("without exercise evidence asked for, the old rules hold", [S0, CHECK, S1], [],
     {"A1": ok()}, "completed", "", False, None, "pass",
     {"S0": "passed", "A1": "passed", "S1": "passed"}),
]


@pytest.mark.parametrize(("rule", "specs", "findings", "checks", "run_status", "run_text",
                          "doc_test", "exercised", "status", "by_id"), HONEST,
                         ids=[r[0] for r in HONEST])
def test_static_doc_test_and_honest_pass_rules(rule, specs, findings, checks, run_status,
                                               run_text, doc_test, exercised, status, by_id):
    j = judge(specs, [], checks, {}, 1.0, run_status=run_status, run_text=run_text,
              doc_test=DocTestSummary(run_status, run_text) if doc_test else None,
              findings=findings, exercised=exercised)
    assert j.status == status, j.reason
    assert {e.id: e.status for e in j.expectations} == by_id


def test_the_reasons_name_the_line_and_what_ran():
    j = judge([S0, CHECK, S1], [], {"A1": ok()}, {}, 1.0, findings=[MISSING], exercised=RAN)
    assert "SKILL.md line 14: runs scripts/run.py, which the skill does not have" in j.reason
    j = judge([S0, S1, S2], [], {}, {}, 1.0, doc_test=DocTestSummary("completed", "1 block ran"),
              exercised=[])
    assert j.reason.startswith("nothing of the skill ran")
    j = judge([S0, S1, S2], [], {}, {}, 1.0,
              doc_test=DocTestSummary("failed", "SKILL.md line 9: KeyError\ntraceback"),
              exercised=RAN)
    assert j.reason.endswith(": SKILL.md line 9: KeyError")


def test_without_the_skill_the_static_check_does_not_apply():
    j = judge([S0, CHECK, S1], [], {"A1": ok()}, {}, 1.0, findings=[MISSING], exercised=[],
              skill_installed=False)
    assert j.status == "pass" and [e.id for e in j.expectations] == ["A1"]


# ---- the docstring's rules, one row each, where a rule had no row of its own -------------

TYPO = FirstAttemptError(seq=3, tool="bash", exit_code=2, command="ls nothere",
                         excerpt="ls: cannot access 'nothere'")
PROBE_OK = ProbeResult(status="passed", evidence="2 of 2 step(s) ran")
PROBE_STOPPED = ProbeResult(status="inconclusive", evidence="preflight failed: no GPU")
DOC_DEFECT = "SKILL.md line 9: KeyError: 'segment_train' raised in the skill's scripts/run.py"


def row(rule, specs, status, by_id, **inputs):
    return pytest.param(specs, inputs, status, by_id, id=rule)


RULE_ROWS = [
    row("S2: a failed call that ran no documented command is the grader's, not S2",
        [CHECK, S1, S2], "pass", {"A1": "passed", "S1": "passed", "S2": "passed"},
        checks={"A1": ok()}, errors=[TYPO]),
    row("S2: a documented command that failed fails it, next to a failed typo",
        [CHECK, S1, S2], "fail", {"A1": "passed", "S1": "passed", "S2": "failed"},
        checks={"A1": ok()}, errors=[TYPO, DOCUMENTED_FAILED]),
    row("S3: a probe that failed on the skill's side fails the case", [CHECK, S1, S3], "fail",
        {"A1": "passed", "S1": "passed", "S3": "failed"}, checks={"A1": ok()},
        probe=PROBE_FAILED),
    row("S3: a probe that passed passes", [CHECK, S1, S3], "pass",
        {"A1": "passed", "S1": "passed", "S3": "passed"}, checks={"A1": ok()}, probe=PROBE_OK),
    row("S3: an inconclusive probe leaves S3 ungraded and the case to the rest",
        [CHECK, S1, S3], "pass", {"A1": "passed", "S1": "passed", "S3": "ungraded"},
        checks={"A1": ok()}, probe=PROBE_STOPPED),
    row("S3: a probe that did not run is ungraded", [CHECK, S1, S3], "pass",
        {"A1": "passed", "S1": "passed", "S3": "ungraded"}, checks={"A1": ok()}),
    row("the threshold: a rate exactly at it passes (1 of 2 at 0.5)", [CHECK, S1], "pass",
        {"A1": "failed", "S1": "passed"}, checks={"A1": bad()}, threshold=0.5),
    row("the threshold: a rate just below it fails (1 of 2 at 0.51)", [CHECK, S1], "fail",
        {"A1": "failed", "S1": "passed"}, checks={"A1": bad()}, threshold=0.51),
    row("untested: nothing runnable is untested even when a check failed", [CHECK, S1],
        "untested", {"A1": "failed", "S1": "passed"}, checks={"A1": bad()},
        run_status="untested", run_text="no steps under literal"),
    row("untested: a skill edit still fails it", [CHECK, S1], "fail",
        {"A1": "passed", "S1": "failed"}, checks={"A1": ok()}, changes=[EDIT],
        run_status="untested", run_text="no steps under literal"),
    row("doc test: a skill edit fails a doc test that passed", [S0, S1, S2], "fail",
        {"S0": "passed", "S1": "failed", "S2": "passed"}, changes=[EDIT],
        doc_test=DocTestSummary("completed", "2 of 2 documented block(s) ran"), exercised=RAN),
    row("doc test: a defect fails it", [S0, S1, S2], "fail",
        {"S0": "passed", "S1": "passed", "S2": "failed"},
        doc_test=DocTestSummary("failed", DOC_DEFECT), exercised=RAN),
    row("doc test: needs X is untested", [S0, S1, S2], "untested",
        {"S0": "passed", "S1": "passed", "S2": "passed"},
        doc_test=DocTestSummary("untested", "needs pdftotext"), exercised=[]),
    row("doc test: a timeout is an environment error", [S0, S1, S2], "error",
        {"S0": "passed", "S1": "passed", "S2": "passed"},
        doc_test=DocTestSummary("timeout", "timeout after 1 of 3 block(s)"), exercised=RAN),
    row("without the skill: the assertions decide, not the doc test's defect", [CHECK, S1, S2],
        "pass", {"A1": "passed"}, checks={"A1": ok()},
        doc_test=DocTestSummary("failed", DOC_DEFECT), skill_installed=False),
    row("without the skill: a doc test that passed does not hide a failed assertion",
        [CHECK, S1, S2], "fail", {"A1": "failed"}, checks={"A1": bad()},
        doc_test=DocTestSummary("completed", "1 of 1 block(s) ran"), skill_installed=False),
]


@pytest.mark.parametrize(("specs", "inputs", "status", "by_id"), RULE_ROWS)
def test_each_rule_of_the_judge(specs, inputs, status, by_id):
    inputs = {"changes": [], "checks": {}, "verdicts": {}, "threshold": 1.0, **inputs}
    j = judge(specs, inputs.pop("changes"), inputs.pop("checks"), inputs.pop("verdicts"),
              inputs.pop("threshold"), **inputs)
    assert j.status == status, j.reason
    assert {e.id: e.status for e in j.expectations} == by_id


def test_what_each_structural_assertion_cites():
    j = judge([S1, S2, S3], [], {}, {}, 1.0, None, [TYPO, DOCUMENTED_FAILED], PROBE_STOPPED)
    e = {x.id: x for x in j.expectations}
    assert e["S2"].evidence == ("event 5 exited 1: KeyError: 'segment_train' — `python3 run.py "
                                "segment_train` (documented as `scripts/run.py segment_train`)")
    assert e["S2"].terminal_passed is True  # the agent may have worked around it
    assert e["S3"].evidence == "probe inconclusive: preflight failed: no GPU"
    assert j.reason.startswith(
        "a documented command failed (1/2 first-attempt, 1 ungraded): event 5 exited 1")
    j = judge([S1, S2], [], {}, {}, 1.0,
              doc_test=DocTestSummary("failed", DOC_DEFECT + "\nTraceback ..."))
    assert j.expectations[1].evidence == DOC_DEFECT
    assert j.reason == ("a documented command failed (1/2 first-attempt): " + DOC_DEFECT)


def test_a_broken_grader_with_nothing_else_graded_says_why():
    j = judge([NL, S1], [], {}, {}, 1.0, "grader model failed: 503")
    assert (j.status, j.reason) == ("error", "grader model failed: 503")


# ---- what the evidence and the reason say, word for word ---------------------------------

def test_change_evidence_lists_each_change_with_its_detail_and_event():
    chmod = ChangeMade(id="C2", path="scripts/run.py", change="modified", diff="",
                       detail="mode 0644 -> 0755")
    content = EDIT.model_copy(update={"detail": "content"})
    assert change_evidence([content, chmod]) == (
        "C1 modified SKILL.md by event 4 (edit_file); C2 modified scripts/run.py "
        "(mode 0644 -> 0755)")


def _failure(seq, excerpt):
    return FirstAttemptError(seq=seq, tool="bash", exit_code=1, command="python3 run.py x",
                             excerpt=excerpt, documented="scripts/run.py x")


def test_documented_evidence_quotes_the_last_output_line_of_at_most_three_calls():
    from aeval.verdicts.judge import documented_evidence

    long = "E" * 250
    shown = documented_evidence([_failure(5, "Traceback\n  File run.py\nKeyError: 'x'\n"),
                                 _failure(7, ""), _failure(9, long)])
    assert shown == ("event 5 exited 1: KeyError: 'x' — `python3 run.py x` (documented as "
                     "`scripts/run.py x`); event 7 exited 1:  — `python3 run.py x` (documented "
                     f"as `scripts/run.py x`); event 9 exited 1: {'E' * 200} — `python3 run.py "
                     "x` (documented as `scripts/run.py x`)")
    four = documented_evidence([_failure(i, "boom") for i in range(4)])
    assert four.count("event ") == 3 and four.endswith("; and 1 more")
    assert not documented_evidence([_failure(i, "boom") for i in range(3)]).endswith("more")
    assert documented_evidence([]) == "no documented command failed"


def test_static_evidence_lists_at_most_three_findings():
    from aeval.verdicts.judge import static_evidence

    findings = [StaticFinding(file="SKILL.md", line=n, kind="missing", path="scripts/run.py",
                              problem=MISSING.problem) for n in (3, 5, 8, 13)]
    three = "; ".join(f"SKILL.md line {n}: {MISSING.problem}" for n in (3, 5, 8))
    assert static_evidence(findings[:3]) == three
    assert static_evidence(findings) == three + "; and 1 more"
    assert static_evidence([]) == "every path SKILL.md names exists and is usable"


def _by_id(j):
    return {e.id: e for e in j.expectations}


def test_each_expectation_carries_its_evidence_and_terminal_verdict():
    j = judge([S0, S1, S2, S3, CHECK, NL], [], {"A1": ok("out.json: 120 bytes")},
              {"A2": says(evidence="'Winner: B' in report.md"),
               "A1": GraderVerdict(id="A1", passed=True, needed_correction=True,
                                   evidence="rewrote out.json after a crash")},
              1.0, None, [], PROBE_FAILED, findings=[MISSING])
    e = _by_id(j)
    assert (e["S0"].passed, e["S0"].terminal_passed) == (False, False)
    assert e["S0"].evidence == f"SKILL.md line 14: {MISSING.problem}"
    assert (e["S2"].evidence, e["S2"].terminal_passed) == ("no documented command failed", True)
    assert (e["S3"].evidence, e["S3"].terminal_passed) == ("step 1 exited 1: KeyError", False)
    assert (e["A1"].passed, e["A1"].terminal_passed, e["A1"].needed_correction) == (
        False, True, True)
    assert e["A1"].evidence == ("out.json: 120 bytes | grader: needed a correction: rewrote "
                                "out.json after a crash")
    assert (e["A2"].evidence, e["A2"].graded_by, e["A2"].needed_correction) == (
        "'Winner: B' in report.md", "grader", False)
    assert [x.graded_by for x in j.expectations] == ["structural"] * 4 + ["check", "grader"]
    j = judge([S0, S3, CHECK], [], {"A1": ok("found")}, {"A1": says(passed=False)}, 1.0,
              probe=PROBE_OK, findings=[])
    e = _by_id(j)
    assert (e["S0"].terminal_passed, e["S3"].terminal_passed) == (True, True)
    assert (e["S3"].evidence, e["A1"].evidence) == ("2 of 2 step(s) ran", "found")
    assert e["A1"].needed_correction is False
    assert _by_id(judge([S3, CHECK], [], {"A1": ok()}, {}, 1.0))["S3"].evidence == (
        "probe inconclusive: the probe did not run")
    assert _by_id(judge([CHECK], [], {}, {}, 1.0))["A1"].evidence == "the check did not run"


def test_a_doc_test_s2_cites_the_first_line_and_passes_terminally_only_when_clean():
    j = judge([S1, S2], [], {}, {}, 1.0, doc_test=DocTestSummary(
        "failed", f"{DOC_DEFECT}\nTraceback (most recent call last):\nKeyError"))
    s2 = _by_id(j)["S2"]
    assert (s2.evidence, s2.terminal_passed) == (DOC_DEFECT, False)
    j = judge([S1, S2], [], {}, {}, 1.0,
              doc_test=DocTestSummary("completed", "1 of 1 documented block(s) ran\nmore"))
    s2 = _by_id(j)["S2"]
    assert (s2.evidence, s2.terminal_passed) == (
        "no SKILL.md block failed in the skill's own code", True)
    assert j.reason == "doc test: 1 of 1 documented block(s) ran\nmore"


def test_the_reasons_of_untested_and_nothing_ran():
    assert judge([CHECK, S1], [], {"A1": ok()}, {}, 1.0,
                 run_status="untested").reason == "nothing runnable for this runtime"
    assert judge([CHECK, S1], [], {"A1": ok()}, {}, 1.0, run_status="untested",
                 run_text="no steps under literal").reason == "no steps under literal"
    j = judge([CHECK, S1], [], {"A1": ok()}, {}, 1.0, exercised=[])
    assert j.reason == ("nothing of the skill ran: no file of the skill was run, or read by a "
                        "call that succeeded (2/2 first-attempt (100% vs threshold 100%))")
    j = judge([S1, S2], [], {}, {}, 1.0,
              doc_test=DocTestSummary("completed", "2 block(s) ran"), exercised=[])
    assert j.reason == ("nothing of the skill ran: no SKILL.md block ran or read a file of the "
                        "skill (doc test: 2 block(s) ran)")
    j = judge([CHECK, NL, S1], [], {"A1": ok()}, {}, 1.0, "grader model failed: 503")
    assert j.reason == ("grader model failed: 503 (the case would otherwise pass: 2/2 "
                        "first-attempt (100% vs threshold 100%), 1 ungraded)")


def test_a_run_is_completed_unless_the_runtime_said_otherwise():
    j = judge([S1, S2], [], {}, {}, 1.0, doc_test=DocTestSummary("completed", ""))
    assert (j.status, j.reason) == ("pass", "doc test: ")


@pytest.mark.parametrize("extra", [{}, {"run_status": "untested", "run_text": "needs jq"},
                                   {"grader_error": "grader model failed: 503"},
                                   {"exercised": []}])
def test_a_command_over_the_disk_bound_fails_the_case_whatever_else_passed(extra):
    """What the skill or the agent wrote is theirs: `fail` with the bound as the reason,
    never pass, untested or error (eval.config's max_disk_mb raises the bound)."""
    j = judge([CHECK, S1], [], {"A1": ok()}, {}, 1.0,
              exceeded="wrote more than 64 MiB (70.2 MiB held)", **extra)
    assert j.status == "fail"
    assert j.reason.startswith("wrote more than 64 MiB (70.2 MiB held)") \
        and "max_disk_mb" in j.reason, j.reason
