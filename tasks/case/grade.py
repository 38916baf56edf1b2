"""Grade one case in three steps: ``observe`` (read the attempt's events and Δ, run the
deterministic checks in its workspace, ask the grader model: one `Observation`), ``decide``
(pure: the judge's verdicts, the self-correction section and the case status from
first-attempt results, as one `Grading`), and ``write_grading`` (eval_metadata.json, then
grading.json). ``CasePlan.result`` makes the CaseResult from the Grading.

Natural-language assertions need a grader model; without one they are `ungraded`, which
never counts as passed.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime

from prefect.artifacts import create_markdown_artifact

from aeval.artifacts import (
    AssertionsFile,
    CaseResult,
    EvalMetadata,
    ExecutionMetrics,
    Expectation,
    FirstAttemptError,
    GraderInfo,
    Grading,
    ProbeResult,
    SelfCorrection,
    Timing,
)
from aeval.capabilities import MODEL_RUNTIMES
from aeval.errors import EnvironmentFailure
from aeval.events import (
    Event,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    Usage,
    UsageEvent,
    calls_by_id,
    read_events,
    transcript_text,
)
from aeval.isolation.redact import Redactor
from aeval.run.plan import AttemptOutcome, CasePlan, ExecutionRecord
from aeval.run.read import read_attempts
from aeval.run.store import write_model
from aeval.skill.contract import Budget
from aeval.tasks.case.assertions import runs_doc_test
from aeval.tasks.case.install import case_redactor, resolve_credentials
from aeval.tasks.case.model_grader import (
    TRANSCRIPT_CAP,
    call_grader,
    grader_input,
    head_tail,
    neutralize,
    render_outputs,
    skill_lines,
    withhold,
)
from aeval.tasks.case.sandboxing import check_sandbox
from aeval.tasks.run.prefect_artifacts import artifact_key, case_markdown
from aeval.verdicts.attribution import attribute_changes
from aeval.verdicts.checks import CheckContext, CheckOutcome, run_check
from aeval.verdicts.doctest import DocTestReport
from aeval.verdicts.documented import (
    agent_errors,
    documented_signatures,
    failed_documented_calls,
    skill_files,
)
from aeval.verdicts.efficiency import SHELL_TOOLS, measure, stray_files
from aeval.verdicts.judge import STATIC, judge, judge_structural, over_bound, static_evidence
from aeval.verdicts.observation import GraderOutcome, Observation
from aeval.verdicts.status import summarize


def first_attempt_errors(events: list[Event]) -> list[FirstAttemptError]:
    calls = calls_by_id(events)
    out = []
    for e in events:
        if isinstance(e, ToolResultEvent) and not e.ok:
            call = calls.get(e.call_id)
            cmd = None
            if call is not None:
                cmd = call.input.get("command") if isinstance(call.input.get("command"), str) \
                    else json.dumps(call.input, ensure_ascii=False)
            out.append(FirstAttemptError(
                seq=e.seq, call_seq=call.seq if call else None, tool=e.tool,
                exit_code=e.exit_code, command=(cmd or "")[:300] or None,
                excerpt=e.output.strip()[-400:]))
    return out


def metrics(events: list[Event], outputs: int) -> ExecutionMetrics:
    calls = Counter(e.tool for e in events if isinstance(e, ToolCallEvent))
    usage = sum((e.usage for e in events if isinstance(e, UsageEvent)), Usage())
    return ExecutionMetrics(
        tool_calls=dict(calls), total_tool_calls=sum(calls.values()),
        commands=sum(n for tool, n in calls.items() if tool in SHELL_TOOLS),
        failed_tool_calls=sum(1 for e in events if isinstance(e, ToolResultEvent) and not e.ok),
        turns=sum(1 for e in events if isinstance(e, MessageEvent) and e.role == "assistant"),
        usage=usage, output_files=outputs, transcript_chars=len(transcript_text(events)))


def _not_run(assertions: AssertionsFile, reason: str) -> list[Expectation]:
    return [Expectation(id=a.id, text=a.text, kind=a.kind, status="ungraded", passed=None,
                        terminal_passed=None, evidence=f"not evaluated: {reason}",
                        graded_by="none") for a in assertions.assertions]


def ask_grader(plan: CasePlan, assertions: AssertionsFile, execution: ExecutionRecord,
               redactor: Redactor) -> GraderOutcome:
    """The separated grader's verdicts: input is exactly prompt, transcript, outputs and the
    assertions, with the skill's own lines and lines addressed to the grader withheld."""
    # a budget is measured, never judged: the grader gets no cost to weigh
    judged = [a for a in assertions.assertions
              if a.kind != "structural" and not isinstance(a.check, Budget)]
    if not plan.run.grader_model or not judged:
        return GraderOutcome()
    files = plan.files
    lines = skill_lines(plan.skill.path) | {
        ln.strip() for c in execution.changes for ln in (c.after or "").splitlines()
        if len(ln.strip()) >= 12}
    transcript, found_t = neutralize(withhold(files.transcript.read_text(), lines))
    transcript = head_tail(transcript, TRANSCRIPT_CAP)
    outputs, found_o = neutralize(render_outputs(
        files.outputs, [o.model_dump() for o in execution.outputs], lines))
    out = GraderOutcome(injections=found_t + found_o)
    text = grader_input(plan.case.prompt, transcript, outputs, judged)
    try:
        answer = call_grader(plan.run.grader_model, plan.run.api_base, text, judged)
    except EnvironmentFailure as exc:
        out.error = f"grader model failed: {redactor.text(str(exc))[:300]}"
        return out
    out.wall_s = round(answer.wall_s, 3)
    out.info = GraderInfo(model=plan.run.grader_model, protocol_fidelity=answer.value is not None,
                          attempts=answer.attempts)
    if answer.value is None:
        out.error = (f"grader answer invalid after {answer.attempts} attempt(s): "
                     f"{(answer.error or '')[:300]}")
    else:
        out.verdicts = {v.id: v for v in answer.value.expectations}
        out.claims, out.feedback = answer.value.claims, answer.value.eval_feedback
    return out


def mark_documented(errors: list[FirstAttemptError], events: list[Event], plan: CasePlan,
                    execution: ExecutionRecord) -> list[FirstAttemptError]:
    """The failed tool calls, those that ran a command the skill documents marked with it,
    and those that are the agent's own error (refused, another runtime's path) with why."""
    files = skill_files(plan.skill.path)
    docs = documented_signatures(plan.skill.skill.body, plan.case.steps, files)
    roots = (str(execution.skill_copy),
             execution.skill_copy.relative_to(execution.workspace).as_posix())
    found = {f.seq: f.signature for f in failed_documented_calls(events, docs, files, roots)}
    theirs = agent_errors(events, files, roots)
    return [e.model_copy(update={"documented": found.get(e.seq),
                                 "agent_error": theirs.get(e.seq)}) for e in errors]


def grade(plan: CasePlan, assertions: AssertionsFile, outcome: AttemptOutcome,
          probe: ProbeResult | None = None) -> CaseResult:
    """Grade one case: observe, decide, write grading.json and eval_metadata.json. Never
    raises for the case's own outcome: an attempt that failed becomes status `error` with
    its reason."""
    observation = observe(plan, assertions, outcome, probe)
    grading = decide(plan, assertions, observation)
    write_grading(plan, observation, grading)
    return plan.result(grading, attempts=len(observation.attempts))


def observe(plan: CasePlan, assertions: AssertionsFile, outcome: AttemptOutcome,
            probe: ProbeResult | None = None) -> Observation:
    """Everything the judge needs, read once: the recorded attempts, the graded attempt's
    events and Δ, the deterministic checks run in its workspace, the grader model's answer;
    every text redacted. Only the failure's reason when the attempt failed."""
    start = time.monotonic()
    attempts = read_attempts(plan.case_dir)
    redactor = case_redactor(plan)
    if (failure := outcome.failure) is not None:
        reason = redactor.text(
            f"{type(failure).__name__}: {failure}".strip().splitlines()[0][:400])
        last = attempts[-1] if attempts else None
        if last and last.error:
            reason = f"{last.error_type}: {last.error.splitlines()[0][:400]}"
        return Observation(attempts=attempts, failure=reason,
                           exceeded=last.exceeded if last else None)
    execution = outcome.record
    assert execution is not None
    events = read_events(plan.files.events)
    skill_rel = execution.skill_copy.relative_to(execution.workspace).as_posix()
    result = execution.result
    doc_test = None
    if runs_doc_test(plan):
        doc_test = result.doc_test or DocTestReport(
            nothing=result.final_text or "the runtime reported no doc test")
    own = execution.changes
    if doc_test is not None:
        # doc blocks run from the skill folder: the files they create are their outputs;
        # Δ is about the skill's own files (changed or deleted)
        own = [c for c in own if c.change != "added"]
    # command checks: a fresh sandbox, HOME and PATH the attempt could not change
    sandbox, env = check_sandbox(plan, execution, _credentials(plan))
    efficiency = measure(events, result.usage, result.wall_s,
                         model=plan.runtime in MODEL_RUNTIMES, run_status=result.status)
    stray = stray_files([o.path for o in execution.outputs], plan.case)
    ctx = CheckContext(workspace=execution.workspace, events=events, env=env, sandbox=sandbox,
                       redactor=redactor, efficiency=efficiency, stray=stray)
    checks = {a.id: run_check(a.check, ctx) for a in assertions.assertions
              if a.check is not None}
    graded = ask_grader(plan, assertions, execution, redactor)
    graded.verdicts = {k: v.model_copy(update={"evidence": redactor.text(v.evidence)})
                       for k, v in graded.verdicts.items()}
    last = execution.attempts[-1] if execution.attempts else None
    resources = last.resources if last is not None else None
    return Observation(
        attempts=attempts, events=events, changes=attribute_changes(own, events, skill_rel),
        checks={k: CheckOutcome(v.passed, redactor.text(v.evidence)) for k, v in checks.items()
                if v is not None},
        grader=graded, errors=mark_documented(first_attempt_errors(events), events, plan,
                                              execution),
        probe=probe, run_status=result.status, run_text=result.final_text, doc_test=doc_test,
        exercised=None if not plan.run.require_exercise
        else resources.exercised if resources is not None else [],
        exceeded=last.exceeded if last is not None else None,
        executor_wall_s=result.wall_s, observe_s=time.monotonic() - start, usage=result.usage,
        runtime_version=execution.runtime_version, outputs=execution.outputs,
        efficiency=efficiency, stray=stray, sandbox=sandbox.status)


def decide(plan: CasePlan, assertions: AssertionsFile, seen: Observation) -> Grading:
    """The case's grading from what was observed: the judge's verdicts and status, the
    self-correction section, metrics and timing. Pure: reads nothing, writes nothing."""
    if seen.failure is not None:
        return _not_executed(plan, assertions, seen.failure, seen.exceeded)
    j = judge(assertions.assertions, seen.changes, seen.checks, seen.grader.verdicts,
              plan.case.pass_threshold, seen.grader.error, seen.errors, seen.probe,
              run_status=seen.run_status, run_text=seen.run_text,
              doc_test=seen.doc_test.summary() if seen.doc_test is not None else None,
              skill_installed=plan.run.install_skill, findings=plan.skill.static_findings,
              exercised=seen.exercised, exceeded=seen.exceeded)
    status, reason = j.status, _with_provisioning(j.status, j.reason, seen)
    graded = seen.grader
    wall = seen.executor_wall_s
    return Grading(
        skill=plan.skill.name, case_id=plan.case.id, runtime=plan.runtime, status=status,
        status_reason=reason, expectations=j.expectations,
        summary=summarize(j.expectations), claims=graded.claims,
        eval_feedback=graded.feedback, injection_attempts=graded.injections,
        self_correction=SelfCorrection(
            was_needed=bool(seen.changes) or any(e.needed_correction for e in j.expectations),
            first_attempt_errors=seen.errors, changes_made=seen.changes,
            affected_assertions=[e.id for e in j.expectations if e.needed_correction]),
        execution_metrics=metrics(seen.events, len(seen.outputs)),
        timing=Timing(executor_wall_s=round(wall, 3), grader_wall_s=graded.wall_s,
                      total_s=round(wall + seen.observe_s, 3)),
        efficiency=seen.efficiency, stray_files=seen.stray,
        grader=graded.info, probe=seen.probe)


def _with_provisioning(status: str, reason: str, seen: Observation) -> str:
    """An untested case's reason, with what the provisioning phase could not fetch for it
    (``not provisioned: needs X (not on the package registry)``): the attempt lacked it."""
    last = seen.attempts[-1] if seen.attempts else None
    records = [last.provisioning, last.npm_provisioning] if last is not None else []
    lacking = [w for r in records if r is not None and (w := r.lacking()) and w not in reason]
    if status != "untested" or not lacking:
        return reason
    return f"{reason} ({'; '.join(lacking)})"


def _not_executed(plan: CasePlan, assertions: AssertionsFile, reason: str,
                  exceeded: str | None) -> Grading:
    """The grading of a case whose execution raised: `error` with its reason, but `fail`
    when the static skill check found a defect (S0 needs nothing to have run) or a command
    went over the attempt's disk bound."""
    expectations = _not_run(assertions, "the case did not execute")
    status = "error"
    if plan.skill.static_findings and plan.run.install_skill:
        expectations = [judge_structural(a, [], [], None, plan.skill.static_findings)
                        if a.id == STATIC else e
                        for a, e in zip(assertions.assertions, expectations, strict=True)]
        status = "fail"
        reason = (f"the static skill check found a defect: "
                  f"{static_evidence(plan.skill.static_findings)} (the case did not execute: "
                  f"{reason})")
    if exceeded:  # e.g. a setup that wrote past the disk bound
        status, reason = "fail", over_bound(exceeded, reason)
    return Grading(
        skill=plan.skill.name, case_id=plan.case.id, runtime=plan.runtime, status=status,
        status_reason=reason, expectations=expectations, summary=summarize(expectations),
        self_correction=SelfCorrection(was_needed=False),
        grader=GraderInfo(model=None, protocol_fidelity=True))


def write_grading(plan: CasePlan, seen: Observation, grading: Grading) -> None:
    """eval_metadata.json, then grading.json: the last file marks the case finished
    (``--resume`` skips it)."""
    attempts = seen.attempts
    meta = EvalMetadata(
        run_id=plan.run.run_id, skill=plan.skill.name, skill_path=str(plan.skill.path),
        case_id=plan.case.id, runtime=plan.runtime, model=plan.run.model, epoch=plan.epoch,
        tier=plan.skill.tier, contract=plan.skill.contract, prompt=plan.case.prompt,
        expected_outcome=plan.case.expected_outcome,
        required_credentials=plan.case.required_credentials, lint_warnings=plan.skill.warnings,
        attempts=attempts, skill_installed=plan.run.install_skill,
        started_at=attempts[0].started_at if attempts else None,
        status=grading.status, ended_at=datetime.now(UTC))
    if seen.failure is None:
        meta.usage = seen.usage if seen.usage.requests else grading.execution_metrics.usage
        meta.wall_s = round(seen.executor_wall_s, 3)
        meta.runtime_version = seen.runtime_version
        meta.outputs = seen.outputs
        meta.efficiency, meta.stray_files = seen.efficiency, seen.stray
        meta.sandbox = seen.sandbox
    redactor = case_redactor(plan)
    write_model(plan.files.eval_metadata, meta, redactor)
    write_model(plan.files.grading, grading, redactor)


def _credentials(plan: CasePlan) -> dict[str, str]:
    try:
        return resolve_credentials(plan)
    except Exception:
        return {}


def grade_and_publish(plan: CasePlan, assertions: AssertionsFile, outcome: AttemptOutcome,
                      probe: ProbeResult | None = None) -> CaseResult:
    """Grade one case (its attempt's ``outcome``: the record, or the failure), and attach
    its verdict table to the running task run (the case chain) as a Prefect markdown
    artifact."""
    result = grade(plan, assertions, outcome, probe)
    create_markdown_artifact(
        case_markdown(result, plan.skill.name, plan.run.run_dir),
        key=artifact_key("case", plan.skill.name, plan.case.id, plan.runtime,
                         *([f"epoch-{plan.epoch}"] if plan.epoch is not None else [])),
        description=f"{plan.label}: {result.status}")
    return result
