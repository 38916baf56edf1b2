"""Case verdicts and the CI gate (DESIGN.md: verdicts, errors, gate)."""

from __future__ import annotations

from aeval.artifacts import CaseResult, Expectation, Gate, GradingSummary, SkillResult
from aeval.capabilities import VERBATIM_RUNTIMES
from aeval.exit_codes import ENVIRONMENT, FAIL, INTERNAL, OK, TOO_FEW_TESTED, USAGE
from aeval.verdicts.introduced import introduced_errors


def summarize(expectations: list[Expectation]) -> GradingSummary:
    graded = [e for e in expectations if e.status != "ungraded"]
    passed = sum(1 for e in graded if e.passed)
    terminal = sum(1 for e in graded if e.terminal_passed)
    n = len(graded)
    first = passed / n if n else None
    return GradingSummary(
        passed=passed, failed=n - passed, ungraded=len(expectations) - n,
        total=len(expectations), pass_rate=first, first_attempt_pass_rate=first,
        terminal_pass_rate=terminal / n if n else None,
    )


def case_status(expectations: list[Expectation], threshold: float) -> tuple[str, str]:
    """(status, reason) from first-attempt verdicts only.

    - the structural assertion failed (the skill was edited) -> fail, whatever else passed;
    - no assertion besides the structural one could be graded -> error (nothing was judged);
    - first-attempt pass rate >= threshold -> pass, else fail.
    """
    s = summarize(expectations)
    ungraded = f", {s.ungraded} ungraded" if s.ungraded else ""
    structural_failed = [e for e in expectations if e.kind == "structural" and e.passed is False]
    if structural_failed:
        what = {"S0": "the static skill check found a defect",
                "S1": "skill files modified during execution",
                "S2": "a documented command failed",
                "S3": "the documented workflow failed as written"}
        why = "; ".join(what.get(e.id, e.text) for e in structural_failed)
        first = (structural_failed[0].evidence or "").split("\n", 1)[0][:400]
        return "fail", (f"{why} ({s.passed}/{s.passed + s.failed} first-attempt{ungraded})"
                        + (f": {first}" if first else ""))
    judged = [e for e in expectations if e.kind != "structural" and e.status != "ungraded"]
    if not judged:
        return "error", (f"nothing could be graded: {s.ungraded} natural-language assertion(s) "
                         f"need a grader model (--grader-model)" if s.ungraded
                         else "the case has no assertions")
    rate = s.first_attempt_pass_rate or 0.0
    verdict = "pass" if rate >= threshold else "fail"
    first_failed = next((e for e in expectations if e.passed is False), None)
    why = f"; first failure {first_failed.id}: {first_failed.text}" if first_failed else ""
    return verdict, (f"{s.passed}/{s.passed + s.failed} first-attempt "
                     f"({rate:.0%} vs threshold {threshold:.0%}){ungraded}{why}")


SEVERITY = ("fail", "internal", "error", "untested", "pass")


def counted(cases: list[CaseResult]) -> list[CaseResult]:
    """The cases a skill's verdict and the gate count: all but a supplementary doc test of
    SKILL.md that was `untested` beside other cases (it found nothing self-contained to
    run; the contract's cases test the skill)."""
    others = [c for c in cases if not c.supplementary]
    return [c for c in cases if not (c.supplementary and c.status == "untested" and others)]


def skill_status(cases: list[CaseResult]) -> str:
    """The worst case status of a skill (its counted cases): fail, internal, error, untested,
    then pass."""
    statuses = {c.status for c in counted(cases)}
    for s in SEVERITY:
        if s in statuses:
            return s
    return "untested"  # no case ran


def gate(skills: list[SkillResult], usage_error: str | None = None,
         require_tested: bool = False, unconcluded: list[str] | None = None,
         min_tested: int = 0) -> Gate:
    """Exit code of `aeval run`, first match wins (`aeval.exit_codes`): 1 a case failed (a
    skill defect), or an environment error the change introduced (`aeval.verdicts.introduced`); 2 a
    usage error or an invalid skill (or, with ``require_tested``, an untested case); 4 aeval itself
    failed on a case (internal) or concluding a skill (``unconcluded``: ``name [runtime]:
    why``); 3 an environment error; 5 fewer case runs tested (passed or failed) than
    ``min_tested``; 0 otherwise: untested cases are listed as a warning, never counted as
    passed, and a run that tested nothing says so (``no case was tested``, `Gate.nothing_tested`).
    A reason names at most five cases or skills (a case run of several epochs with its epoch,
    ``a/smoke #2``) and says how many more there are."""
    def cases(status: str) -> list[str]:
        return [case_label(s.name, c) for s in skills for c in counted(s.cases)
                if c.status == status]

    ran = [c for s in skills for c in counted(s.cases)]
    tested = sum(c.status in ("pass", "fail") for c in ran)
    untested = cases("untested")
    counts = {"tested": tested, "untested": len(untested), "min_tested": min_tested,
              "nothing_tested": bool(ran) and tested == 0}

    def verdict(code: int, reason: str) -> Gate:
        return Gate(exit_code=code, reason=reason, **counts)

    if fails := cases("fail"):
        return verdict(FAIL, f"{len(fails)} case(s) failed: {_some(fails)}")
    if introduced := introduced_errors(skills):  # the change broke its own environment
        return verdict(FAIL, f"{len(introduced)} environment error(s) introduced by this "
                             f"change: {_some(introduced)}")
    invalid = [s.name for s in skills if s.status == "invalid"]
    if usage_error or invalid:
        return verdict(USAGE, usage_error or f"invalid skill(s): {_some(invalid)}")
    if require_tested and untested:
        return verdict(USAGE, f"{len(untested)} case(s) untested (--require-tested): "
                              f"{_some(untested)}")
    if internal := cases("internal"):
        return verdict(INTERNAL, f"aeval failed on {len(internal)} case(s) (a bug to report, "
                                 f"not the skill's): {_some(internal)}")
    if unconcluded:
        return verdict(INTERNAL, f"aeval failed concluding {len(unconcluded)} skill(s) (a bug "
                                 f"to report, not the skill's): {_some(unconcluded)}")
    if errors := cases("error"):
        return verdict(ENVIRONMENT, f"{len(errors)} case(s) hit an environment error: "
                                    f"{_some(errors)}")
    if tested < min_tested:
        what = (nothing_tested(skills) if counts["nothing_tested"] else
                f"{tested} case run(s) tested" + (f"; {len(untested)} untested: "
                                                  f"{_some(untested)}" if untested else ""))
        return verdict(TOO_FEW_TESTED, f"{what}: fewer than --min-tested {min_tested}")
    if not ran:
        return verdict(OK, "no skill to evaluate")
    if counts["nothing_tested"]:
        return verdict(OK, nothing_tested(skills))
    if untested:
        return verdict(OK, f"every tested case passed; {len(untested)} untested: "
                           f"{_some(untested)}")
    return verdict(OK, "every case passed")


def case_label(skill: str, case: CaseResult) -> str:
    """``skill/case``, and ``#N`` for one epoch of several (as the console's rows name it)."""
    return f"{skill}/{case.case_id}" + (f" #{case.epoch}" if case.epoch is not None else "")


def nothing_tested(skills: list[SkillResult]) -> str:
    """``no case was tested (3 skill(s), 9 case run(s) untested: a, b, c)``: a run whose every
    case run was untested, named by skill (its case runs all say the same)."""
    names = [s.name for s in skills if any(c.status == "untested" for c in counted(s.cases))]
    runs = sum(c.status == "untested" for s in skills for c in counted(s.cases))
    return (f"no case was tested ({len(names)} skill(s), {runs} case run(s) untested: "
            f"{_some(names)})")


def _some(names: list[str], shown: int = 5) -> str:
    """``a, b, c, d, e and 2 more``: a list cut for a one-line reason, saying what was cut."""
    rest = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {rest} more" if rest > 0 else "")


def has_later_attempt(case: CaseResult) -> bool:
    """Whether the case run has a later attempt to speak of: an executor that went on after
    its first attempt and made some assertion pass only then (its terminal pass rate differs
    from the first-attempt one). A run of `literal`, or an agent run that corrected nothing,
    has only its first attempt."""
    return (case.runtime not in VERBATIM_RUNTIMES
            and case.terminal_pass_rate is not None
            and case.terminal_pass_rate != case.first_attempt_pass_rate)


def terminal_rate(case: CaseResult) -> float | None:
    """The terminal pass rate as the console, report.html and the MR note show it: only where
    a later attempt exists (`has_later_attempt`), None (shown `–`) otherwise, so no report
    implies that a retry happened when none did. grading.json keeps both rates as graded."""
    return case.terminal_pass_rate if has_later_attempt(case) else None


def rate_cells(case: CaseResult) -> tuple[str, str]:
    """(first-attempt, terminal) as every view shows them (the console, report.html,
    summary.md): ``–`` for an untested case, which has no rate (its assertions were never
    run, so "100% (0/0)" or "33%" would read as a result), ``82% (9/11)`` otherwise; the
    terminal rate only where a later attempt exists (`terminal_rate`)."""
    if case.status == "untested":
        return "–", "–"
    t = terminal_rate(case)
    first = case.first_attempt_pass_rate
    graded = case.passed + case.failed
    return (f"{first:.0%} ({case.passed}/{graded})" if graded else "–",
            "–" if t is None else f"{t:.0%}")


def passed_after_correction(e: Expectation, runtime: str) -> bool:
    """An assertion that failed on the first attempt and passed only after the executor
    corrected something (never under `literal`, which corrects nothing)."""
    return runtime not in VERBATIM_RUNTIMES and not e.passed and bool(e.terminal_passed)
