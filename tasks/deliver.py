"""Deliver: what aeval says on a merge request, built from a finished run folder.

Pure functions build everything from the run's artifacts: one summary note per skill, one
inline discussion per suggestion whose lines lie in the MR diff (a ```` ```suggestion ````
block), one fallback note with patches and an agent prompt for the rest, and the GitLab Code
Quality report. ``plan_delivery`` compares that with what the MR already holds and returns the
edits; ``apply_plan`` makes them through the adapter; ``deliver`` does both.
``post_to_gitlab`` is the thin Prefect task.

Idempotence rests on hidden markers, always the first line of what aeval posts::

    <!-- aeval:skill=NAME -->                      the summary note of one skill
    <!-- aeval:suggestion=FINGERPRINT skill=NAME --> the inline discussion of one suggestion
    <!-- aeval:fallback -->                        the note with suggestions outside the diff
    <!-- aeval:outdated -->                        (second line) aeval resolved this thread

A rerun edits aeval's notes and discussions in place, creates only what is new, and resolves
aeval's discussions whose suggestion no longer applies. A fingerprint hashes the skill, the
repository path, the grounded assertion's text and the original lines: never a run id or a
time, so it is stable across reruns (and serves as the Code Quality fingerprint too).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from adapters.git import find_toplevel
from adapters.gitlab import (
    DiffRefs,
    GitLabError,
    GitLabMR,
    GitLabTarget,
    InlinePosition,
    MRFileDiff,
    RemoteDiscussion,
    RemoteNote,
)
from aeval.artifacts import FixSuggestion, FixSuggestions, Grading, RunManifest, SkillResult
from aeval.plan import safe
from aeval.store import atomic_write_text, read_model

CODE_QUALITY_FILE = "gl-code-quality.json"
REPORT_URL_ENV = "AEVAL_REPORT_URL"
FALLBACK_MARKER = "<!-- aeval:fallback -->"
OUTDATED_MARKER = "<!-- aeval:outdated -->"
_SUGGESTION_RE = re.compile(r"^<!-- aeval:suggestion=([0-9a-f]+)(?: skill=(\S+))? -->")
_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_ICON = {"pass": "✅", "fail": "❌", "error": "⚠️", "invalid": "🚫", "skipped": "⏭️"}
_SEVERITY = {"LV1": "major", "LV2": "minor"}
_LEVEL_MEANING = {"LV1": "causally implicated in a first-attempt failure (gates the merge)",
                  "LV2": "an advisory improvement"}


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


def skill_marker(name: str) -> str:
    return f"<!-- aeval:skill={quote(name, safe='')} -->"


def suggestion_marker(fingerprint: str, skill: str) -> str:
    return f"<!-- aeval:suggestion={fingerprint} skill={quote(skill, safe='')} -->"


# ---- the run, as delivery sees it -------------------------------------------------------------


class LocatedSuggestion(_M):
    """A suggestion mapped to the repository, with what it is grounded in."""

    fingerprint: str = Field(description="Stable id: skill, repo path, grounded text, original.")
    skill: str
    runtimes: list[str] = Field(description="Runtimes whose run made this same suggestion.")
    suggestion: FixSuggestion
    repo_path: str | None = Field(description="Path from the repository root; None: unknown.")
    grounded_text: str = Field(description="Text of the assertion or change it is grounded in.")
    grounded_evidence: str = ""
    problem: str | None = Field(None, description="Why it cannot be posted (stale, unmapped).")


class SkillReport(_M):
    """One skill of the run: its result, gradings (by case folder) and suggestions."""

    result: SkillResult
    gradings: dict[str, Grading] = Field(default_factory=dict)
    suggestions: list[LocatedSuggestion] = Field(default_factory=list)


class RunBundle(_M):
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
        problem = _stale(s, repo_root / repo_path) if repo_root else None
    fp = fingerprint(report.result.name, repo_path or s.path, text, s.original)
    return LocatedSuggestion(fingerprint=fp, skill=report.result.name, runtimes=[runtime],
                             suggestion=s, repo_path=repo_path, grounded_text=text,
                             grounded_evidence=evidence, problem=problem)


def _stale(s: FixSuggestion, file: Path) -> str | None:
    """Why the checked-out file no longer holds the suggestion's original lines, if so."""
    if not file.is_file():
        return f"{file.name} is not in the checked-out repository"
    lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    if s.end_line < s.start_line or lines[s.start_line - 1:s.end_line] != \
            s.original.splitlines():
        return f"stale: lines {s.start_line}-{s.end_line} of {file.name} changed"
    return None


def load_run(run_dir: Path, repo_root: Path | None = None) -> RunBundle:
    """Read run.json, the gradings and every fix_suggestions.json of a run folder.

    ``repo_root`` maps skill folders to repository paths; without it, each skill folder's
    ``git rev-parse --show-toplevel`` is used.
    """
    run_dir = Path(run_dir)
    manifest = read_model(run_dir / "run.json", RunManifest)
    if repo_root is None:
        repo_root = next((r for s in manifest.skills if (r := find_toplevel(Path(s.path)))),
                         None)
    reports = []
    for sk in manifest.skills:
        report = SkillReport(result=sk)
        for c in sk.cases:
            if (p := run_dir / c.dir / "grading.json").is_file():
                report.gradings[c.dir] = read_model(p, Grading)
        skill_dir = skill_repo_dir(sk.path, repo_root)
        for rt in sorted({c.runtime for c in sk.cases} | set(manifest.runtimes)):
            p = run_dir / safe(sk.name) / rt / "fix_suggestions.json"
            if p.is_file():
                report.suggestions += [_locate(s, rt, report, skill_dir, repo_root)
                                       for s in read_model(p, FixSuggestions).suggestions]
        reports.append(report)
    return RunBundle(run_dir=run_dir, manifest=manifest, repo_root=repo_root, skills=reports)


# ---- the MR diff ------------------------------------------------------------------------------


class FileLines(_M):
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


def diff_index(diffs: Iterable[MRFileDiff]) -> dict[str, FileLines]:
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


def inline_position(s: LocatedSuggestion, index: dict[str, FileLines], refs: DiffRefs | None
                    ) -> InlinePosition | None:
    """The position of the suggestion's first line, if every line it replaces is in the diff
    and still reads as the suggestion's original at the MR head (so a run of an older or a
    merged-result commit never anchors on the wrong line): added lines take ``new_line``,
    context lines ``old_line`` and ``new_line``."""
    f = index.get(s.repo_path or "")
    if refs is None or f is None or s.problem:
        return None
    lines = range(s.suggestion.start_line, s.suggestion.end_line + 1)
    original = s.suggestion.original.splitlines()
    if not lines or len(original) != len(lines) or any(
            f.new_text.get(n) != text for n, text in zip(lines, original, strict=True)):
        return None
    return InlinePosition(base_sha=refs.base_sha, start_sha=refs.start_sha,
                          head_sha=refs.head_sha, old_path=f.old_path, new_path=f.new_path,
                          new_line=lines[0], old_line=f.new_lines[lines[0]])


# ---- bodies -----------------------------------------------------------------------------------


def fenced(text: str, info: str = "text") -> str:
    """A fenced block whose fence is longer than any backtick run inside."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def tail(text: str, lines: int = 12, chars: int = 1200) -> str:
    """The end of a text, where errors are, capped."""
    kept = text.strip().splitlines()[-lines:]
    out = "\n".join(kept)
    return out if len(out) <= chars else "…" + out[-chars:]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def skill_note_body(report: SkillReport, manifest: RunManifest, *, report_url: str | None,
                    inline: int = 0, fallback: int = 0, skipped: list[str] | None = None
                    ) -> str:
    """The summary note of one skill: verdict, per-case rates, evidence of what failed."""
    sk = report.result
    link = f" · [full report]({report_url})" if report_url else ""
    out = [skill_marker(sk.name),
           f"## aeval · `{sk.name}`: {_ICON.get(sk.status, '')} {sk.status}", "",
           f"Run `{manifest.run_id}`{link}", ""]
    if sk.status == "invalid":
        out += ["The skill could not be loaded:", ""] + [f"- {_cell(p)}" for p in sk.problems]
    if sk.cases:
        out += ["| case | runtime | verdict | first-attempt | terminal | self-corrections |",
                "|---|---|---|---|---|---|"]
        for c in sk.cases:
            name = c.case_id + (f" #{c.epoch}" if c.epoch is not None else "")
            verdict = f"**{c.status}**" + (f", {c.ungraded} ungraded" if c.ungraded else "")
            out.append(f"| `{_cell(name)}` | {c.runtime} | {verdict} | "
                       f"{_pct(c.first_attempt_pass_rate)} ({c.passed}/{c.passed + c.failed}) "
                       f"| {_pct(c.terminal_pass_rate)} | {c.self_corrections} |")
    evidence, corrections = [], []
    for c in sk.cases:
        head = f"**`{c.case_id}`**" + (f" #{c.epoch}" if c.epoch is not None else "") + \
            f" [{c.runtime}]"
        g = report.gradings.get(c.dir)
        if c.status == "error" or (c.status == "fail" and g is None):
            evidence += [f"{head} {c.status}: {_cell(c.reason)}", ""]
        for e in (g.expectations if g else []):
            if e.status == "failed":
                fix = " (passed only after a correction)" if e.terminal_passed else ""
                evidence += [f"{head} {e.id}: {_cell(e.text)}{fix}", fenced(tail(e.evidence)),
                             ""]
        for ch in (g.self_correction.changes_made if g else []):
            where = f", event {ch.event_seq}" if ch.event_seq is not None else ""
            corrections.append(f"- {head} {ch.id}: {ch.change} `{ch.path}` "
                               f"({ch.attribution}{where})")
    if evidence:
        out += ["", "### What failed, with evidence", "", *evidence[:-1]]
    if corrections:
        out += ["", "### Self-corrections (edits the agent made to the skill)", "", *corrections]
    levels = [s.suggestion.level for s in report.suggestions if not s.problem]
    if levels or skipped:
        out += ["", f"**Suggestions:** {inline} inline on the diff, {fallback} in the fallback "
                    f"note ({levels.count('LV1')} LV1, {levels.count('LV2')} LV2)."]
        out += [f"- skipped: {_cell(r)}" for r in skipped or []]
    if sk.warnings:
        out += ["", "<details><summary>Lint warnings</summary>", "",
                *[f"- {_cell(w)}" for w in sk.warnings], "", "</details>"]
    out += ["", "<sub>Verdicts use the first-attempt pass rate; the terminal rate also counts "
                "assertions that passed only after the agent corrected something.</sub>"]
    return "\n".join(out).strip() + "\n"


def _grounding_lines(s: LocatedSuggestion) -> list[str]:
    out = [f"**Grounded in** `{s.suggestion.grounded_in}`: {_cell(s.grounded_text)}"]
    if s.grounded_evidence:
        out.append(fenced(tail(s.grounded_evidence, lines=8, chars=800)))
    return out


def suggestion_body(s: LocatedSuggestion) -> str:
    """The inline discussion: a suggestion block replacing exactly lines start..end (anchored
    on start, ``-0+N`` with N = end - start), the level, the rationale and the grounding."""
    sg = s.suggestion
    n = sg.end_line - sg.start_line
    block = fenced(sg.replacement.removesuffix("\n"), f"suggestion:-0+{n}") \
        if sg.replacement.strip("\n") else "```suggestion:-0+" + f"{n}\n```"
    out = [suggestion_marker(s.fingerprint, s.skill),
           f"**aeval {sg.level}** for `{s.skill}`: {_LEVEL_MEANING[sg.level]}.", "", block, "",
           f"**Why:** {sg.rationale}", "", *_grounding_lines(s)]
    if sg.validated:
        out += ["", "Validated by the run: the agent made this same edit to get the case "
                    "through."]
    out += ["", f"<sub>runtime(s): {', '.join(s.runtimes)}</sub>"]
    return "\n".join(out) + "\n"


def outdated_body(body: str, reason: str) -> str:
    """An aeval discussion body marked as no longer applying; its suggestion block disarmed."""
    lines = body.splitlines()
    rest = [ln for ln in lines[1:] if ln != OUTDATED_MARKER]
    rest = [re.sub(r"^(`{3,})suggestion:-\d+\+\d+$", r"\1text", ln) for ln in rest]
    return "\n".join([lines[0], OUTDATED_MARKER, f"**Outdated:** {reason}", "", *rest]) + "\n"


def file_patch(repo_path: str, items: list[FixSuggestion], current: str | None) -> str:
    """A unified diff (``git apply``) of the suggestions to one file. With the file's current
    text it has context lines; without, zero-context hunks (``git apply --unidiff-zero``).
    Overlapping suggestions after the first are left out."""
    chosen: list[FixSuggestion] = []
    for s in sorted(items, key=lambda s: s.start_line):
        if not chosen or s.start_line > chosen[-1].end_line:
            chosen.append(s)
    head = [f"--- a/{repo_path}\n", f"+++ b/{repo_path}\n"]
    if current is not None:
        old = current.splitlines(keepends=True)
        new = list(old)
        for s in reversed(chosen):
            repl = s.replacement.splitlines(keepends=True)
            if repl and not repl[-1].endswith("\n"):
                repl[-1] += "\n"
            new[s.start_line - 1:s.end_line] = repl
        body = list(difflib.unified_diff(old, new, n=3))[2:]
        return "".join(head + body)
    out, offset = list(head), 0
    for s in chosen:
        orig, repl = s.original.splitlines(), s.replacement.splitlines()
        start = s.start_line + offset - (0 if repl else 1)
        out.append(f"@@ -{s.start_line},{len(orig)} +{start},{len(repl)} @@\n")
        out += [f"-{ln}\n" for ln in orig] + [f"+{ln}\n" for ln in repl]
        offset += len(repl) - len(orig)
    return "".join(out)


def agent_prompt(items: list[LocatedSuggestion]) -> str:
    """A prompt an agent can apply as is: exact edits, nothing else."""
    out = ["Apply exactly these edits to the agent skills in this repository and change "
           "nothing else. Line numbers are 1-based in the current files; if a file no longer "
           "holds the quoted original lines, skip that edit and say so.", ""]
    for i, s in enumerate(items, 1):
        sg = s.suggestion
        out += [f"{i}. In `{s.repo_path}`, replace lines {sg.start_line}-{sg.end_line}, which "
                f"currently read:", "<<<", sg.original.rstrip("\n"), ">>>", "with:", "<<<",
                sg.replacement.rstrip("\n"), ">>>", f"Reason ({sg.level}): {sg.rationale}", ""]
    return "\n".join(out).rstrip() + "\n"


def fallback_note_body(items: list[LocatedSuggestion], manifest: RunManifest,
                       repo_root: Path | None, notice: str | None = None) -> str:
    """The one note for suggestions outside the diff: what and why, per-file patches, and a
    copy-paste prompt for an agent. Empty ``items``: a short 'nothing left' body."""
    out = [FALLBACK_MARKER, "## aeval · suggestions outside this merge request's diff", ""]
    if not items:
        return "\n".join([*out, f"None as of run `{manifest.run_id}`: every earlier one was "
                                 "applied or no longer applies."]) + "\n"
    out += [f"Run `{manifest.run_id}`. These fixes touch lines the merge request does not "
            "change, so GitLab cannot offer them as one-click suggestions. Apply a patch "
            "(`git apply`), or give the prompt below to an agent.", ""]
    if notice:
        out += [f"> {notice}", ""]
    for i, s in enumerate(items, 1):
        sg = s.suggestion
        out += [f"### {i}. {sg.level} · `{s.repo_path}` lines {sg.start_line}-{sg.end_line} "
                f"· `{s.skill}`", "", f"**Why:** {sg.rationale}", "", *_grounding_lines(s), ""]
    out += ["### Patches", ""]
    by_file: dict[str, list[FixSuggestion]] = {}
    for s in items:
        by_file.setdefault(s.repo_path or s.suggestion.path, []).append(s.suggestion)
    for path, group in by_file.items():
        file = repo_root / path if repo_root else None
        current = file.read_text(encoding="utf-8") if file and file.is_file() else None
        hint = "" if current is not None else " (zero context: `git apply --unidiff-zero`)"
        out += [f"<details><summary><code>{path}</code>{hint}</summary>", "",
                fenced(file_patch(path, group, current), "diff"), "", "</details>", ""]
    out += ["### Prompt for an agent", "", fenced(agent_prompt(items))]
    return "\n".join(out).strip() + "\n"


# ---- GitLab Code Quality ----------------------------------------------------------------------


class CodeQualityLines(_M):
    begin: int = Field(ge=1, description="First line of the issue.")


class CodeQualityLocation(_M):
    path: str = Field(description="Path from the repository root.")
    lines: CodeQualityLines


class CodeQualityIssue(_M):
    """One entry of GitLab's Code Quality report (a subset of the Code Climate format)."""

    description: str
    check_name: str
    fingerprint: str = Field(description="Stable across reruns (see ``fingerprint``).")
    severity: Literal["info", "minor", "major", "critical", "blocker"]
    location: CodeQualityLocation


CODE_QUALITY_ADAPTER = TypeAdapter(list[CodeQualityIssue])


def code_quality_report(bundle: RunBundle) -> list[CodeQualityIssue]:
    """One issue per suggestion that maps to the repository: LV1 major, LV2 minor."""
    out = []
    for s in bundle.suggestions():
        if s.problem or not s.repo_path:
            continue
        sg = s.suggestion
        desc = f"aeval {sg.level} ({s.skill}): {sg.rationale} [grounded in {sg.grounded_in}: " \
               f"{s.grounded_text}]"
        out.append(CodeQualityIssue(
            description=desc[:1000], check_name=f"aeval-{sg.level}",
            fingerprint=s.fingerprint, severity=_SEVERITY[sg.level],
            location=CodeQualityLocation(path=s.repo_path,
                                         lines=CodeQualityLines(begin=sg.start_line))))
    return out


def write_code_quality_report(bundle: RunBundle) -> Path:
    """``<run>/gl-code-quality.json``, atomically (an empty array when nothing to say)."""
    data = CODE_QUALITY_ADAPTER.dump_json(code_quality_report(bundle), indent=2).decode()
    return atomic_write_text(bundle.run_dir / CODE_QUALITY_FILE, data + "\n")


# ---- planning against what the MR holds -------------------------------------------------------

ActionKind = Literal["create_note", "update_note", "create_discussion", "update_discussion",
                     "resolve_discussion", "reopen_discussion"]


class DeliveryAction(_M):
    """One write to GitLab."""

    kind: ActionKind
    marker: str = Field(description="The aeval marker of the note or discussion.")
    body: str | None = None
    note_id: int | None = None
    discussion_id: str | None = None
    position: InlinePosition | None = None
    reason: str = ""


class DeliveryPlan(_M):
    """The writes that bring the MR in line with the run, and how suggestions were placed."""

    actions: list[DeliveryAction] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list, description="Markers already current.")
    inline: list[str] = Field(default_factory=list, description="Fingerprints posted inline.")
    fallback: list[str] = Field(default_factory=list, description="Fingerprints in fallback.")
    skipped: list[str] = Field(default_factory=list, description="Suggestions not posted, why.")
    notices: list[str] = Field(default_factory=list)


class DeliveryResult(DeliveryPlan):
    """A plan after it was applied (or only printed, with ``dry_run``)."""

    dry_run: bool = False
    rejected: list[str] = Field(default_factory=list,
                                description="Inline positions GitLab refused (moved to fallback).")

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for a in self.actions:
            counts[a.kind] = counts.get(a.kind, 0) + 1
        done = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(counts.items()))
        verb = "would do" if self.dry_run else "done"
        return (f"{verb}: {done or 'nothing'}; {len(self.unchanged)} unchanged; "
                f"{len(self.inline)} suggestion(s) inline, {len(self.fallback)} in the fallback "
                f"note, {len(self.skipped)} skipped")


def _norm(body: str) -> str:
    return body.replace("\r\n", "\n").strip()


def _upsert_note(marker: str, body: str, existing: list[RemoteNote], plan: DeliveryPlan
                 ) -> None:
    if not existing:
        plan.actions.append(DeliveryAction(kind="create_note", marker=marker, body=body))
    elif _norm(existing[-1].body) != _norm(body):  # notes are listed newest first: take oldest
        plan.actions.append(DeliveryAction(kind="update_note", marker=marker, body=body,
                                           note_id=existing[-1].id))
    else:
        plan.unchanged.append(marker)


def plan_delivery(bundle: RunBundle, *, refs: DiffRefs | None, diffs: list[MRFileDiff],
                  notes: list[RemoteNote], discussions: list[RemoteDiscussion],
                  report_url: str | None = None, force_fallback: Iterable[str] = (),
                  me: int | None = None) -> DeliveryPlan:
    """Compare the run with the MR's notes and discussions; the writes that reconcile them.

    Only notes written by ``me`` (the token's user, when known) that *start* with a marker
    are aeval's: a reviewer quoting or copying one is never edited.
    """
    plan = DeliveryPlan()
    index, forced = diff_index(diffs), set(force_fallback)
    if refs is None:
        plan.notices.append("GitLab has no diff refs for this MR yet: no inline suggestions.")
    inline: list[tuple[LocatedSuggestion, InlinePosition]] = []
    fallback: list[LocatedSuggestion] = []
    for s in bundle.suggestions():
        if s.problem:
            plan.skipped.append(f"{s.skill} {s.suggestion.path}:{s.suggestion.start_line}: "
                                f"{s.problem}")
            continue
        pos = None if s.fingerprint in forced else inline_position(s, index, refs)
        if pos:
            inline.append((s, pos))
        else:
            fallback.append(s)
    plan.inline = [s.fingerprint for s, _ in inline]
    plan.fallback = [s.fingerprint for s in fallback]

    def ours(n: RemoteNote | None) -> bool:
        return n is not None and not n.system and n.body.startswith("<!-- aeval:") and (
            me is None or n.author_id == me)

    mine = [n for n in notes if ours(n)]
    for r in bundle.skills:
        marker = skill_marker(r.result.name)
        fps = {s.fingerprint for s in r.suggestions}
        body = skill_note_body(
            r, bundle.manifest, report_url=report_url,
            inline=sum(s.fingerprint in fps for s, _ in inline),
            fallback=sum(s.fingerprint in fps for s in fallback),
            skipped=[s.problem or "" for s in r.suggestions if s.problem])
        _upsert_note(marker, body, [n for n in mine if n.body.startswith(marker)], plan)

    by_fp: dict[str, list[RemoteDiscussion]] = {}
    for d in discussions:
        if ours(d.first) and (m := _SUGGESTION_RE.match(d.first.body)):
            by_fp.setdefault(m.group(1), []).append(d)
    for s, pos in inline:
        marker, body = suggestion_marker(s.fingerprint, s.skill), suggestion_body(s)
        found = by_fp.pop(s.fingerprint, [])
        same = [d for d in found if (d.first.position or {}).get("new_path") == pos.new_path
                and (d.first.position or {}).get("new_line") == pos.new_line]
        keep = same[0] if same else None
        if keep is None:
            plan.actions.append(DeliveryAction(kind="create_discussion", marker=marker,
                                               body=body, position=pos))
        else:
            acts = []
            if keep.resolved and OUTDATED_MARKER in keep.first.body.splitlines()[:2]:
                acts.append(DeliveryAction(kind="reopen_discussion", marker=marker,
                                           discussion_id=keep.id,
                                           reason="the suggestion applies again"))
            if _norm(keep.first.body) != _norm(body):
                acts.append(DeliveryAction(kind="update_discussion", marker=marker, body=body,
                                           discussion_id=keep.id, note_id=keep.first.id))
            plan.actions += acts
            if not acts:
                plan.unchanged.append(marker)
        for d in found:
            if d is not keep:
                _retire(d, "aeval now suggests this on another line.", plan)
    evaluated = {r.result.name for r in bundle.skills}
    for fp, found in by_fp.items():
        for d in found:
            skill = _SUGGESTION_RE.match(d.first.body).group(2)  # type: ignore[union-attr]
            if skill is not None and unquote(skill) not in evaluated:
                continue  # a skill this run did not evaluate: its threads stand
            _retire(d, "moved to the fallback note: its lines are no longer in the diff."
                    if fp in plan.fallback else
                    f"run `{bundle.manifest.run_id}` no longer suggests this.", plan)

    existing_fb = [n for n in mine if n.body.startswith(FALLBACK_MARKER)]
    if fallback or existing_fb:
        body = fallback_note_body(fallback, bundle.manifest, bundle.repo_root,
                                  " ".join(plan.notices) or None)
        _upsert_note(FALLBACK_MARKER, body, existing_fb, plan)
    return plan


def _retire(d: RemoteDiscussion, reason: str, plan: DeliveryPlan) -> None:
    """Mark an aeval discussion outdated and resolve it (once; humans' resolutions stand)."""
    first = d.first
    if first is None or d.resolved:
        return
    marker = first.body.splitlines()[0]
    plan.actions.append(DeliveryAction(kind="update_discussion", marker=marker,
                                       body=outdated_body(first.body, reason),
                                       discussion_id=d.id, note_id=first.id, reason=reason))
    plan.actions.append(DeliveryAction(kind="resolve_discussion", marker=marker,
                                       discussion_id=d.id, reason=reason))


# ---- applying ---------------------------------------------------------------------------------


def apply_plan(mr: GitLabMR, plan: DeliveryPlan) -> DeliveryResult:
    """Make the plan's writes. An inline position GitLab refuses (400) is recorded in
    ``rejected`` instead of failing the delivery."""
    done, rejected = [], []
    for a in plan.actions:
        if a.kind == "create_note":
            a = a.model_copy(update={"note_id": mr.create_note(a.body or "")})
        elif a.kind == "update_note":
            mr.update_note(a.note_id or 0, a.body or "")
        elif a.kind == "create_discussion":
            try:
                d = mr.create_discussion(a.body or "", a.position)
            except GitLabError as exc:
                if exc.status_code != 400 or a.position is None:
                    raise
                rejected.append(a.marker)
                continue
            a = a.model_copy(update={"discussion_id": d.id})
        elif a.kind == "update_discussion":
            mr.update_discussion_note(a.discussion_id or "", a.note_id or 0, a.body or "")
        elif a.kind in ("resolve_discussion", "reopen_discussion"):
            mr.resolve_discussion(a.discussion_id or "", a.kind == "resolve_discussion")
        done.append(a)
    data = plan.model_dump()
    data.update(actions=[a.model_dump() for a in done], rejected=rejected)
    return DeliveryResult(**data)


def deliver(mr: GitLabMR, bundle: RunBundle, *, report_url: str | None = None,
            dry_run: bool = False) -> DeliveryResult:
    """Read the MR (diff refs, diffs, notes, discussions), plan, and apply unless ``dry_run``.
    Suggestions whose inline position GitLab still refuses go to the fallback note."""
    refs = mr.diff_refs()
    diffs = mr.diffs() if refs else []
    me = mr.user_id()

    def plan(forced: Iterable[str] = ()) -> DeliveryPlan:
        return plan_delivery(bundle, refs=refs, diffs=diffs, notes=mr.notes(),
                             discussions=mr.discussions(), report_url=report_url,
                             force_fallback=forced, me=me)

    first = plan()
    if dry_run:
        return DeliveryResult(**first.model_dump(), dry_run=True)
    result = apply_plan(mr, first)
    if not result.rejected:
        return result
    forced = [m.split("=", 1)[1].split(" ", 1)[0] for m in result.rejected]
    again = apply_plan(mr, plan(forced))
    return again.model_copy(update={"actions": result.actions + again.actions,
                                    "rejected": result.rejected,
                                    "unchanged": again.unchanged})


@task(name="post-to-gitlab", task_run_name="post-to-gitlab", cache_policy=NO_CACHE)
def post_to_gitlab(run_dir: str, mr_iid: int | None = None, project_id: str | None = None,
                   gitlab_url: str | None = None, repo_root: str | None = None,
                   report_url: str | None = None, dry_run: bool = False) -> DeliveryResult:
    """Write gl-code-quality.json, then post the run on its merge request.

    The MR defaults to the CI variables; the token is read from ``AEVAL_GITLAB_TOKEN`` inside
    the adapter (never a parameter); ``report_url`` defaults to ``AEVAL_REPORT_URL``.
    """
    bundle = load_run(Path(run_dir), Path(repo_root) if repo_root else None)
    write_code_quality_report(bundle)
    target = GitLabTarget.resolve(gitlab_url, project_id, mr_iid)
    return deliver(GitLabMR.connect(target), bundle,
                   report_url=report_url or os.environ.get(REPORT_URL_ENV), dry_run=dry_run)


def plan_as_text(plan: DeliveryPlan) -> str:
    """A readable listing of the writes (``--dry-run``)."""
    out = []
    for a in plan.actions:
        where = ""
        if a.position:
            where = f" at {a.position.new_path}:{a.position.new_line}"
        out.append(f"== {a.kind}{where} {a.marker} {a.reason}".rstrip())
        if a.body:
            out.append(a.body)
    out += [f"-- skipped: {s}" for s in plan.skipped]
    out += [f"-- notice: {n}" for n in plan.notices]
    return "\n".join(out) + ("\n" if out else "")


__all__ = [
    "CODE_QUALITY_FILE", "CodeQualityIssue", "DeliveryAction", "DeliveryPlan", "DeliveryResult",
    "FileLines", "LocatedSuggestion", "RunBundle", "SkillReport", "agent_prompt",
    "apply_plan", "code_quality_report", "deliver", "diff_index", "fallback_note_body",
    "file_patch", "fingerprint", "inline_position", "load_run", "outdated_body",
    "parse_hunks", "plan_as_text", "plan_delivery", "post_to_gitlab", "skill_marker",
    "skill_note_body", "skill_repo_dir", "suggestion_body", "suggestion_marker",
    "write_code_quality_report",
]
