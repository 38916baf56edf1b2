"""Cross-run reports: compare.json (runtimes / models side by side) and regrade.json
(another grader on the same recorded transcripts)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aeval.artifacts.aggregate import Gate
from aeval.artifacts.case import Artifact, AssertionKind
from aeval.strict import StrictModel


class RefusedTools(StrictModel):
    """Tool calls a row's runtime refused: the agent's errors, never the skill's. Many of
    them mean the agent (a scripted one, typically) was written for another runtime."""

    calls: int = Field(description="Tool calls the runtime did not run.")
    unknown_tools: list[str] = Field(
        default_factory=list, description="Names the agent called that the runtime has not got.")
    misplaced: int = Field(0, description="Failed calls that named the skill where this "
                                          "runtime does not put it (another runtime's folder).")


class CompareRow(StrictModel):
    """One runtime (or runtime x model) over the same skills and eval.config."""

    label: str = Field(description="runtime, or runtime:model")
    runtime: str
    model: str | None
    run_id: str
    cases: int
    statuses: dict[str, int]
    gate: Gate = Field(description="The gate of this row's run (as `aeval run` exits).")
    wall_minutes: float = Field(description="Elapsed wall time of this row's run, from its "
                                            "start to its report.")
    executor_minutes: float = Field(description="Executor wall time summed over the cases "
                                                "(cases run side by side overlap).")
    assertions_passed: int = Field(description="First-attempt passes over graded assertions.")
    assertions_total: int = Field(description="Graded assertions.")
    causal_share: float | None = Field(description="LV1 / (LV1 + LV2) over all suggestions.")
    self_corrections: int = Field(description="Skill-file edits the executor made (Δ).")
    protocol_fidelity: str = Field(description="Cases whose grader answers validated, `n/m` "
                                               "over the cases a grader model judged; `–` "
                                               "when no grader ran.")
    requests: int = Field(0, description="Model requests of the executor.")
    tokens_in: int = Field(description="Uncached prompt tokens of the executor.")
    tokens_cached: int = Field(description="Cached prompt tokens of the executor.")
    refused: RefusedTools = Field(default_factory=lambda: RefusedTools(calls=0))


class CompareReport(Artifact):
    compare_id: str
    paths: list[str]
    rows: list[CompareRow]
    gate: Gate = Field(description="The exit code of `aeval compare`: the first of its rows' "
                                   "gates in aeval run's order (1, 2, 4, 3, then 0).")


Verdict = Literal["passed", "failed"]


class RaterVerdict(StrictModel):
    """One rater's first-attempt verdict on one assertion."""

    verdict: Verdict | None = Field(
        description="First-attempt status; None: this rater gave none (ungraded, or its grader "
                    "failed: see the rater's errors).")
    evidence: str = Field("", description="The rater's evidence line, shortened.")


class AssertionVerdicts(StrictModel):
    """One assertion of one case epoch, as every rater judged it. Identified stably by
    skill / runtime / case / epoch / assertion id."""

    skill: str
    runtime: str = Field(description="Runtime of the source run (the regrade replays it).")
    case_id: str
    epoch: int | None = Field(description="Epoch; None in a one-epoch run.")
    assertion_id: str = Field(description="As in assertions.json and grading.json (A1, S1 ...).")
    text: str
    kind: AssertionKind
    counted: bool = Field(
        description="In the agreement statistics: a natural-language assertion, judged by the "
                    "grader model alone. Checks and structural assertions are the same for "
                    "every grader by construction and would only inflate agreement.")
    verdicts: dict[str, RaterVerdict] = Field(
        description="Rater (`original`, or a grader model) -> its verdict.")
    agree: bool | None = Field(
        description="Every rater with a verdict gave the same; None with fewer than two.")


class Agreement(StrictModel):
    """Agreement of a set of raters over the counted assertions each of them judged."""

    raters: list[str]
    items: int = Field(description="Counted assertions every one of these raters judged.")
    agreements: int = Field(description="Items on which all of them gave the same verdict.")
    rate: float | None = Field(description="agreements / items; None without items.")
    method: Literal["cohen", "fleiss"] = Field(
        description="Cohen's kappa for two raters, Fleiss' kappa for more.")
    kappa: float | None = Field(description="None when undefined: see kappa_note.")
    kappa_note: str | None = Field(None, description="Why kappa is undefined, when it is.")


class RaterError(StrictModel):
    """A case epoch this rater could not grade (recorded as an error, not as disagreement)."""

    skill: str
    runtime: str
    case_id: str
    epoch: int | None
    reason: str


class RaterSummary(StrictModel):
    rater: str = Field(description="`original`, or the grader model.")
    model: str | None = Field(description="The grader model (the original run's, if any).")
    runs: list[str] = Field(description="Run ids this rater's verdicts come from.")
    judged: int = Field(description="Counted assertions this rater gave a verdict on.")
    passed: int = Field(description="Of those, first-attempt passes.")
    errors: list[RaterError] = Field(default_factory=list)
    lv1: int = Field(description="LV1 fix suggestions of its runs.")
    lv2: int = Field(description="LV2 fix suggestions of its runs.")
    causal_share: float | None = Field(description="LV1 / (LV1 + LV2); None without any.")


class TierDifference(StrictModel):
    """The same finding (the same lines of a skill file) suggested in different tiers."""

    skill: str
    runtime: str
    path: str
    start_line: int
    end_line: int
    levels: dict[str, list[Literal["LV1", "LV2"]]] = Field(
        description="Rater -> the tiers it gave a suggestion on these lines ([]: none).")


class RegradeReport(Artifact):
    """regrade-<id>.json in the source run's folder: every epoch re-graded by each grader
    model, and how far the graders (and the original) agree."""

    source_run: str
    regrade_id: str
    regrade_runs: list[str] = Field(description="The replayed runs, one per grader x runtime.")
    original_grader: str | None
    grader_models: list[str]
    epochs: int = Field(description="Epochs of the source run; every one is re-graded.")
    raters: list[RaterSummary] = Field(description="`original` first, then each grader.")
    overall: Agreement = Field(description="All raters that gave any verdict.")
    among_graders: Agreement | None = Field(
        description="The new graders only, when there are two or more with verdicts.")
    pairs: list[Agreement] = Field(description="Cohen's kappa for every pair of raters.")
    assertions: list[AssertionVerdicts]
    disagreements: list[AssertionVerdicts] = Field(
        default_factory=list, description="The assertions on which the raters disagree.")
    tier_differences: list[TierDifference] = Field(default_factory=list)
