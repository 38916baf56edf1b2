"""triggers.json: trigger accuracy of each skill's description among distractor skills."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from aeval.artifacts.case import Artifact
from aeval.strict import StrictModel


class TriggerTrial(StrictModel):
    """One prompt run once: did the runtime load the skill under test?"""

    kind: Literal["should", "should_not"] = Field(
        description="should: the skill ought to be loaded; should_not: it ought not to be.")
    index: int = Field(ge=0, description="Position of the prompt in its list.")
    epoch: int | None = Field(None, description="Epoch number when the run has several.")
    prompt: str
    outcome: Literal["tp", "fn", "fp", "tn", "error"] = Field(
        description="tp / fn on a should-prompt, fp / tn on a should_not-prompt; error: the "
                    "runtime failed, the trial counts nowhere.")
    loaded: list[str] = Field(default_factory=list,
                              description="Skills the runtime loaded, first load first (this "
                                          "skill and distractors).")
    evidence: list[str] = Field(default_factory=list,
                                description="`event n: how` for each load.")
    error: str | None = Field(None, description="Why the trial failed (error outcome).")
    dir: str = Field(description="The trial's folder (events.jsonl, transcript.md), relative "
                                 "to the triggers run folder.")


class TriggerScore(StrictModel):
    """Precision and recall of one skill x runtime over its trigger prompts x epochs."""

    skill: str
    runtime: str
    source: Literal["contract", "generic"] = Field(
        description="contract: the eval.config's `triggers`; generic: one should-prompt "
                    "derived from the description.")
    distractors: list[str] = Field(description="The other skills installed beside it.")
    tp: int = Field(0, description="Should-prompts on which the skill was loaded.")
    fn: int = Field(0, description="Should-prompts on which it was not.")
    fp: int = Field(0, description="Should_not-prompts on which it was loaded.")
    tn: int = Field(0, description="Should_not-prompts on which it was not.")
    errors: int = Field(0, description="Trials the runtime did not finish (counted nowhere).")
    precision: float | None = Field(description="tp / (tp + fp); None when nothing was loaded.")
    recall: float | None = Field(description="tp / (tp + fn); None without should-trials.")
    distractor_picks: dict[str, int] = Field(
        default_factory=dict,
        description="Distractor name -> should-trials in which it was loaded instead of this "
                    "skill (recall lost to it).")
    trials: list[TriggerTrial] = Field(default_factory=list)


class TriggersReport(Artifact):
    """triggers.json of one `aeval trigger-accuracy` run."""

    run_id: str
    created_at: datetime
    runtimes: list[str]
    model: str | None = None
    epochs: int = 1
    max_turns: int = Field(description="Model turns each trial may take before it is stopped.")
    distractor_source: str = Field(description="`marketplace`, `bundled` or the --distractors "
                                               "folder.")
    scores: list[TriggerScore] = Field(default_factory=list)
    invalid: list[str] = Field(default_factory=list,
                               description="Skills that could not be loaded, one line each.")
