"""The judge: from what was observed to per-assertion verdicts and the case status. Pure: no
IO, no model call; the grade task gathers the inputs and writes the result.

Rules (DESIGN.md, "Verdicts" and "The first-attempt rule"):

- structural (S0): passes only when the static skill check found nothing (every path SKILL.md
  names exists, what it runs directly can start, what it documents its scripts accept); a
  finding fails the case on every tier and runtime, before and whatever anything ran.
- structural (S1): passes only when Δ is empty; a non-empty Δ fails the case whatever else
  passed (the executor had to edit the skill).
- structural (S2): no tool call that ran a command the skill documents (same skill file,
  action and flags) failed; one that did fails the first attempt, even when the agent then
  worked around it without editing the skill. For a doc test under `literal`: no SKILL.md
  block failed in the skill's own code or interface (the doc-test rules).
- structural (S3): the documented-workflow probe (the contract's steps, run verbatim beside an
  agent runtime) did not fail on the skill's side; an inconclusive probe leaves it ungraded.
- any failed structural assertion fails the case, whatever else passed.
- a deterministic check decides its own pass; when the grader says its success needed a
  correction, it fails the first attempt (still passing terminally).
- a natural-language assertion takes the grader's verdict; `needed_correction` fails the
  first attempt.
- an assertion nobody could judge is `ungraded` (never a pass), with the reason.
- status: Δ non-empty -> fail; nothing but the structural assertion judged -> error (nothing
  could be graded); first-attempt pass rate >= threshold -> pass, else fail.
- a broken grader (its answer stayed invalid, or the call failed) never hides a deterministic
  `fail`; it only turns what would have been `pass` into `error`.
- the runtime found nothing runnable (`untested`: no steps under literal, no self-contained
  doc block, a host tool the skill needs is missing) -> untested, with the reason; never pass.
- honest pass: a case that would pass but never exercised the skill (no file of it ran, none
  was read by a command that succeeded; for an agent, not even SKILL.md was loaded) ->
  untested, "nothing of the skill ran".
- a command killed over the attempt's disk bound (``exceeded``: "wrote more than 10 GiB")
  -> fail, whatever else passed: what the skill or the agent wrote is theirs, and the bound
  is the contract's to raise (``max_disk_mb``); so is a command stopped at the case's memory
  limit ("killed at the case's memory limit of N MiB", ``max_memory_mb``).
- a budget (B1, B2 ...: eval.config's `max_tokens`, `max_commands`, `max_wall_s`) the
  attempt went over -> fail, whatever else the case came to (threshold,
  grader, doc test), with the measured figure (`ran 57 commands`) as evidence.
- a doc-test case (the generic tier under literal) takes the doc-test verdict: pass, fail
  only on a block that broke in the skill's own code, untested, or error; Δ still fails it.
- without the skill installed (uplift's without-skill arm): the structural assertions
  S1-S3 are about the skill as shipped (its copy, its documented commands, its workflow),
  so they are not judged and not listed; Δ, documented-command failures, the probe and the
  doc-test rule do not apply. The assertions' first-attempt pass rate is what counts, by the
  same threshold, grader and untested rules as with the skill.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from aeval.artifacts import (
    ChangeMade,
    Expectation,
    FirstAttemptError,
    GraderVerdict,
    ProbeResult,
)
from aeval.artifacts.case import AssertionSpec
from aeval.isolation.memory import is_memory_kill
from aeval.skill.contract import Budget
from aeval.verdicts.checks import CheckOutcome
from aeval.verdicts.doctest import DocTestSummary, doc_test_verdict
from aeval.verdicts.finding import StaticFinding
from aeval.verdicts.status import case_status

NO_GRADER = "no grader model configured (--grader-model or AEVAL_GRADER_MODEL)"
STATIC = "S0"  # what SKILL.md names exists and is usable (the static skill check)
UNMODIFIED = "S1"  # the skill's files were not modified during execution
DOCUMENTED = "S2"  # the commands the skill documents worked when the agent ran them
PROBE = "S3"  # the documented workflow runs as written
DOC_TEST_TEXT = "SKILL.md's shell blocks run without a defect in the skill's own code"
NOTHING_RAN = "nothing of the skill ran"
STRUCTURAL_TEXTS = {
    STATIC: "Every path SKILL.md names exists, and what it runs and documents the skill accepts",
    UNMODIFIED: "The skill's files were not modified during execution",
    DOCUMENTED: "Every command the skill documents worked when the executor ran it",
    PROBE: "The documented workflow (the case's steps) runs as written",
}


class Judgement(BaseModel):
    """The judge's answer for one case."""

    model_config = ConfigDict(extra="forbid")

    expectations: list[Expectation]
    status: str = Field(description="pass | fail | error")
    reason: str = Field(description="Why, in one line.")


def over_bound(exceeded: str, reason: str | None = None) -> str:
    """The reason of a case whose command went over a bound of the attempt: the disk bound,
    or the memory limit (`aeval.isolation.memory`, whose reason says itself what raises it)."""
    if is_memory_kill(exceeded):
        return exceeded + (f"; {reason}" if reason else "")
    return (f"{exceeded}: a command went over the attempt's disk bound and was killed "
            f"(eval.config's max_disk_mb raises it)" + (f"; {reason}" if reason else ""))


def change_evidence(changes: list[ChangeMade]) -> str:
    """What the structural assertion cites: each change and the event that made it."""
    if not changes:
        return "no skill file changed (manifest diff empty)"
    return "; ".join(
        f"{c.id} {c.change} {c.path}"
        + (f" ({c.detail})" if c.detail and c.detail != "content" else "")
        + (f" by event {c.event_seq} ({c.tool})" if c.event_seq is not None else "")
        for c in changes)


def documented_evidence(failures: list[FirstAttemptError]) -> str:
    if not failures:
        return "no documented command failed"
    shown = "; ".join(f"event {f.seq} exited {f.exit_code}: "
                      f"{(f.excerpt.strip().splitlines() or [''])[-1][:200]} — `{f.command}` "
                      f"(documented as `{f.documented}`)" for f in failures[:3])
    return shown + (f"; and {len(failures) - 3} more" if len(failures) > 3 else "")


def static_evidence(findings: list[StaticFinding]) -> str:
    if not findings:
        return "every path SKILL.md names exists and is usable"
    shown = "; ".join(str(f) for f in findings[:3])
    return shown + (f"; and {len(findings) - 3} more" if len(findings) > 3 else "")


def judge_structural(spec: AssertionSpec, changes: list[ChangeMade],
                     errors: list[FirstAttemptError], probe: ProbeResult | None,
                     findings: list[StaticFinding] | None = None,
                     doc_test: DocTestSummary | None = None) -> Expectation:
    base = {"id": spec.id, "text": spec.text, "kind": spec.kind, "graded_by": "structural"}
    if spec.id == STATIC:
        ok = not findings
        return Expectation(**base, status="passed" if ok else "failed", passed=ok,
                           terminal_passed=ok, evidence=static_evidence(findings or []))
    if spec.id == DOCUMENTED and doc_test is not None:
        ok = doc_test.status != "failed"
        evidence = doc_test.final_text.split("\n", 1)[0] if not ok else (
            "no SKILL.md block failed in the skill's own code")
        return Expectation(**base, status="passed" if ok else "failed", passed=ok,
                           terminal_passed=ok, evidence=evidence)
    if spec.id == DOCUMENTED:
        failed = [e for e in errors if e.documented]
        return Expectation(**base, status="failed" if failed else "passed", passed=not failed,
                           terminal_passed=True, evidence=documented_evidence(failed))
    if spec.id == PROBE:
        if probe is None or probe.status == "inconclusive":
            why = probe.evidence if probe else "the probe did not run"
            return Expectation(**base, status="ungraded", passed=None, terminal_passed=None,
                               evidence=f"probe inconclusive: {why}")
        ok = probe.status == "passed"
        return Expectation(**base, status="passed" if ok else "failed", passed=ok,
                           terminal_passed=ok, evidence=probe.evidence)
    ok = not changes
    return Expectation(**base, status="passed" if ok else "failed", passed=ok,
                       terminal_passed=True, needed_correction=not ok,
                       evidence=change_evidence(changes))


def judge_assertion(spec: AssertionSpec, changes: list[ChangeMade],
                    check: CheckOutcome | None, verdict: GraderVerdict | None,
                    grader_error: str | None, errors: list[FirstAttemptError] | None = None,
                    probe: ProbeResult | None = None,
                    findings: list[StaticFinding] | None = None,
                    doc_test: DocTestSummary | None = None) -> Expectation:
    """The verdict on one assertion."""
    base = {"id": spec.id, "text": spec.text, "kind": spec.kind}
    if spec.kind == "structural":
        return judge_structural(spec, changes, errors or [], probe, findings, doc_test)
    if spec.check is not None:
        if check is None:  # a check that could not run is not a pass
            return Expectation(**base, status="ungraded", passed=None, terminal_passed=None,
                               evidence="the check did not run", graded_by="none")
        corrected = bool(verdict and verdict.needed_correction and check.passed)
        first = check.passed and not corrected
        evidence = check.evidence + (
            f" | grader: needed a correction: {verdict.evidence}" if corrected and verdict
            else "")
        return Expectation(**base, status="passed" if first else "failed", passed=first,
                           terminal_passed=check.passed, needed_correction=corrected,
                           evidence=evidence, graded_by="check")
    if verdict is not None:
        first = verdict.passed and not verdict.needed_correction
        return Expectation(**base, status="passed" if first else "failed", passed=first,
                           terminal_passed=verdict.passed,
                           needed_correction=verdict.needed_correction,
                           evidence=verdict.evidence, graded_by="grader")
    return Expectation(**base, status="ungraded", passed=None, terminal_passed=None,
                       evidence=grader_error or NO_GRADER, graded_by="none")


def judge(assertions: list[AssertionSpec], changes: list[ChangeMade],
          checks: dict[str, CheckOutcome], verdicts: dict[str, GraderVerdict],
          threshold: float, grader_error: str | None = None,
          errors: list[FirstAttemptError] | None = None,
          probe: ProbeResult | None = None, run_status: str = "completed",
          run_text: str = "", doc_test: DocTestSummary | None = None,
          skill_installed: bool = True,
          findings: list[StaticFinding] | None = None, exercised: list[str] | None = None,
          exceeded: str | None = None) -> Judgement:
    """Expectations and status of one case (`judge_case`); then a budget the attempt went
    over (an assertion whose check is a `Budget`) fails the case whatever else it came to,
    the measured figure as the reason: a budget is the contract's hard limit, not one
    assertion among others that a threshold could outvote."""
    j = judge_case(assertions, changes, checks, verdicts, threshold, grader_error, errors,
                   probe, run_status, run_text, doc_test, skill_installed, findings, exercised,
                   exceeded)
    budgets = {a.id for a in assertions if isinstance(a.check, Budget)}
    over = [e for e in j.expectations if e.id in budgets and e.passed is False]
    if not over:
        return j
    why = "; ".join(f"{e.id} {e.text}: {e.evidence}" for e in over)
    return j.model_copy(update={"status": "fail", "reason": f"over budget: {why} ({j.reason})"})


def judge_case(assertions: list[AssertionSpec], changes: list[ChangeMade],
               checks: dict[str, CheckOutcome], verdicts: dict[str, GraderVerdict],
               threshold: float, grader_error: str | None = None,
               errors: list[FirstAttemptError] | None = None,
               probe: ProbeResult | None = None, run_status: str = "completed",
               run_text: str = "", doc_test: DocTestSummary | None = None,
               skill_installed: bool = True,
               findings: list[StaticFinding] | None = None,
               exercised: list[str] | None = None, exceeded: str | None = None) -> Judgement:
    """Expectations and status of one case.

    ``checks``: outcome per deterministic assertion id; ``verdicts``: the grader's verdict per
    assertion id (empty without a grader); ``grader_error``: why the grader gave no usable
    answer (a failed call, or an answer that stayed invalid), None when it answered or none
    was asked; ``errors``: the run's failed tool calls (those that ran a documented command
    carry ``documented``); ``probe``: the documented-workflow probe, when one ran;
    ``run_status`` / ``run_text``: the runtime's own end (`untested` and its reason);
    ``doc_test``: for a doc test of SKILL.md's blocks, what its blocks add up to
    (`DocTestReport.summary`): its status and text stand for the runtime's, which decides
    nothing of a doc test; ``skill_installed`` False:
    uplift's without-skill arm (no structural assertion, no skill rule applies);
    ``findings``: the static skill check's (S0); ``exercised``: the evidence that the skill
    ran (None: not asked, as for a recorded run graded again without it); ``exceeded``: the
    bound a command of the attempt went over (`over_bound`)."""
    if doc_test is not None:
        run_status, run_text = doc_test.status, doc_test.final_text
    if not skill_installed:
        assertions = [a for a in assertions if a.kind != "structural"]
        changes, errors, probe, doc_test, findings = [], [], None, None, []
    expectations = [judge_assertion(a, changes, checks.get(a.id), verdicts.get(a.id),
                                    grader_error, errors, probe, findings, doc_test)
                    for a in assertions]
    status, reason = case_status(expectations, threshold)
    if exceeded:
        return Judgement(expectations=expectations, status="fail",
                         reason=over_bound(exceeded, reason))
    if status != "fail" or not any(e.kind == "structural" and e.passed is False
                                   for e in expectations):
        if run_status == "untested":
            return Judgement(expectations=expectations, status="untested",
                             reason=run_text or "nothing runnable for this runtime")
        if doc_test is not None:
            status, reason = doc_test_verdict(run_status, run_text)
    if grader_error and status == "pass":
        status, reason = "error", f"{grader_error} (the case would otherwise pass: {reason})"
    elif grader_error and status == "error" and doc_test is None:
        status, reason = "error", grader_error
    if status == "pass" and skill_installed and exercised is not None and not exercised:
        status, reason = "untested", (
            f"{NOTHING_RAN}: no SKILL.md block ran or read a file of the skill ({reason})"
            if doc_test is not None
            else f"{NOTHING_RAN}: no file of the skill was run, or read by a call "
                 f"that succeeded ({reason})")
    return Judgement(expectations=expectations, status=status, reason=reason)
