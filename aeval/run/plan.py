"""What the flow hands each case chain: one skill x case x runtime x epoch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from aeval.artifacts.aggregate import CaseResult
from aeval.artifacts.case import AttemptRecord, CaseStatus, Efficiency
from aeval.artifacts.grading import Grading
from aeval.errors import TransientError
from aeval.isolation.sandbox import SandboxMode
from aeval.isolation.workspace import FileChange, OutputFile
from aeval.run.layout import CaseFiles, RunLayout, case_rel, safe
from aeval.run.read import read_attempts, read_grading
from aeval.runtime.protocol import ExecutionResult
from aeval.skill.contract import EvalCase, Tier
from aeval.skill.skill_md import Skill
from aeval.verdicts.finding import StaticFinding

__all__ = ["AttemptOutcome", "CasePlan", "Examined", "ExecutionRecord", "RunSettings", "SkillPlan",
           "safe"]


class Examined(BaseModel):
    """A skill after examination: loaded with its cases, or invalid with the reasons."""

    model_config = ConfigDict(extra="forbid")

    root: Path
    key: str | None = Field(None, description="The skill's run-folder key (unique in a run).")
    skill: Skill | None = None
    tier: Tier | None = None
    contract: str | None = None
    cases: list[EvalCase] = Field(default_factory=list)
    doc_case: EvalCase | None = Field(
        None, description="SKILL.md's doc test beside a contract's cases (run under `literal` "
                          "only), so SKILL.md cannot drift from the scripts while the "
                          "contract's steps follow them. None for the generic tier (its case "
                          "is the doc test) or a SKILL.md without shell blocks.")
    static_findings: list[StaticFinding] = Field(
        default_factory=list, description="The static skill check's failing findings (S0); "
                                          "its warnings are in `warnings`.")
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def name(self) -> str:
        return self.skill.name if self.skill else self.root.name

    @property
    def valid(self) -> bool:
        return self.skill is not None and not self.problems


class RunSettings(BaseModel):
    """What every case of one run shares: the run's folder and temp root, its models, bounds
    and switches, as the run's request resolved them."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    run_dir: Path
    workspace_root: Path = Field(description="Parent of the attempt folders (a temp dir).")
    model: str | None = None
    grader_model: str | None = None
    api_base: str | None = None
    output_cap: int = 16_000
    keep_workspace: bool = False
    sandbox: SandboxMode = Field("auto", description="auto | require | none (--sandbox).")
    install_skill: bool = Field(True, description="False: the without-skill arm of uplift "
                                                  "(no skill copy; only assertions count).")
    require_exercise: bool = Field(
        True, description="A pass needs evidence that the skill ran (False: uplift's arms).")
    executor_prompt: str = Field("executor", description="The executor's system prompt: "
                                                         "eval_skill/agents/<name>.md.")
    run_credentials: list[str] = Field(
        default_factory=list,
        description="Names of every credential any case of the run declares (names only; "
                    "values never stored). Their values, where set, are redacted from every "
                    "case's artifacts too: a skill that got hold of another case's secret "
                    "leaves it nowhere. They never reach a case's executor, which gets "
                    "only `case.required_credentials`.")


class SkillPlan(BaseModel):
    """What every case of one skill shares: the skill as examined, and its key in the run."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="The skill's folder in the run (unique in the run).")
    skill: Skill
    tier: Tier
    contract: str | None
    warnings: list[str] = Field(default_factory=list)
    static_findings: list[StaticFinding] = Field(
        default_factory=list, description="The skill's static check findings (S0).")
    distractors: list[Path] = Field(
        default_factory=list, description="Other skill folders installed beside the skill "
                                          "copy (`aeval trigger-accuracy`).")

    @property
    def name(self) -> str:
        return self.skill.name

    @property
    def path(self) -> Path:
        return self.skill.path


class CasePlan(BaseModel):
    """Everything one case chain needs: the run's settings, the skill's, and this case x
    runtime x epoch; serializable, so Prefect can show and hash it."""

    model_config = ConfigDict(extra="forbid")

    run: RunSettings
    skill: SkillPlan
    case: EvalCase
    supplementary: bool = Field(
        False, description="The doc test of SKILL.md added beside a contract's cases: when it "
                           "is `untested`, the skill's verdict comes from the other cases.")
    runtime: str
    runtime_options: dict[str, Any] = Field(default_factory=dict)
    epoch: int | None = None
    assertions_from: Path | None = Field(
        None, description="A recorded assertions.json to reuse verbatim (regrade, and the "
                          "without-skill arm of uplift).")
    assertions_from_base: bool = Field(
        False, description="`assertions_from` is the base version's (the head of a "
                           "comparison): its structural assertions are the base skill's, "
                           "so they are replaced with this skill's own.")
    base_cost: Efficiency | None = Field(
        None, description="What the base version's attempt at this case cost, in a run that "
                          "compares head with base (the base passed it): the case's relative "
                          "budgets (`max_vs_base`) are written against it.")
    fingerprint: str | None = Field(
        None, description="What the verdict depends on, hashed (aeval/run/fingerprint.py); set "
                          "when the run skips unchanged case runs (sweeps).")

    @property
    def layout(self) -> RunLayout:
        return RunLayout(self.run.run_dir)

    @property
    def rel_dir(self) -> str:
        """The case folder relative to the run folder."""
        return case_rel(self.skill.key, self.runtime, self.case.id, self.epoch)

    @property
    def case_dir(self) -> Path:
        return self.run.run_dir / self.rel_dir

    @property
    def files(self) -> CaseFiles:
        """The files of this case's folder."""
        return CaseFiles(self.case_dir)

    @property
    def key(self) -> str:
        """Unique in the run: the case folder."""
        return self.rel_dir

    @property
    def label(self) -> str:
        ep = f"#{self.epoch}" if self.epoch is not None else ""
        arm = "" if self.run.install_skill else " without the skill"
        return f"{self.skill.name}/{self.case.id}{ep} [{self.runtime}]{arm}"

    def finished(self) -> CaseResult | None:
        """This case's CaseResult when it was graded earlier (a resumed run, a reused
        verdict), read from its folder; None when it is unfinished."""
        grading = read_grading(self.case_dir)
        if grading is None:
            return None
        return self.result(grading, attempts=len(read_attempts(self.case_dir)))

    def result(self, grading: Grading | None = None, *, status: CaseStatus | None = None,
               reason: str | None = None, attempts: int = 1) -> CaseResult:
        """This case's CaseResult, the one place one is made: from its ``grading`` (its
        verdict and counts), or, when it has none (aeval or Prefect failed the chain), from
        ``status`` and ``reason`` alone."""
        ids = {"case_id": self.case.id, "runtime": self.runtime, "epoch": self.epoch,
               "dir": self.rel_dir, "supplementary": self.supplementary, "attempts": attempts}
        if grading is None:
            assert status is not None and reason is not None
            return CaseResult(**ids, status=status, reason=reason)
        s = grading.summary
        return CaseResult(
            **ids, status=status or grading.status,
            reason=reason if reason is not None else grading.status_reason,
            passed=s.passed, failed=s.failed, ungraded=s.ungraded, total=s.total,
            first_attempt_pass_rate=s.first_attempt_pass_rate,
            terminal_pass_rate=s.terminal_pass_rate,
            self_corrections=len(grading.self_correction.changes_made),
            efficiency=grading.efficiency, stray_files=grading.stray_files)


class ExecutionRecord(BaseModel):
    """What an execution left for grading: the last attempt's result, Δ and outputs."""

    model_config = ConfigDict(extra="forbid")

    attempts: list[AttemptRecord] = Field(description="Every attempt, in order.")
    result: ExecutionResult = Field(description="The result of the graded (last) attempt.")
    workspace: Path = Field(description="The attempt's workspace, kept until grading ends.")
    home: Path = Field(description="The attempt's private HOME.")
    attempt_root: Path = Field(description="Holds workspace/ and home/; removed after grading.")
    skill_copy: Path = Field(description="The skill copy inside the workspace ($SKILL_DIR).")
    changes: list[FileChange] = Field(default_factory=list,
                                      description="Δ: the skill copy's changes.")
    outputs: list[OutputFile] = Field(default_factory=list,
                                      description="Files the run created or changed.")
    runtime_version: str | None = None


@dataclass(frozen=True)
class AttemptOutcome:
    """What one attempt came to: the record of its execution to grade, or the exception that
    ended it (an EnvironmentFailure, a TransientError among them, or a bug of aeval's own)."""

    record: ExecutionRecord | None = None
    failure: Exception | None = None

    def __post_init__(self) -> None:
        assert (self.record is None) != (self.failure is None), "a record or a failure"

    @property
    def transient(self) -> bool:
        """Whether the failure may pass on its own (a model API's 429, a lost connection):
        the case is worth running again, from a fresh workspace."""
        return isinstance(self.failure, TransientError)
