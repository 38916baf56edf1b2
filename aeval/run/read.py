"""Reading a run folder back: the one reader of what a run wrote, typed with the artifact
models (as Inspect AI's ``read_eval_log``). The CLI, the reports, the forges and the studies
read runs through it; `aeval.run.layout` names the files.

    run = read_run(store.resolve("latest"))
    run.manifest.gate
    for case in run.cases():            # every case of every skill, in run.json's order
        case.grading()                  # grading.json, or None when the case did not finish
    for case, grading in run.gradings():
        ...
    run.suggestions(skill, "literal")   # fix_suggestions.json of a skill x runtime, or None

A `RunRecord` can also stand for a run whose run.json is not written yet (`RunRecord.of`
with the manifest in memory), which is how a run's own report is rendered.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from aeval.artifacts import (
    AssertionsFile,
    AttemptRecord,
    Benchmark,
    CaseResult,
    EvalMetadata,
    FixSuggestions,
    Grading,
    HeadVsBase,
    RunManifest,
    SkillResult,
    UpliftReport,
)
from aeval.run.layout import CaseFiles, RunLayout, SkillFiles, safe
from aeval.run.store import read_model

M = TypeVar("M", bound=BaseModel)


def read_if_there(path: Path, model: type[M]) -> M | None:
    """The artifact at ``path``, or None when there is no such file."""
    return read_model(path, model) if Path(path).is_file() else None


def read_grading(case_dir: Path) -> Grading | None:
    """grading.json of a case folder, or None when the case did not finish."""
    return read_if_there(CaseFiles(Path(case_dir)).grading, Grading)


def read_attempts(case_dir: Path) -> list[AttemptRecord]:
    """Every recorded attempt of a case folder (its attempt.json files), in order."""
    d = CaseFiles(Path(case_dir)).attempts
    if not d.is_dir():
        return []
    found = [CaseFiles(p).attempt_record for p in d.iterdir()
             if p.name.isdigit() and CaseFiles(p).attempt_record.is_file()]
    return [read_model(p, AttemptRecord) for p in sorted(found, key=lambda p: int(p.parent.name))]


@dataclass(frozen=True)
class CaseRecord:
    """One case of a run: its result in run.json and its folder's files."""

    skill: SkillResult
    result: CaseResult
    files: CaseFiles

    @property
    def dir(self) -> Path:
        return self.files.dir

    def grading(self) -> Grading | None:
        """grading.json, or None when the case did not finish."""
        return read_grading(self.files.dir)

    def metadata(self) -> EvalMetadata | None:
        """eval_metadata.json, or None."""
        return read_if_there(self.files.eval_metadata, EvalMetadata)

    def assertions(self) -> AssertionsFile | None:
        """assertions.json, or None."""
        return read_if_there(self.files.assertions, AssertionsFile)


@dataclass
class RunRecord:
    """A run folder, read: run.json as a model, and its other artifacts on demand (each
    grading.json read once)."""

    layout: RunLayout
    manifest: RunManifest
    _gradings: dict[str, Grading | None] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, run_dir: Path | str, manifest: RunManifest) -> RunRecord:
        """A run folder with its manifest already in memory (run.json may not exist yet)."""
        return cls(RunLayout(Path(run_dir)), manifest)

    @property
    def run_dir(self) -> Path:
        return self.layout.run_dir

    def skill_files(self, skill: SkillResult, runtime: str) -> SkillFiles:
        """The files of one skill x runtime of this run."""
        return self.layout.skill(skill.key or safe(skill.name), runtime)

    def case(self, skill: SkillResult, result: CaseResult) -> CaseRecord:
        return CaseRecord(skill, result, self.layout.case_files(result.dir))

    def cases(self, skill: SkillResult | None = None) -> Iterator[CaseRecord]:
        """Every case of the run (or of one skill), in run.json's order."""
        for s in [skill] if skill is not None else self.manifest.skills:
            for c in s.cases:
                yield self.case(s, c)

    def grading(self, result: CaseResult) -> Grading | None:
        """grading.json of a case of this run, or None when the case did not finish."""
        if result.dir not in self._gradings:
            self._gradings[result.dir] = read_grading(self.layout.case(result.dir))
        return self._gradings[result.dir]

    def gradings(self, skill: SkillResult | None = None
                 ) -> Iterator[tuple[CaseRecord, Grading]]:
        """(case, grading) of every finished case of the run (or of one skill)."""
        for case in self.cases(skill):
            if (g := self.grading(case.result)) is not None:
                yield case, g

    def suggestions(self, skill: SkillResult, runtime: str) -> FixSuggestions | None:
        """fix_suggestions.json of one skill x runtime, or None."""
        return read_if_there(self.skill_files(skill, runtime).fix_suggestions, FixSuggestions)

    def benchmark(self, skill: SkillResult, runtime: str) -> Benchmark | None:
        """benchmark.json of one skill x runtime, or None."""
        return read_if_there(self.skill_files(skill, runtime).benchmark, Benchmark)

    def uplift(self) -> UpliftReport | None:
        """uplift.json (the with-skill arm of `aeval uplift`), or None."""
        return read_if_there(self.layout.uplift, UpliftReport)

    def head_vs_base(self) -> HeadVsBase | None:
        """head_vs_base.json (a run of a change with `--compare-base`), or None."""
        return read_if_there(self.layout.head_vs_base, HeadVsBase)


def read_run(path: Path | str) -> RunRecord:
    """The run folder at ``path`` (holding run.json), read. Raises ``FileNotFoundError``
    when it holds no run.json, and pydantic's ``ValidationError`` when run.json is not one."""
    layout = RunLayout(Path(path))
    return RunRecord(layout, read_model(layout.manifest, RunManifest))
