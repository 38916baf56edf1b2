"""uplift.json: does the skill help? Each case run twice per epoch, with and without the
skill installed, and the paired statistics per case and per skill."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aeval.artifacts.case import Artifact, CaseStatus
from aeval.strict import StrictModel


class PairOutcome(StrictModel):
    """One skill x case x runtime x epoch, run with and without the skill."""

    skill: str
    skill_key: str | None = Field(
        None, description="The skill's folder key in the runs: its name, or the name plus a "
                          "hash of its folder when two skills share the name.")
    runtime: str
    case_id: str
    epoch: int | None = Field(None, description="Epoch number when the arms have several.")
    with_status: CaseStatus | None = Field(description="Case status with the skill installed "
                                                       "(None: the case did not run).")
    without_status: CaseStatus | None = Field(description="Case status without the skill.")
    with_dir: str | None = Field(None, description="Case folder in the with-skill run.")
    without_dir: str | None = Field(None, description="Case folder in the without-skill run.")
    comparable: bool = Field(description="Both arms ended pass or fail: the pair counts in the "
                                         "statistics. Otherwise it is excluded (an error, "
                                         "untested or internal arm says nothing about the "
                                         "skill).")
    with_tokens: int = Field(0, description="Executor tokens with the skill: uncached input + "
                                            "cached input + output.")
    without_tokens: int = Field(0, description="Executor tokens without the skill.")
    with_wall_s: float | None = Field(None, description="Executor wall seconds with the skill.")
    without_wall_s: float | None = Field(None, description="Executor wall seconds without.")


class ArmStats(StrictModel):
    """One arm (with or without the skill) over the comparable pairs."""

    passed: int = Field(description="Pairs whose case passed in this arm.")
    pass_rate: float | None = Field(description="passed / pairs; None when no pair counts.")
    mean_tokens: float | None = Field(description="Mean executor tokens per run (uncached + "
                                                  "cached input + output).")
    mean_wall_s: float | None = Field(description="Mean executor wall seconds per run.")


class UpliftStats(StrictModel):
    """Paired statistics over a set of pairs (one case, or every case of a skill)."""

    pairs: int = Field(description="Comparable pairs (both arms pass or fail).")
    excluded: int = Field(description="Pairs left out: an arm ended error, untested or "
                                      "internal, or did not run.")
    both_pass: int = Field(description="McNemar table: passed with and without the skill.")
    with_only: int = Field(description="Passed only with the skill (discordant, for it).")
    without_only: int = Field(description="Passed only without the skill (discordant, "
                                          "against it).")
    both_fail: int = Field(description="Failed with and without the skill.")
    with_skill: ArmStats
    without_skill: ArmStats
    uplift: float | None = Field(description="Pass rate with minus pass rate without the skill "
                                             "(the paired difference); None without pairs.")
    ci_low: float | None = Field(description="Lower bound of the confidence interval of the "
                                             "uplift (Newcombe's hybrid score interval for "
                                             "paired proportions, method 10).")
    ci_high: float | None = Field(description="Upper bound of that interval.")
    confidence: float = Field(0.95, description="Confidence level of the interval.")
    mcnemar_p: float | None = Field(description="Exact (binomial) McNemar p-value, two-sided, "
                                                "over the discordant pairs; 1.0 when there are "
                                                "none; None without pairs.")
    verdict: Literal["helps", "hurts", "positive", "negative", "no_difference", "no_data"] = Field(
        description="helps: uplift > 0 and p < alpha; hurts: uplift < 0 and p < alpha; "
                    "positive / negative: uplift > 0 / < 0, not significant; no_difference: "
                    "uplift 0; no_data: no comparable pair.")
    flagged: bool = Field(description="The uplift is negative (hurts or negative).")


class CaseUplift(StrictModel):
    case_id: str
    stats: UpliftStats


class SkillUplift(StrictModel):
    """One skill x runtime: its cases and the pooled statistics over all of their pairs."""

    skill: str
    skill_key: str | None = Field(
        None, description="The skill's folder key in the runs: its name, or the name plus a "
                          "hash of its folder when two skills share the name.")
    runtime: str
    stats: UpliftStats = Field(description="Over every pair of every case of the skill.")
    cases: list[CaseUplift] = Field(default_factory=list)

    def label(self) -> str:
        """The skill's name, with its folder key when two skills share the name."""
        return self.skill if self.skill_key in (None, self.skill) \
            else f"{self.skill} ({self.skill_key})"


class UpliftGate(StrictModel):
    exit_code: Literal[0, 1, 2, 3, 4]
    reason: str


class UpliftReport(Artifact):
    """uplift.json."""

    uplift_id: str
    with_run: str = Field(description="Run id of the arm with the skill installed.")
    without_run: str = Field(description="Run id of the arm without the skill.")
    runtimes: list[str]
    model: str | None = None
    grader_model: str | None = None
    epochs: int
    alpha: float = Field(0.05, description="Significance level of the McNemar test.")
    skills: list[SkillUplift] = Field(default_factory=list)
    pairs: list[PairOutcome] = Field(default_factory=list)
    invalid: list[str] = Field(default_factory=list,
                               description="Skills that could not be loaded (not run).")
    gate: UpliftGate | None = None
