"""head_vs_base.json: is a change's skill better than its base's? Each case of a changed skill
run on both versions, then a comparative grader's blind judgement of the two outputs, asked in
both orders (position swap), per case and per skill."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aeval.artifacts.case import Artifact, CaseStatus
from aeval.strict import StrictModel

Label = Literal["A", "B"]
Side = Literal["head", "base"]
PairVerdict = Literal["head", "base", "tie", "ungraded"]


class ComparativeReason(StrictModel):
    """One reason of the comparative grader, grounded in a quote of one output."""

    output: Label = Field(description="The output the quote is taken from.")
    quote: str = Field(min_length=1, description="Text copied verbatim from that output.")
    why: str = Field(min_length=1, description="What the quote shows about the output.")


class ComparativeAnswer(StrictModel):
    """The comparative grader's answer for one order (eval_skill/agents/comparative_grader.md)."""

    winner: Literal["A", "B", "tie"] = Field(
        description="The output that better achieves the case's expected outcome and "
                    "assertions; tie when neither is better.")
    reasons: list[ComparativeReason] = Field(
        default_factory=list, description="Why, each grounded in a quote of an output.")


class OrderVerdict(StrictModel):
    """The comparative grader in one order: which version was shown as A."""

    head_as: Label = Field(description="The label the head's output had (the base had the "
                                       "other).")
    winner: Literal["A", "B", "tie"] | None = Field(
        None, description="The grader's answer; None: no valid answer (see `error`).")
    preferred: Literal["head", "base", "tie"] | None = Field(
        None, description="`winner` translated back to the version it names.")
    reasons: list[ComparativeReason] = Field(default_factory=list)
    error: str | None = Field(None, description="Why there is no answer: the model failed, "
                                                "refused, or its answer stayed invalid.")
    attempts: int = Field(0, description="Model calls made for this order.")


class SideCost(StrictModel):
    """What one version's run of a case cost (eval_metadata.json and grading.json)."""

    status: CaseStatus | None = Field(None, description="The case's status (None: not run).")
    turns: int | None = Field(None, description="Assistant messages of the executor.")
    requests: int = Field(0, description="Model requests of the executor.")
    input_tokens: int = Field(0, description="Uncached prompt tokens of the executor.")
    cached_input_tokens: int = Field(0, description="Cached prompt tokens of the executor.")
    output_tokens: int = Field(0, description="Generated tokens of the executor.")
    wall_s: float | None = Field(None, description="Executor wall seconds.")
    commands: int | None = Field(None, description="Shell commands the executor ran.")
    tool_calls: int | None = Field(None, description="Tool calls of the executor (every "
                                                     "tool, shell included).")
    dir: str | None = Field(None, description="Case folder, relative to its run's folder.")

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.cached_input_tokens + self.output_tokens


class CasePairwise(StrictModel):
    """One skill x runtime x case x epoch, run on head and on base, judged in both orders."""

    skill: str
    skill_key: str | None = Field(None, description="The skill's folder key in the head run.")
    runtime: str
    case_id: str
    epoch: int | None = Field(None, description="Epoch number when the runs have several.")
    verdict: PairVerdict = Field(
        description="head / base: the grader preferred that version in both orders; tie: it "
                    "said tie, or the two orders disagreed (position bias, cancelled); "
                    "ungraded: no judgement (a version's case did not run, no grader model, "
                    "or an order got no valid answer), never a win.")
    reason: str = Field(description="Why this verdict, in one line.")
    orders: list[OrderVerdict] = Field(
        default_factory=list, description="Head shown as A, then base shown as A.")
    head: SideCost
    base: SideCost


class Interval(StrictModel):
    """A mean over a skill's case runs (cases x epochs) with its 95% bootstrap interval
    (percentile, 2,000 resamples of the case runs, seeded: the same runs give the same
    interval)."""

    mean: float
    low: float | None = Field(None, description="None: fewer than two case runs.")
    high: float | None = None
    n: int = Field(description="Case runs it is over.")

    def text(self, spec: str = "{:.2f}") -> str:
        """``0.75 [0.50, 1.00] (n=4)``; without an interval ``0.75 (n=1)``."""
        band = "" if self.low is None or self.high is None else \
            f" [{spec.format(self.low)}, {spec.format(self.high)}]"
        return f"{spec.format(self.mean)}{band} (n={self.n})"


class SkillPairwise(StrictModel):
    """One skill x runtime: the verdicts of its cases, counted from the head's side."""

    skill: str
    skill_key: str | None = None
    runtime: str
    wins: int = Field(description="Cases (x epochs) the head won.")
    ties: int = Field(description="Ties, the cancelled position bias included.")
    losses: int = Field(description="Cases the base won.")
    ungraded: int = Field(description="Cases without a judgement.")
    position_bias: int = Field(0, description="Ties because the two orders disagreed.")
    head_mean_turns: float | None = None
    base_mean_turns: float | None = None
    head_mean_tokens: float | None = Field(None, description="Uncached + cached input + "
                                                             "output tokens, per case run.")
    base_mean_tokens: float | None = None
    head_mean_wall_s: float | None = None
    base_mean_wall_s: float | None = None
    head_mean_commands: float | None = None
    base_mean_commands: float | None = None
    preference: Interval | None = Field(
        None, description="The head's score over the graded case runs (a win 1, a tie 0.5, a "
                          "loss 0) with its interval over cases and epochs: above 0.5 the "
                          "head is preferred. None: nothing was graded.")
    commands_change: Interval | None = Field(
        None, description="Head minus base, commands run, over the case runs both versions "
                          "ran (paired by case and epoch).")
    tokens_change: Interval | None = Field(None, description="Head minus base, tokens.")
    wall_s_change: Interval | None = Field(None, description="Head minus base, wall seconds.")
    turns_change: Interval | None = Field(None, description="Head minus base, turns.")
    tool_calls_change: Interval | None = Field(None, description="Head minus base, tool "
                                                                 "calls.")
    efficiency: Literal["better", "same", "worse"] | None = Field(
        None, description="The head's cost against the base's, from the means above: worse "
                          "when one figure (commands, tokens, wall seconds) is over 1.2x the "
                          "base's by a margin (1 command, 100 tokens, 1 s), better when one is "
                          "under 1/1.2x by that margin and none is worse; None: no case ran "
                          "on both sides.")
    efficiency_reason: str | None = Field(None, description="The figures that decided it.")

    def changes(self) -> str:
        """``commands +0.00 [+0.00, +0.00] (n=4); wall s +2.77 [+2.68, +2.85] (n=4)``: the
        head's change of each cost measured on both sides, with its interval."""
        parts = []
        for label, iv, spec in (("commands", self.commands_change, "{:+.2f}"),
                                ("turns", self.turns_change, "{:+.2f}"),
                                ("tool calls", self.tool_calls_change, "{:+.2f}"),
                                ("tokens", self.tokens_change, "{:+.0f}"),
                                ("wall s", self.wall_s_change, "{:+.2f}")):
            if iv is not None:
                parts.append(f"{label} {iv.text(spec)}")
        return "; ".join(parts)

    def label(self) -> str:
        """The skill's name, with its folder key when two skills share the name."""
        return self.skill if self.skill_key in (None, self.skill) \
            else f"{self.skill} ({self.skill_key})"


class HeadVsBase(Artifact):
    """head_vs_base.json, in the head run's folder."""

    head_run: str = Field(description="Run id of the head's run (this folder).")
    base_run: str = Field(description="Run id of the base's run (`<head-run>-base`).")
    base: str | None = Field(None, description="The commit the base version was taken from "
                                               "(the merge base of the change).")
    head: str | None = Field(None, description="The head commit.")
    grader_model: str | None = Field(None, description="The comparative grader's model (the "
                                                       "run's grader model).")
    skills: list[SkillPairwise] = Field(default_factory=list)
    cases: list[CasePairwise] = Field(default_factory=list)
    new_skills: list[str] = Field(default_factory=list,
                                  description="Changed skills the base did not have (nothing "
                                              "to compare with).")
