"""grading.json: per-assertion verdicts, self-correction, claims, feedback, metrics."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aeval.artifacts.case import Artifact, AssertionKind, CaseStatus, Efficiency
from aeval.events import Usage
from aeval.strict import StrictModel


class Expectation(StrictModel):
    """The verdict on one assertion."""

    id: str
    text: str
    kind: AssertionKind
    status: Literal["passed", "failed", "ungraded"] = Field(
        description="First-attempt verdict. ungraded: no grader could judge it (never a pass)."
    )
    passed: bool | None = Field(description="First-attempt pass; None when ungraded.")
    terminal_passed: bool | None = Field(
        description="Pass judged on the final state, corrections allowed; None when ungraded."
    )
    needed_correction: bool = Field(
        False, description="Its success depended on a correction the executor applied."
    )
    evidence: str = Field("", description="Quoted from the transcript, the outputs or a check.")
    graded_by: Literal["check", "grader", "structural", "none"]


class GradingSummary(StrictModel):
    passed: int = Field(description="First-attempt passes.")
    failed: int = Field(description="First-attempt failures.")
    ungraded: int
    total: int
    pass_rate: float | None = Field(description="= first_attempt_pass_rate (the gate signal).")
    first_attempt_pass_rate: float | None = Field(description="passed / graded; None if none.")
    terminal_pass_rate: float | None = Field(description="Terminal passes / graded.")


class FirstAttemptError(StrictModel):
    """A tool call that failed during the run."""

    seq: int = Field(description="Sequence number of the failing tool_result event.")
    call_seq: int | None = Field(None, description="Sequence number of its tool_call event.")
    tool: str
    exit_code: int | None = None
    command: str | None = Field(None, description="The command or input, shortened.")
    excerpt: str = Field("", description="The end of the output, where errors are.")
    documented: str | None = Field(
        None, description="The documented command this call ran (`file action flags`), when "
                          "it ran one: its failure fails the first attempt (structural S2).")
    agent_error: str | None = Field(
        None, description="Why this failure is the agent's, not the skill's: the runtime "
                          "refused the call (a tool it has not got, its policy) or the command "
                          "named the skill where this runtime does not put it. Such a call "
                          "never counts against a documented command.")


class ChangeMade(StrictModel):
    """One edit to the skill's own files found by the manifest diff (Δ)."""

    id: str = Field(description="C1, C2 ... (what suggestions cite in grounded_in).")
    path: str = Field(description="Path relative to the skill root.")
    change: Literal["added", "modified", "deleted"]
    diff: str = Field(description="Unified diff, shipped -> after execution.")
    event_seq: int | None = Field(None, description="The tool_call during which it was made, "
                                                    "when known (see attribution).")
    tool: str | None = None
    detail: str = Field("", description="What changed, readable ('content', 'mode 0644 -> "
                                        "0755', 'modified and restored: written ...').")
    attribution: Literal["recorded", "direct", "during_call", "after_call", "named",
                         "unknown"] = Field(
        "unknown", description="How `event_seq` is known. recorded: the runtime's own record "
                               "of this call says it changed the file (Codex's file_change, "
                               "Claude Code's and OpenCode's write/edit tools, builtin "
                               "write_file/edit_file), the first such call; for a change no "
                               "record names, by time: direct: the watch saw the change "
                               "during a write/edit tool call; during_call: during another "
                               "call (a shell command); after_call: between calls, after this "
                               "one (a process it left running); named: the watch saw nothing "
                               "(no inotify), so the command during which the file changed "
                               "or else the first call that names it (a guess); unknown: no "
                               "call."
    )


class ProbeResult(StrictModel):
    """The documented-workflow probe: the contract's `steps` run verbatim (literal, no model)
    in a workspace of their own, beside an agent runtime's run."""

    status: Literal["passed", "failed", "inconclusive"] = Field(
        description="passed: every step succeeded; failed: a step failed on the skill's side; "
                    "inconclusive: the environment stopped it (a missing host tool, a "
                    "timeout, setup or preflight).")
    evidence: str = Field(description="The failing step and the end of its output, or why "
                                      "the probe says nothing.")
    dir: str | None = Field(None, description="The probe's folder, run-relative (events, "
                                              "transcript, attempts).")


class SelfCorrection(StrictModel):
    was_needed: bool = Field(description="Δ non-empty, or a failed call later retried.")
    first_attempt_errors: list[FirstAttemptError] = Field(default_factory=list)
    changes_made: list[ChangeMade] = Field(default_factory=list)
    affected_assertions: list[str] = Field(default_factory=list,
                                           description="Ids failed because of a correction.")


class Claim(StrictModel):
    claim: str
    type: Literal["factual", "process", "quality"]
    verified: bool | None = Field(description="None when it could not be checked.")
    evidence: str = ""


class FeedbackItem(StrictModel):
    assertion: str | None = Field(None, description="Assertion id the remark is about.")
    reason: str


class EvalFeedback(StrictModel):
    suggestions: list[FeedbackItem] = Field(default_factory=list)
    overall: str = ""


class ExecutionMetrics(StrictModel):
    tool_calls: dict[str, int] = Field(default_factory=dict, description="Calls per tool.")
    total_tool_calls: int = 0
    failed_tool_calls: int = 0
    commands: int = Field(0, description="Shell commands run (`bash` tool calls).")
    turns: int = Field(0, description="Assistant messages (model turns).")
    usage: Usage = Field(default_factory=Usage)
    output_files: int = 0
    transcript_chars: int = 0


class Timing(StrictModel):
    executor_wall_s: float | None = None
    grader_wall_s: float | None = None
    total_s: float | None = None


class GraderInfo(StrictModel):
    model: str | None = Field(description="Grader model; None when no model graded.")
    protocol_fidelity: bool = Field(
        description="The grader's answer validated (after at most the allowed retries)."
    )
    attempts: int = 0


class Grading(Artifact):
    """grading.json."""

    skill: str
    case_id: str
    runtime: str
    status: CaseStatus
    status_reason: str = Field(description="Why this status, in one line.")
    expectations: list[Expectation] = Field(default_factory=list)
    summary: GradingSummary
    self_correction: SelfCorrection
    claims: list[Claim] = Field(default_factory=list)
    eval_feedback: EvalFeedback = Field(default_factory=EvalFeedback)
    execution_metrics: ExecutionMetrics = Field(default_factory=ExecutionMetrics)
    timing: Timing = Field(default_factory=Timing)
    efficiency: Efficiency | None = Field(None, description="What the graded attempt cost "
                                                            "(None: it never ran).")
    stray_files: list[str] | None = Field(
        None, description="Outputs outside what the case declares (None: it declares none, "
                          "or nothing ran).")
    grader: GraderInfo
    probe: ProbeResult | None = Field(
        None, description="The documented-workflow probe, for agent runtimes with `steps`.")
    injection_attempts: list[str] = Field(
        default_factory=list,
        description="Lines of the transcript or outputs addressed to the grader (prompt "
                    "injection); withheld from the grader and listed here as evidence.")


# ---- what the grader model answers (validated; an invalid answer is retried) -----------------


class GraderVerdict(StrictModel):
    id: str = Field(description="Assertion id, as given.")
    passed: bool = Field(description="Satisfied by the evidence in the final state.")
    needed_correction: bool = Field(
        False, description="Success depended on a correction applied after a first failure.")
    evidence: str = Field(min_length=1, description="Quoted from the transcript or outputs.")


class GraderAnswer(StrictModel):
    """The grader's JSON answer (eval_skill/agents/grader.md)."""

    expectations: list[GraderVerdict]
    claims: list[Claim] = Field(default_factory=list)
    eval_feedback: EvalFeedback = Field(default_factory=EvalFeedback)
