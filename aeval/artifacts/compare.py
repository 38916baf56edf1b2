"""Cross-run reports: compare.json (runtimes / models side by side) and regrade.json
(another grader on the same recorded transcripts)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from aeval.artifacts.case import Artifact


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CompareRow(_M):
    """One runtime (or runtime x model) over the same skills and eval.config."""

    label: str = Field(description="runtime, or runtime:model")
    runtime: str
    model: str | None
    run_id: str
    cases: int
    statuses: dict[str, int]
    wall_minutes: float = Field(description="Executor wall time summed over the cases.")
    assertions_passed: int = Field(description="First-attempt passes over graded assertions.")
    assertions_total: int = Field(description="Graded assertions.")
    causal_share: float | None = Field(description="LV1 / (LV1 + LV2) over all suggestions.")
    self_corrections: int = Field(description="Skill-file edits the executor made (Δ).")
    protocol_fidelity: str = Field(description="Cases whose grader answers validated, `n/m`.")
    tokens_in: int = Field(description="Uncached prompt tokens of the executor.")
    tokens_cached: int = Field(description="Cached prompt tokens of the executor.")


class CompareReport(Artifact):
    compare_id: str
    paths: list[str]
    rows: list[CompareRow]


class Disagreement(_M):
    skill: str
    runtime: str
    case_id: str
    assertion_id: str
    text: str
    original: str = Field(description="First-attempt status under the original grader.")
    regraded: str = Field(description="First-attempt status under the new grader.")


class RegradeReport(Artifact):
    source_run: str
    regrade_runs: list[str]
    original_grader: str | None
    grader_model: str
    compared: int = Field(description="Assertions graded by both.")
    agreements: int
    agreement_rate: float | None
    disagreements: list[Disagreement] = Field(default_factory=list)
