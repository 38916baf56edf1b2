"""What the flow hands each case chain: one skill x case x runtime x epoch."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aeval.contract import EvalCase, Tier
from aeval.skill import Skill


class Examined(BaseModel):
    """A skill after examination: loaded with its cases, or invalid with the reasons."""

    model_config = ConfigDict(extra="forbid")

    root: Path
    skill: Skill | None = None
    tier: Tier | None = None
    contract: str | None = None
    cases: list[EvalCase] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def name(self) -> str:
        return self.skill.name if self.skill else self.root.name

    @property
    def valid(self) -> bool:
        return self.skill is not None and not self.problems


class CasePlan(BaseModel):
    """Everything one case chain needs; serializable, so Prefect can show and hash it."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    run_dir: Path
    skill: Skill
    tier: Tier
    contract: str | None
    warnings: list[str] = Field(default_factory=list)
    case: EvalCase
    runtime: str
    runtime_options: dict[str, Any] = Field(default_factory=dict)
    epoch: int | None = None
    model: str | None = None
    grader_model: str | None = None
    api_base: str | None = None
    output_cap: int = 16_000
    keep_workspace: bool = False
    workspace_root: Path = Field(description="Parent of the attempt folders (a temp dir).")
    assertions_from: Path | None = Field(
        None, description="A recorded assertions.json to reuse verbatim (regrade).")

    @property
    def rel_dir(self) -> str:
        d = f"{safe(self.skill.name)}/{self.runtime}/{safe(self.case.id)}"
        return f"{d}/epoch-{self.epoch}" if self.epoch is not None else d

    @property
    def case_dir(self) -> Path:
        return self.run_dir / self.rel_dir

    @property
    def label(self) -> str:
        ep = f"#{self.epoch}" if self.epoch is not None else ""
        return f"{self.skill.name}/{self.case.id}{ep} [{self.runtime}]"


def safe(name: str) -> str:
    """A path- and key-safe form of a name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "unnamed"


class ExecutionRecord(BaseModel):
    """What an execution left for grading: the last attempt's result, Δ and outputs."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    attempts: list[Any] = Field(description="AttemptRecord of every attempt, in order.")
    result: Any = Field(description="The RunResult of the graded (last) attempt.")
    workspace: Path = Field(description="The attempt's workspace, kept until grading ends.")
    attempt_root: Path
    skill_copy: Path
    changes: list[Any] = Field(default_factory=list, description="FileChange list (Δ).")
    outputs: list[dict] = Field(default_factory=list)
    runtime_version: str | None = None
