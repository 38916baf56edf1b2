"""Trigger accuracy: did the runtime load the skill under test, among distractors?

A skill is *loaded* in a run when the events show one of:

- a file tool reading its ``SKILL.md`` (``read_file``; Claude Code's ``Read`` and OpenCode's
  ``read`` are normalized to it);
- a ``bash`` command that names its ``SKILL.md`` (``cat .agents/skills/x/SKILL.md``);
- the runtime's own skill invocation: a tool call named ``Skill`` / ``skill`` (Claude Code,
  OpenCode) whose input names the skill.

Reading some other file of a skill, or listing the skills folder, is not loading it. The
counts over the prompts give precision and recall per skill and runtime: on a should-prompt,
loading the skill is a true positive (not loading it a false negative); on a should_not-prompt,
loading it is a false positive (not loading it a true negative). A trial whose runtime failed
(an environment error) counts in none of them. Pure: no Prefect, no I/O beyond paths.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aeval.artifacts.triggers import TriggerScore, TriggerTrial
from aeval.events import Event, ToolCallEvent
from aeval.isolation.sandbox import SandboxMode
from aeval.verdicts.coverage import PATH_KEYS, command_uses, skill_relative

SKILL_TOOLS = frozenset({"skill", "Skill", "use_skill", "load_skill"})
SKILL_INPUT_KEYS = ("skill", "name", "skill_name", "command")
Outcome = Literal["tp", "fn", "fp", "tn", "error"]
_NOWHERE = Path("/nonexistent/$SKILL_DIR")  # what $SKILL_DIR means when no folder is given
MIN_DISTRACTORS = 3  # fewer skills beside it in the marketplace: the bundled set tops it up


class Load(BaseModel):
    """One skill load seen in the events."""

    model_config = ConfigDict(extra="forbid")

    skill: str = Field(description="Name of the skill loaded.")
    seq: int = Field(description="The tool call's event number.")
    how: str = Field(description="The evidence: `read_file SKILL.md`, `bash: cat ...`, "
                                 "`Skill tool`.")


def skill_loads(events: Iterable[Event], workspace: Path, skills: dict[str, Path],
                skill_var: Path | None = None) -> list[Load]:
    """Every load of an installed skill (``skills``: name -> its folder in the workspace), in
    event order; a skill loaded twice is listed twice. ``skill_var``: the folder
    ``$SKILL_DIR`` points to in the trial (the skill under test's copy); None: a path with
    ``$SKILL_DIR`` names no skill."""
    out: list[Load] = []
    by_lower = {n.lower(): n for n in skills}
    for e in events:
        if not isinstance(e, ToolCallEvent):
            continue
        if e.tool in SKILL_TOOLS:
            for key in SKILL_INPUT_KEYS:
                value = e.input.get(key)
                if isinstance(value, str):
                    name = by_lower.get(value.strip().lstrip("/").split(":")[-1].lower())
                    if name:
                        out.append(Load(skill=name, seq=e.seq, how=f"{e.tool} tool"))
                        break
            continue
        for name, folder in skills.items():
            if e.tool == "bash" and isinstance(e.input.get("command"), str):
                if any(rel == "SKILL.md" for rel, _ in command_uses(
                        e.input["command"], workspace, folder, skill_var or _NOWHERE)):
                    out.append(Load(skill=name, seq=e.seq,
                                    how=f"bash: {e.input['command'][:120]}"))
                continue
            raw = next((e.input[k] for k in PATH_KEYS if isinstance(e.input.get(k), str)), None)
            if raw is not None and e.tool == "read_file" and skill_relative(
                    raw, workspace, folder, skill_var or _NOWHERE) == "SKILL.md":
                out.append(Load(skill=name, seq=e.seq, how=f"{e.tool} {raw}"))
    return out


def outcome(kind: Literal["should", "should_not"], loaded_this: bool | None) -> Outcome:
    """The confusion cell of one trial (``loaded_this`` None: the run failed)."""
    if loaded_this is None:
        return "error"
    if kind == "should":
        return "tp" if loaded_this else "fn"
    return "fp" if loaded_this else "tn"


def ratio(num: int, den: int) -> float | None:
    """num / den rounded, or None when nothing was counted (no division by zero)."""
    return round(num / den, 4) if den else None


def precision_recall(tp: int, fp: int, fn: int) -> tuple[float | None, float | None]:
    """(precision, recall); each None when its denominator is zero."""
    return ratio(tp, tp + fp), ratio(tp, tp + fn)


def score_trials(skill: str, runtime: str, source: Literal["contract", "generic"],
                 distractors: list[str], trials: list[TriggerTrial]) -> TriggerScore:
    """Confusion counts, precision and recall of one skill x runtime over its trials."""
    counts = {k: sum(t.outcome == k for t in trials) for k in ("tp", "fn", "fp", "tn")}
    precision, recall = precision_recall(counts["tp"], counts["fp"], counts["fn"])
    picks: dict[str, int] = {}
    for t in trials:
        if t.outcome == "fn":
            for name in dict.fromkeys(t.loaded):
                picks[name] = picks.get(name, 0) + 1
    return TriggerScore(skill=skill, runtime=runtime, source=source, distractors=distractors,
                        errors=sum(t.outcome == "error" for t in trials), precision=precision,
                        recall=recall, distractor_picks=dict(sorted(picks.items())),
                        trials=trials, **counts)


class TriggersRequest(BaseModel):
    """The parameters of the `aeval-triggers` flow."""

    model_config = ConfigDict(extra="forbid")

    skill_roots: list[str] = Field(min_length=1, description="The skills under test.")
    distractors: str | None = Field(
        None, description="A folder of distractor skills; default: the other skills of the "
                          "marketplace, topped up with aeval's bundled set when fewer than "
                          "three.")
    runtimes: list[str] = Field(["builtin"], min_length=1, description="Runtimes to try.")
    model: str | None = Field(None, description="Executor model (litellm string).")
    api_base: str | None = Field(None, description="Model API base URL.")
    epochs: int = Field(1, ge=1, le=100, description="Runs of each prompt.")
    max_turns: int = Field(3, ge=1, le=50, description="Model turns a trial may take: the "
                                                       "decision to load a skill comes first.")
    timeout_s: float = Field(300, gt=0, le=3600, description="Seconds a trial may take.")
    store: str = Field(".aeval", description="Run store (triggers runs go to "
                                             "<store>/triggers/<run-id>/).")
    run_id: str = Field(description="The triggers run id.")
    sandbox: SandboxMode = Field("auto", description="bubblewrap around every process a "
                                                     "trial starts: auto | require | none.")
    retries: int = Field(2, ge=0, le=10, description="Retries of a trial after a transient "
                                                     "model-API error.")
    retry_delay_s: float = Field(2.0, ge=0, le=600, description="First retry delay in "
                                                                "seconds; doubles.")
    keep_workspaces: bool = False
