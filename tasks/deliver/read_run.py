"""Delivery's reading: a finished run read for a merge or pull request (suggestions located in the
repository)
and the MR diff read for inline positions."""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from pydantic import Field

from aeval.adapters.forges.diff import FileDiff
from aeval.adapters.forges.gitlab import DiffRefs, InlinePosition
from aeval.adapters.git import find_toplevel
from aeval.artifacts import (
    FixSuggestion,
    Grading,
    RunManifest,
    SkillResult,
)
from aeval.artifacts.pairwise import SkillPairwise
from aeval.run.layout import CODE_QUALITY, safe
from aeval.run.read import read_run
from aeval.strict import StrictModel
from aeval.verdicts.coverage import SkillCoverage

CODE_QUALITY_FILE = CODE_QUALITY
REPORT_URL_ENV = "AEVAL_REPORT_URL"
FALLBACK_MARKER = "<!-- aeval:fallback -->"
OUTDATED_MARKER = "<!-- aeval:outdated -->"
_SUGGESTION_RE = re.compile(r"^<!-- aeval:suggestion=([0-9a-f]+)(?: skill=(\S+))? -->")
_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ICON = {"pass": "✅", "fail": "❌", "error": "⚠️", "invalid": "🚫", "skipped": "⏭️",
         "untested": "⏸️", "internal": "🐞"}
_SEVERITY = {"LV1": "major", "LV2": "minor"}
_LEVEL_MEANING = {"LV1": "causally implicated in a first-attempt failure (gates the merge)",
                  "LV2": "an advisory improvement"}


class Placed(StrictModel):
    """How a plan placed the run's notes and suggestions, in either forge's plan."""

    unchanged: list[str] = Field(default_factory=list, description="Markers already current.")
    inline: list[str] = Field(default_factory=list, description="Fingerprints posted inline.")
    fallback: list[str] = Field(default_factory=list, description="Fingerprints in fallback.")
    skipped: list[str] = Field(default_factory=list, description="Suggestions not posted, why.")
    notices: list[str] = Field(default_factory=list)


def skill_marker(name: str, folder: str) -> str:
    """The hidden first line of a skill's summary note: one per skill *folder*, so two skills
    of one name (in two folders) get two notes."""
    return f"<!-- aeval:skill={quote(name, safe='')} folder={quote(folder, safe='')} -->"


def legacy_skill_marker(name: str) -> str:
    """The marker of notes an earlier aeval posted (by name only): adopted, and rewritten,
    when the run has one skill of that name."""
    return f"<!-- aeval:skill={quote(name, safe='')} -->"


def suggestion_marker(fingerprint: str, folder: str) -> str:
    """The hidden first line of a suggestion's discussion; ``folder``: the skill's
    (`SkillReport.folder`), which decides whether the run evaluated that skill."""
    return f"<!-- aeval:suggestion={fingerprint} skill={quote(folder, safe='')} -->"


# ---- the run, as delivery sees it -------------------------------------------------------------


class LocatedSuggestion(StrictModel):
    """A suggestion mapped to the repository, with what it is grounded in."""

    fingerprint: str = Field(description="Stable id: skill, repo path, grounded text, original.")
    skill: str
    folder: str = Field("", description="The skill's `SkillReport.folder`.")
    runtimes: list[str] = Field(description="Runtimes whose run made this same suggestion.")
    suggestion: FixSuggestion
    repo_path: str | None = Field(description="Path from the repository root; None: unknown.")
    grounded_text: str = Field(description="Text of the assertion or change it is grounded in.")
    grounded_evidence: str = ""
    problem: str | None = Field(None, description="Why it cannot be posted (stale, unmapped).")


class SkillReport(StrictModel):
    """One skill of the run: its result, gradings (by case folder) and suggestions."""

    result: SkillResult
    folder: str = Field(description="Which skill this is, stable across runs: its folder "
                                    "from the repository root ('.' at the root), else its "
                                    "run key. Two skills of one name differ here.")
    gradings: dict[str, Grading] = Field(default_factory=dict)
    suggestions: list[LocatedSuggestion] = Field(default_factory=list)
    coverage: dict[str, SkillCoverage] = Field(
        default_factory=dict, description="runtime -> the skill's files the cases used.")
    head_vs_base: list[SkillPairwise] = Field(
        default_factory=list, description="The skill against its base version, per runtime "
                                          "(a run with --compare-base).")
    base_commit: str | None = Field(None, description="The base the skill was compared with.")


class RunBundle(StrictModel):
    """A finished run folder, loaded."""

    run_dir: Path
    manifest: RunManifest
    repo_root: Path | None = Field(description="Repository root the skill paths map into.")
    skills: list[SkillReport]

    def suggestions(self) -> list[LocatedSuggestion]:
        """Every suggestion of the run, once per fingerprint, in skill order."""
        seen: dict[str, LocatedSuggestion] = {}
        for s in (s for r in self.skills for s in r.suggestions):
            if s.fingerprint in seen:
                first = seen[s.fingerprint]
                first.runtimes = sorted({*first.runtimes, *s.runtimes})
            else:
                seen[s.fingerprint] = s.model_copy(deep=True)
        return list(seen.values())


def fingerprint(skill: str, repo_path: str, grounded_text: str, original: str) -> str:
    """sha256 over what identifies a suggestion across reruns (never run ids or times)."""
    canon = "\x1f".join([skill, repo_path, grounded_text.strip(),
                         "\n".join(ln.rstrip() for ln in original.splitlines())])
    return hashlib.sha256(canon.encode()).hexdigest()[:32]


def skill_repo_dir(skill_path: str, repo_root: Path | None) -> str | None:
    """The skill folder relative to the repository root ('' at the root), or None."""
    p = Path(skill_path)
    p = p if p.is_absolute() else Path.cwd() / p
    root = repo_root or find_toplevel(p)
    if root is None:
        return None
    try:
        rel = p.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return None
    return "" if rel == "." else rel


def _grounding(ref: str, runtime: str, report: SkillReport) -> tuple[str, str]:
    """(text, evidence) of ``case-id:assertion-id`` or ``case-id:C<n>``."""
    case_id, _, item = ref.rpartition(":")
    cases = [c for c in report.result.cases if c.case_id == case_id]
    cases.sort(key=lambda c: (c.runtime != runtime, c.epoch or 0))
    for c in cases:
        g = report.gradings.get(c.dir)
        if g is None:
            continue
        for e in g.expectations:
            if e.id == item:
                return e.text, e.evidence
        for ch in g.self_correction.changes_made:
            if ch.id == item:
                return f"self-correction {ch.id}: {ch.change} {ch.path}", ch.diff
    return ref, ""


def _locate(s: FixSuggestion, runtime: str, report: SkillReport, skill_dir: str | None,
            repo_root: Path | None) -> LocatedSuggestion:
    text, evidence = _grounding(s.grounded_in, runtime, report)
    repo_path, problem = None, None
    rel = posixpath.normpath(s.path)
    if skill_dir is None:
        problem = "the skill folder is not inside a known repository (pass --repo-root)"
    elif rel.startswith("../") or rel == ".." or posixpath.isabs(rel):
        problem = f"path {s.path!r} leaves the skill folder"
    else:
        repo_path = posixpath.join(skill_dir, rel) if skill_dir else rel
        problem = _stale(s, repo_root, repo_path) if repo_root else None
    fp = fingerprint(report.result.name, repo_path or s.path, text, s.original)
    return LocatedSuggestion(fingerprint=fp, skill=report.result.name, folder=report.folder,
                             runtimes=[runtime],
                             suggestion=s, repo_path=repo_path, grounded_text=text,
                             grounded_evidence=evidence, problem=problem)


def repo_file(repo_root: Path, repo_path: str) -> Path | None:
    """The checked-out file at ``repo_path``, only when it is a regular file inside the
    repository: a symlink out of it (a fork's pull request can add one, and the posting job
    holds a token) is never read, so no line of a file outside the checkout is ever posted."""
    file = repo_root / repo_path
    try:
        real = file.resolve()
        return file if real.is_relative_to(repo_root.resolve()) and real.is_file() else None
    except (OSError, RuntimeError):
        return None


def _stale(s: FixSuggestion, repo_root: Path, repo_path: str) -> str | None:
    """Why the checked-out file no longer holds the suggestion's original lines, if so."""
    file = repo_file(repo_root, repo_path)
    if file is None:
        return f"{PurePosixPath(repo_path).name} is not in the checked-out repository"
    lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    if s.end_line < s.start_line or lines[s.start_line - 1:s.end_line] != \
            s.original.splitlines():
        return f"stale: lines {s.start_line}-{s.end_line} of {file.name} changed"
    return None


def load_run(run_dir: Path, repo_root: Path | None = None) -> RunBundle:
    """A run folder read for a merge or pull request (`aeval.run.read.read_run`): run.json,
    the gradings, and every suggestion located in the repository.

    ``repo_root`` maps skill folders to repository paths; without it, each skill folder's
    ``git rev-parse --show-toplevel`` is used.
    """
    run = read_run(run_dir)
    manifest = run.manifest
    if repo_root is None:
        repo_root = next((r for s in manifest.skills if (r := find_toplevel(Path(s.path)))),
                         None)
    reports = []
    pairwise = run.head_vs_base()
    for sk in manifest.skills:
        skill_dir = skill_repo_dir(sk.path, repo_root)
        key = sk.key or safe(sk.name)
        report = SkillReport(result=sk, folder=key if skill_dir is None else skill_dir or ".")
        report.gradings = {case.result.dir: g for case, g in run.gradings(sk)}
        for rt in sorted({c.runtime for c in sk.cases} | set(manifest.runtimes)):
            if (fixes := run.suggestions(sk, rt)) is not None:
                report.suggestions += [_locate(s, rt, report, skill_dir, repo_root)
                                       for s in fixes.suggestions]
            bench = run.benchmark(sk, rt)
            if bench is not None and bench.coverage is not None:
                report.coverage[rt] = bench.coverage
        if pairwise is not None:
            report.head_vs_base = [p for p in pairwise.skills
                                   if (p.skill_key or p.skill) == (sk.key or sk.name)]
            report.base_commit = pairwise.base
        reports.append(report)
    return RunBundle(run_dir=run.run_dir, manifest=manifest, repo_root=repo_root,
                     skills=reports)


# ---- the MR diff ------------------------------------------------------------------------------


class FileLines(StrictModel):
    """The new-side lines of one file that the MR diff shows."""

    old_path: str
    new_path: str
    new_lines: dict[int, int | None] = Field(
        description="New line number -> old line number (context), or None (added).")
    new_text: dict[int, str] = Field(default_factory=dict,
                                     description="New line number -> its text at the MR head.")


def _hunk_lines(diff: str) -> Iterable[tuple[int, int | None, str]]:
    """(new line, old line or None when added, text) of every new-side line of the hunks."""
    old = new = 0
    for line in diff.splitlines():
        if m := _HUNK_RE.match(line):
            old, new = int(m.group(1)), int(m.group(3))
        elif line.startswith("+"):
            yield new, None, line[1:]
            new += 1
        elif line.startswith("-"):
            old += 1
        elif line.startswith(" ") or line == "":
            yield new, old, line[1:]
            old, new = old + 1, new + 1


def parse_hunks(diff: str) -> dict[int, int | None]:
    """New line -> old line (None for added lines) over the hunks of a unified diff."""
    return {new: old for new, old, _ in _hunk_lines(diff)}


def diff_index(diffs: Iterable[FileDiff]) -> dict[str, FileLines]:
    """New path -> its diff lines (deleted files have none)."""
    out = {}
    for d in diffs:
        if d.deleted_file:
            continue
        rows = list(_hunk_lines(d.diff))
        out[d.new_path] = FileLines(old_path=d.old_path, new_path=d.new_path,
                                    new_lines={n: o for n, o, _ in rows},
                                    new_text={n: t.rstrip("\r") for n, _, t in rows})
    return out


def diff_lines(s: LocatedSuggestion, index: dict[str, FileLines]) -> FileLines | None:
    """The diff of the suggestion's file when every line it replaces is in the diff and still
    reads as the suggestion's original at the head (so a run of an older or a merged-result
    commit never anchors on the wrong line); None otherwise. What both forges ask before
    anchoring a suggestion inline."""
    f = index.get(s.repo_path or "")
    if f is None or s.problem:
        return None
    lines = range(s.suggestion.start_line, s.suggestion.end_line + 1)
    original = s.suggestion.original.splitlines()
    if not lines or len(original) != len(lines) or any(
            f.new_text.get(n) != text for n, text in zip(lines, original, strict=True)):
        return None
    return f


def inline_position(s: LocatedSuggestion, index: dict[str, FileLines], refs: DiffRefs | None
                    ) -> InlinePosition | None:
    """GitLab's position of the suggestion's first line, if it can be anchored inline
    (`diff_lines`): added lines take ``new_line``, context lines ``old_line`` and
    ``new_line``."""
    f = diff_lines(s, index) if refs is not None else None
    if refs is None or f is None:
        return None
    first = s.suggestion.start_line
    return InlinePosition(base_sha=refs.base_sha, start_sha=refs.start_sha,
                          head_sha=refs.head_sha, old_path=f.old_path, new_path=f.new_path,
                          new_line=first, old_line=f.new_lines[first])


# ---- bodies -----------------------------------------------------------------------------------


