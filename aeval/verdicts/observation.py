"""What one case's attempt left, read once: the value between observing and deciding.

Grading a case is three steps: *observe* (the grade task reads the attempt's events, runs the
deterministic checks in its workspace and asks the grader model: all the I/O), *decide* (a
pure function of the plan, the assertions and this Observation: the judge), and *write*
(grading.json and eval_metadata.json). Nothing that decides a verdict reads a file.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from aeval.artifacts import (
    AttemptRecord,
    ChangeMade,
    Claim,
    Efficiency,
    EvalFeedback,
    FirstAttemptError,
    GraderInfo,
    GraderVerdict,
    ProbeResult,
)
from aeval.events import Event, Usage
from aeval.isolation.sandbox import SandboxStatus
from aeval.isolation.workspace import OutputFile
from aeval.verdicts.checks import CheckOutcome
from aeval.verdicts.doctest import DocTestReport


class GraderOutcome(BaseModel):
    """What the grader model said (or why it said nothing usable)."""

    verdicts: dict[str, GraderVerdict] = Field(default_factory=dict)
    info: GraderInfo = Field(default_factory=lambda: GraderInfo(model=None,
                                                                protocol_fidelity=True))
    claims: list[Claim] = Field(default_factory=list)
    feedback: EvalFeedback = Field(default_factory=EvalFeedback)
    error: str | None = None
    injections: list[str] = Field(default_factory=list)
    wall_s: float | None = None


class Observation(BaseModel):
    """Everything the judge decides one case from, secrets already redacted."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    attempts: list[AttemptRecord] = Field(description="Every recorded attempt, in order.")
    failure: str | None = Field(
        None, description="Why the case did not execute (its last attempt raised), in one "
                          "line; None when it executed and the rest below is filled in.")
    events: list[Event] = Field(default_factory=list, description="The graded attempt's.")
    changes: list[ChangeMade] = Field(default_factory=list,
                                      description="Δ, each change tied to its event.")
    checks: dict[str, CheckOutcome] = Field(
        default_factory=dict, description="The deterministic checks' outcomes by assertion id.")
    grader: GraderOutcome = Field(default_factory=GraderOutcome)
    errors: list[FirstAttemptError] = Field(
        default_factory=list, description="Failed tool calls, documented ones marked.")
    probe: ProbeResult | None = Field(None, description="The documented-workflow probe.")
    run_status: str = Field("completed", description="The runtime's own end.")
    run_text: str = Field("", description="The runtime's final text.")
    doc_test: DocTestReport | None = Field(
        None, description="The case was a doc test of SKILL.md's blocks: what each did.")
    exercised: list[str] | None = Field(
        None, description="Evidence that the skill ran; None: not asked (uplift's arms).")
    exceeded: str | None = Field(None, description="A bound a command of the attempt went "
                                                   "over (the disk bound).")
    executor_wall_s: float = 0.0
    observe_s: float = Field(0.0, description="Seconds spent observing (checks, grader).")
    usage: Usage = Field(default_factory=Usage, description="The runtime's reported usage.")
    runtime_version: str | None = None
    outputs: list[OutputFile] = Field(default_factory=list)
    efficiency: Efficiency | None = Field(None, description="What the graded attempt cost.")
    stray: list[str] | None = Field(None, description="Outputs outside the declared ones "
                                                      "(None: the case declares none).")
    sandbox: SandboxStatus | None = Field(None, description="The sandbox the checks ran in.")
