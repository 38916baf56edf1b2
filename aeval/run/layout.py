"""Where every file of a run goes: one definition, used everywhere. No other module spells
the name of a run folder's file; `aeval.run.read` reads them back.

    <store>/runs/<run-id>/                                    RunLayout.run_dir
        run.json  junit.xml  report.html  uplift.json          .manifest .junit .report .uplift
        head_vs_base.json                                      .head_vs_base
        <skill-key>/<runtime>/                                 .skill(key, runtime): SkillFiles
            benchmark.json analysis_notes.json fix_suggestions.json
            multi_eval_report.json summary.md regression.json
            <case-id>[/epoch-N]/                               .case_files(rel): CaseFiles
                eval_metadata.json assertions.json events.jsonl transcript.md
                grading.json skill.diff skill_after/ outputs/
                grading.json.unrecorded                        .unrecorded
                probe/                                         .probe (a case folder of its own)
                attempts/<n>/                                  .attempt_dir(case_dir, n)
                    attempt.json events.jsonl                  CaseFiles(attempt_dir).attempt_record

Every folder name aeval derives from a skill, a runtime or a case id goes through `component`:
an ordinary name (``my-skill``, ``train``, ``v1.2``) is kept as it is; any other (``.``/``..``,
a trailing dot or space, non-ASCII, over 100 characters, a Windows device name, or one that
is or looks like aeval's own file: ``run.json``, ``report.html``, ``epoch-2``, ``notes.md``)
becomes ``<safe-part>~<hash of the name>``, which no ordinary name can be. So the mapping is
injective, and no skill or case can shadow a file of the run. ``<skill-key>`` is the skill's
component, or, when two skills of a run share it (ignoring case, as macOS does), that plus
``~`` and a short hash of the skill's folder (both are kept); case ids that differ only in
case are refused by the contract. Paths inside a run are also stored relative to the run
folder (``CaseResult.dir``, ``SkillResult.key``), so readers never recompute them, and a run
can be moved or posted from another checkout.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

# the run's own files
RUN_MANIFEST = "run.json"
JUNIT = "junit.xml"
REPORT = "report.html"
UPLIFT = "uplift.json"
HEAD_VS_BASE = "head_vs_base.json"
# one skill x runtime
BENCHMARK = "benchmark.json"
ANALYSIS_NOTES = "analysis_notes.json"
FIX_SUGGESTIONS = "fix_suggestions.json"
MULTI_EVAL_REPORT = "multi_eval_report.json"
SUMMARY = "summary.md"
REGRESSION = "regression.json"
# one case
EVAL_METADATA = "eval_metadata.json"
ASSERTIONS = "assertions.json"
EVENTS = "events.jsonl"
TRANSCRIPT = "transcript.md"
GRADING = "grading.json"
SKILL_DIFF = "skill.diff"
SKILL_AFTER = "skill_after"
OUTPUTS = "outputs"
ATTEMPTS = "attempts"
ATTEMPT_RECORD = "attempt.json"
PROBE = "probe"
UNRECORDED = "grading.json.unrecorded"
"""Where a case's grading.json goes when Prefect could not record the case: ``--resume``
takes a case with a grading.json as finished."""
# beside the run's files: CI reports and the studies' reports
CODE_QUALITY = "gl-code-quality.json"
STUDY_FILES = ("triggers.json", "compare.json", "compare.md")

FILE_SCHEMAS = {
    RUN_MANIFEST: "run", EVAL_METADATA: "eval-metadata", ASSERTIONS: "assertions",
    GRADING: "grading", BENCHMARK: "benchmark", ANALYSIS_NOTES: "analysis-notes",
    FIX_SUGGESTIONS: "fix-suggestions", MULTI_EVAL_REPORT: "multi-eval-report",
    REGRESSION: "regression", EVENTS: "event", "baselines.json": "baselines",
    "verdicts.json": "verdicts", "compare.json": "compare", UPLIFT: "uplift",
    "triggers.json": "triggers", HEAD_VS_BASE: "head-vs-base",
}
"""Artifact file name -> the name of its JSON Schema (`aeval.artifacts.json_schema`), for
validating a run folder."""


def schema_for(filename: str) -> str | None:
    """The schema name of an artifact file of a run folder, or None when it has none
    (a re-grade is written as ``regrade-<id>.json``)."""
    if filename.startswith("regrade-") and filename.endswith(".json"):
        return "regrade"
    return FILE_SCHEMAS.get(filename)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_ORDINARY = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,98}[A-Za-z0-9_])?")
_OWN_NAMES = frozenset(n.casefold() for n in (
    RUN_MANIFEST, JUNIT, REPORT, UPLIFT, HEAD_VS_BASE, BENCHMARK, ANALYSIS_NOTES, FIX_SUGGESTIONS,
    MULTI_EVAL_REPORT, SUMMARY, REGRESSION, EVAL_METADATA, ASSERTIONS, EVENTS, TRANSCRIPT,
    GRADING, SKILL_DIFF, SKILL_AFTER, OUTPUTS, ATTEMPTS, ATTEMPT_RECORD, PROBE, UNRECORDED,
    CODE_QUALITY, *STUDY_FILES,
    "runs", "baselines.json", "verdicts.json"))
_OWN_LOOKALIKE = re.compile(
    r"(epoch-\d+|regrade-.*|.*\.(json|jsonl|xml|html|md|diff|tmp|lock))", re.IGNORECASE)
_DEVICE = re.compile(r"(con|prn|aux|nul|com\d|lpt\d)(\..*)?", re.IGNORECASE)


def safe(name: str) -> str:
    """A path- and key-safe form of a name: never empty, never `.` or `..` (not injective:
    for keys and labels; folder names come from `component`)."""
    out = _UNSAFE.sub("-", name).strip("-.") or "unnamed"
    return out[:100]


def _digest(text: str, n: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def ordinary(name: str) -> bool:
    """Whether ``name`` is its own folder name: ASCII letters, digits, ``_.-``, starting and
    ending with a letter, digit or ``_``, at most 100 characters, and neither one of aeval's
    own file names nor like one (an artifact's extension, ``epoch-N``, ``regrade-*``), nor a
    Windows device name."""
    return (_ORDINARY.fullmatch(name) is not None and name.casefold() not in _OWN_NAMES
            and not _OWN_LOOKALIKE.fullmatch(name) and not _DEVICE.fullmatch(name))


def component(name: str) -> str:
    """The folder name of a skill, runtime or case id: ``name`` itself when `ordinary`, else
    ``<safe part>~<12 hex of its sha256>``. Injective (an escaped form holds ``~``, an
    ordinary name never does; two escaped forms differ in the hash of the exact name), and
    never one of aeval's own file names."""
    if ordinary(name):
        return name
    return f"{safe(name)[:60]}~{_digest(name, 12)}"


def skill_keys(skills: list[tuple[str, Path]]) -> dict[Path, str]:
    """A unique run-folder key per skill (``(name, folder)`` pairs): the name's `component`,
    or, for components two folders share (ignoring case), that plus ``~`` and a hash of the
    folder (stable across runs, so `--resume` finds the same folders)."""
    by_key: dict[str, list[tuple[str, Path]]] = {}
    for name, root in skills:
        key = component(name)
        by_key.setdefault(key.casefold(), []).append((key, Path(root)))
    out: dict[Path, str] = {}
    for entries in by_key.values():
        for key, root in entries:
            out[root] = key if len(entries) == 1 else f"{key}~{_digest(str(root), 8)}"
    return out


def case_rel(skill_key: str, runtime: str, case_id: str, epoch: int | None = None) -> str:
    """A case folder, relative to the run folder (what ``CaseResult.dir`` holds)."""
    d = f"{skill_key}/{component(runtime)}/{component(case_id)}"
    return d if epoch is None else f"{d}/epoch-{epoch}"


@dataclass(frozen=True)
class SkillFiles:
    """The files of one skill x runtime (``RunLayout.skill``)."""

    dir: Path

    @property
    def benchmark(self) -> Path:
        return self.dir / BENCHMARK

    @property
    def analysis_notes(self) -> Path:
        return self.dir / ANALYSIS_NOTES

    @property
    def fix_suggestions(self) -> Path:
        return self.dir / FIX_SUGGESTIONS

    @property
    def multi_eval_report(self) -> Path:
        return self.dir / MULTI_EVAL_REPORT

    @property
    def summary(self) -> Path:
        return self.dir / SUMMARY

    @property
    def regression(self) -> Path:
        return self.dir / REGRESSION


@dataclass(frozen=True)
class CaseFiles:
    """The files of one case folder (``RunLayout.case_files``, or ``CaseFiles(case_dir)``).
    grading.json is written last: a case with one is finished."""

    dir: Path

    @property
    def eval_metadata(self) -> Path:
        return self.dir / EVAL_METADATA

    @property
    def assertions(self) -> Path:
        return self.dir / ASSERTIONS

    @property
    def events(self) -> Path:
        return self.dir / EVENTS

    @property
    def transcript(self) -> Path:
        return self.dir / TRANSCRIPT

    @property
    def grading(self) -> Path:
        return self.dir / GRADING

    @property
    def skill_diff(self) -> Path:
        return self.dir / SKILL_DIFF

    @property
    def skill_after(self) -> Path:
        """The skill copy as the attempt left it (what replay re-applies)."""
        return self.dir / SKILL_AFTER

    @property
    def outputs(self) -> Path:
        return self.dir / OUTPUTS

    @property
    def attempts(self) -> Path:
        return self.dir / ATTEMPTS

    def attempt(self, number: int) -> Path:
        return self.dir / ATTEMPTS / str(number)

    @property
    def attempt_record(self) -> Path:
        """attempt.json, in an attempt's folder (``CaseFiles(attempt_dir)``)."""
        return self.dir / ATTEMPT_RECORD

    @property
    def probe(self) -> Path:
        """The documented-workflow probe's own case folder."""
        return self.dir / PROBE

    @property
    def unrecorded(self) -> Path:
        return self.dir / UNRECORDED


@dataclass(frozen=True)
class RunLayout:
    """The paths of one run."""

    run_dir: Path

    @classmethod
    def of(cls, store: Path | str, run_id: str) -> RunLayout:
        return cls(Path(store) / "runs" / run_id)

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    @property
    def store(self) -> Path:
        """The store root (``<store>/runs/<run-id>`` -> ``<store>``)."""
        return self.run_dir.parent.parent

    @property
    def manifest(self) -> Path:
        return self.run_dir / RUN_MANIFEST

    @property
    def junit(self) -> Path:
        return self.run_dir / JUNIT

    @property
    def report(self) -> Path:
        return self.run_dir / REPORT

    @property
    def uplift(self) -> Path:
        """uplift.json of the with-skill arm of `aeval uplift`."""
        return self.run_dir / UPLIFT

    @property
    def head_vs_base(self) -> Path:
        """head_vs_base.json of a run of a change with `--compare-base`."""
        return self.run_dir / HEAD_VS_BASE

    def skill_dir(self, skill_key: str, runtime: str) -> Path:
        """Folder of the per skill x runtime artifacts."""
        return self.run_dir / skill_key / component(runtime)

    def case_dir(self, skill_key: str, runtime: str, case_id: str,
                 epoch: int | None = None) -> Path:
        return self.run_dir / case_rel(skill_key, runtime, case_id, epoch)

    def skill(self, skill_key: str, runtime: str) -> SkillFiles:
        """The files of one skill x runtime."""
        return SkillFiles(self.skill_dir(skill_key, runtime))

    def case(self, rel: str) -> Path:
        """A case folder from its run-relative path (``CaseResult.dir``)."""
        return self.run_dir / rel

    def case_files(self, rel: str) -> CaseFiles:
        """The files of a case from its run-relative path (``CaseResult.dir``)."""
        return CaseFiles(self.run_dir / rel)

    @staticmethod
    def attempts_dir(case_dir: Path) -> Path:
        return CaseFiles(case_dir).attempts

    @staticmethod
    def attempt_dir(case_dir: Path, number: int) -> Path:
        return CaseFiles(case_dir).attempt(number)
