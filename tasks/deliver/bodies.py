"""Delivery's bodies: what aeval writes on a merge or pull request: note and suggestion bodies, the
fallback
note with patches and an agent prompt, and the GitLab Code Quality report."""

from __future__ import annotations

import difflib
import html
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, TypeAdapter

from aeval.adapters.forges.gitlab import disarm_quick_actions
from aeval.artifacts import CaseResult, FixSuggestion, RunManifest, case_fixes
from aeval.isolation.text import code_span, escape_controls
from aeval.run.store import atomic_write_text
from aeval.strict import StrictModel
from aeval.tasks.deliver.read_run import (
    _ICON,
    _LEVEL_MEANING,
    _SEVERITY,
    CODE_QUALITY_FILE,
    FALLBACK_MARKER,
    OUTDATED_MARKER,
    LocatedSuggestion,
    RunBundle,
    SkillReport,
    repo_file,
    skill_marker,
    suggestion_marker,
)
from aeval.verdicts.status import passed_after_correction, terminal_rate


def fenced(text: str, info: str = "text") -> str:
    """A fenced block whose fence is longer than any backtick run inside (control characters
    escaped): inert in GitLab, mentions and links included."""
    text = escape_controls(text)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


# GitLab runs a quick action (/merge, /approve, /close ...) from any line of a note that starts
# with "/" (Gitlab::QuickActions::Extractor: `^\/cmd`, column 0, its code-block exemption only
# for exactly-three-backtick fences), and renders mentions (@all notifies everyone),
# references (#1, !2, ~label, %milestone, &epic), links, images (a remote image is a
# tracking pixel) and HTML anywhere outside code. Text from a model, a skill or a transcript is
# therefore only ever shown as code: an inline code span (`untrusted`) or a fenced block
# (`fenced`), on lines that never start with "/".
_QUICK_ACTION_LINE = re.compile(r"^/", re.M)
disarm = disarm_quick_actions  # the final pass over every body built here


def untrusted(text: str) -> str:
    """Inline text from a model, a skill or a transcript, made inert: one code span (nothing
    inside renders: no mention, reference, link, image, HTML or emphasis), on one line,
    control characters escaped, and no line of the body starting with "/"."""
    return disarm(code_span(text))


def tail(text: str, lines: int = 12, chars: int = 1200) -> str:
    """The end of a text, where errors are, capped."""
    kept = text.strip().splitlines()[-lines:]
    out = "\n".join(kept)
    return out if len(out) <= chars else "…" + out[-chars:]


def _code(text: str) -> str:
    """A value (a skill name, a path) shown as code: an inert code span."""
    return code_span(text)


def _cell(text: str) -> str:
    """Untrusted text in a table cell or a list item: a code span, ``|`` escaped."""
    return untrusted(text).replace("|", "\\|")


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def skill_note_body(report: SkillReport, manifest: RunManifest, *, report_url: str | None,
                    inline: int = 0, fallback: int = 0, skipped: list[str] | None = None
                    ) -> str:
    """The summary note of one skill: verdict, per-case rates, evidence of what failed."""
    sk = report.result
    link = f" · [full report]({report_url})" if report_url else ""
    out = [skill_marker(sk.name, report.folder),
           f"## aeval · {_code(sk.name)}: {_ICON.get(sk.status, '')} {sk.status}", "",
           f"Run `{manifest.run_id}`{link}", ""]
    if sk.status == "invalid":
        out += ["The skill could not be loaded:", ""] + [f"- {_cell(p)}" for p in sk.problems]
    if sk.cases:
        out += ["| case | runtime | verdict | first-attempt | terminal | self-corrections |",
                "|---|---|---|---|---|---|"]
        for c in sk.cases:
            name = c.case_id + (f" #{c.epoch}" if c.epoch is not None else "")
            verdict = f"**{c.status}**" + (f", {c.ungraded} ungraded" if c.ungraded else "")
            out.append(f"| {_cell(name)} | {c.runtime} | {verdict} | "
                       f"{_pct(c.first_attempt_pass_rate)} ({c.passed}/{c.passed + c.failed}) "
                       f"| {_pct(terminal_rate(c))} | {c.self_corrections} |")
    evidence, corrections = [], []
    shown: set[int] = set()  # the fixes an earlier case showed in full
    for c in sk.cases:
        # "epoch 2", not "#2": GitLab would link issue 2
        head = f"**`{c.case_id}`**" + (f" epoch {c.epoch}" if c.epoch is not None else "") + \
            f" [{c.runtime}]"
        g = report.gradings.get(c.dir)
        if c.status == "error" or (c.status == "fail" and g is None):
            evidence += [f"{head} {c.status}: {_cell(c.reason)}", ""]
        fixes = case_fix_lines(report, c, [e.id for e in g.expectations
                                           if e.status == "failed"], shown) if g else {}
        for e in (g.expectations if g else []):
            if e.status == "failed":
                fix = " (passed only after a correction)" if passed_after_correction(
                    e, c.runtime) else ""
                evidence += [f"{head} {e.id}: {_cell(e.text)}{fix}", fenced(tail(e.evidence)),
                             "", *fixes.get(e.id, [])]
        for ch in (g.self_correction.changes_made if g else []):
            where = f", event {ch.event_seq}" if ch.event_seq is not None else ""
            corrections.append(f"- {head} {ch.id}: {ch.change} {_code(ch.path)} "
                               f"({ch.attribution}{where})")
    if evidence:
        out += ["", "### What failed, with evidence", "", *evidence[:-1]]
    if corrections:
        out += ["", "### Self-corrections (edits the agent made to the skill)", "", *corrections]
    out += head_vs_base_lines(report)
    levels = [s.suggestion.level for s in report.suggestions if not s.problem]
    if levels or skipped:
        out += ["", f"**Suggestions:** {inline} inline on the diff, {fallback} in the fallback "
                    f"note ({levels.count('LV1')} LV1, {levels.count('LV2')} LV2)."]
        out += [f"- skipped: {_cell(r)}" for r in skipped or []]
    for rt, cov in report.coverage.items():
        used = len(cov.files) - len(cov.untouched)
        out += ["", f"<details><summary>Skill files used [{rt}]: {used}/{len(cov.files)}"
                    f"{f', {len(cov.untouched)} untouched by every case' if cov.untouched else ''}"
                    "</summary>", "",
                *[f"- {_code(f)}: " + (", ".join(
                    f"{kind} {n}x" for kind, n in (("executed", cov.executed.get(f, 0)),
                                                    ("read", cov.read.get(f, 0)),
                                                    ("written", cov.written.get(f, 0))) if n)
                    or "**untouched**") for f in cov.files[:50]],
                *([f"- … {len(cov.files) - 50} more"] if len(cov.files) > 50 else []),
                "", "</details>"]
    if sk.warnings:
        out += ["", "<details><summary>Lint warnings</summary>", "",
                *[f"- {_cell(w)}" for w in sk.warnings], "", "</details>"]
    out += ["", "<sub>Verdicts use the first-attempt pass rate; the terminal rate also counts "
                "assertions that passed only after the agent corrected something (– where there "
                "was no later attempt).</sub>"]
    return disarm("\n".join(out).strip() + "\n")


def head_vs_base_lines(report: SkillReport) -> list[str]:
    """The skill against its base version (a run with --compare-base): per runtime, the
    comparative grader's wins, ties and losses for the head with the preference's interval,
    and the efficiency verdict with the figures that decided it."""
    if not report.head_vs_base:
        return []
    base = f" (base `{report.base_commit[:12]}`)" if report.base_commit else ""
    out = ["", f"### Head against base{base}", "",
           "| runtime | wins | ties | losses | ungraded | preference [95%] | efficiency |",
           "|---|---|---|---|---|---|---|"]
    for p in report.head_vs_base:
        bias = f" ({p.position_bias} position bias)" if p.position_bias else ""
        out.append(f"| {p.runtime} | {p.wins} | {p.ties}{bias} | {p.losses} | {p.ungraded} | "
                   f"{p.preference.text() if p.preference else '–'} | "
                   f"{p.efficiency or '–'} |")
    # the reason is aeval's own words and figures (no text of the skill or the run)
    said = [f"- [{p.runtime}] efficiency {p.efficiency}: {p.efficiency_reason or ''}"
            for p in report.head_vs_base if p.efficiency in ("better", "worse")]
    return out + (["", *said] if said else [])


def skill_folder(s: LocatedSuggestion) -> str:
    """The skill's folder from the repository root (``.`` at the root; the skill's name when
    the suggestion is not mapped into the repository)."""
    repo, rel = s.repo_path, s.suggestion.path
    if repo and (repo == rel or repo.endswith("/" + rel)):
        return repo[:-len(rel)].rstrip("/") or "."
    return s.skill


def command_lines(s: LocatedSuggestion) -> list[str]:
    """A fix that is a command (a file mode): where to run it, and the command, fenced."""
    cmd = s.suggestion.command
    if not cmd:
        return []
    return [f"Run in the skill's folder {_code(skill_folder(s))} (a file mode is no line "
            "edit):", "", fenced(cmd, "sh")]


def case_fix_lines(report: SkillReport, c: CaseResult, ids: list[str],
                   shown: set[int] | None = None) -> dict[str, list[str]]:
    """Per failed assertion or self-correction of one case run, its fixes as short markdown:
    the edit as a diff, or the command; one already in ``shown`` (ids of the suggestions an
    earlier case showed; updated) only by its place."""
    shown = set() if shown is None else shown
    located = {id(s.suggestion): s for s in report.suggestions
               if not s.problem and c.runtime in s.runtimes}
    key = c.case_id if c.epoch is None else f"{c.case_id}#{c.epoch}"
    out: dict[str, list[str]] = {}
    for i, xs in case_fixes([s.suggestion for s in located.values()], key, ids).items():
        for x in xs:
            s = located[id(x)]
            where = f"{_code(s.repo_path or x.path)} line {x.start_line}"
            if id(x) in shown:
                out.setdefault(i, []).extend([f"Fix ({x.level}, {x.source}) at {where}: as "
                                              "above.", ""])
                continue
            shown.add(id(x))
            out.setdefault(i, []).append(f"Fix ({x.level}, {x.source}) at {where}: "
                                         f"{untrusted(x.rationale)}")
            if x.command:
                out[i] += ["", *command_lines(s)]
            if x.replacement != x.original:
                out[i] += ["", fenced("\n".join([*(f"-{ln}" for ln in x.original.splitlines()),
                                                 *(f"+{ln}" for ln in
                                                   x.replacement.splitlines())]), "diff")]
            out[i].append("")
    return out


def _grounding_lines(s: LocatedSuggestion) -> list[str]:
    out = [f"**Grounded in** {_code(s.suggestion.grounded_in)}: {_cell(s.grounded_text)}"]
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
    if _QUICK_ACTION_LINE.search(sg.replacement):
        # Applied as is, a line starting with "/" could not be disarmed: show, do not offer.
        block = ("Not offered as a one-click suggestion: a line of it starts with `/`, which "
                 "GitLab would read as a quick action. The replacement (each line indented by "
                 "one space):\n\n" + fenced(disarm(sg.replacement.removesuffix("\n"))))
    if sg.command:  # a command-only fix: nothing to replace on the line
        block = "\n".join(command_lines(s) + (["", block] if sg.replacement != sg.original
                                               else []))
    out = [suggestion_marker(s.fingerprint, s.folder or s.skill),
           f"**aeval {sg.level}** for {_code(s.skill)}: {_LEVEL_MEANING[sg.level]}.", "",
           block, "", f"**Why:** {untrusted(sg.rationale)}", "", *_grounding_lines(s)]
    if sg.validated:
        out += ["", "Validated by the run: the agent made this same edit to get the case "
                    "through."]
    out += ["", f"<sub>runtime(s): {_cell(', '.join(s.runtimes))}</sub>"]
    return disarm("\n".join(out) + "\n")


def github_suggestion_body(s: LocatedSuggestion) -> str:
    """A GitHub review comment: a ```` ```suggestion ```` block whose content replaces exactly
    the lines the comment spans (``start_line``..``line``, set by the caller), the level, the
    rationale and the grounding. GitHub has no quick actions, so the replacement is offered
    as is (a line starting with "/" included); its control characters are escaped."""
    sg = s.suggestion
    repl = sg.replacement.removesuffix("\n")
    block = fenced(repl, "suggestion") if repl.strip("\n") else "```suggestion\n```"
    if sg.command:  # a command-only fix: nothing to replace on the line
        block = "\n".join(command_lines(s) + (["", block] if sg.replacement != sg.original
                                               else []))
    out = [suggestion_marker(s.fingerprint, s.folder or s.skill),
           f"**aeval {sg.level}** for {_code(s.skill)}: {_LEVEL_MEANING[sg.level]}.", "",
           block, "", f"**Why:** {code_span(sg.rationale)}", "", *_grounding_lines(s)]
    if sg.validated:
        out += ["", "Validated by the run: the agent made this same edit to get the case "
                    "through."]
    out += ["", f"<sub>runtime(s): {code_span(', '.join(s.runtimes)).replace('|', chr(92) + '|')}"
                "</sub>"]
    return "\n".join(out) + "\n"


def outdated_body(body: str, reason: str) -> str:
    """An aeval discussion body marked as no longer applying; its suggestion block disarmed."""
    lines = body.splitlines()
    rest = [ln for ln in lines[1:] if ln != OUTDATED_MARKER]
    rest = [re.sub(r"^(`{3,})suggestion(?::-\d+\+\d+)?$", r"\1text", ln) for ln in rest]
    return disarm("\n".join([lines[0], OUTDATED_MARKER, f"**Outdated:** {escape_controls(reason)}",
                              "", *rest]) + "\n")


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
        if sg.command and sg.replacement == sg.original:
            out += [f"{i}. In the folder `{skill_folder(s)}`, run: `{sg.command}`",
                    f"Reason ({sg.level}): {sg.rationale}", ""]
            continue
        out += [f"{i}. In `{s.repo_path}`, replace lines {sg.start_line}-{sg.end_line}, which "
                f"currently read:", "<<<", sg.original.rstrip("\n"), ">>>", "with:", "<<<",
                sg.replacement.rstrip("\n"), ">>>", f"Reason ({sg.level}): {sg.rationale}", ""]
    return "\n".join(out).rstrip() + "\n"


def fallback_note_body(items: list[LocatedSuggestion], manifest: RunManifest,
                       repo_root: Path | None, notice: str | None = None, *,
                       forge: str = "GitLab", change: str = "merge request") -> str:
    """The one note for suggestions outside the diff: what and why, per-file patches, and a
    copy-paste prompt for an agent. Empty ``items``: a short 'nothing left' body. ``forge``
    and ``change`` name where it is posted ("GitHub", "pull request")."""
    out = [FALLBACK_MARKER, f"## aeval · suggestions outside this {change}'s diff", ""]
    if not items:
        return disarm("\n".join([*out, f"None as of run `{manifest.run_id}`: every earlier one "
                                        "was applied or no longer applies."]) + "\n")
    out += [f"Run `{manifest.run_id}`. These fixes touch lines the {change} does not "
            f"change, so {forge} cannot offer them as one-click suggestions. Apply a patch "
            "(`git apply`), or give the prompt below to an agent.", ""]
    if notice:
        out += [f"> {escape_controls(notice)}", ""]
    for i, s in enumerate(items, 1):
        sg = s.suggestion
        out += [f"### {i}. {sg.level} · {_code(s.repo_path or '')} lines {sg.start_line}-"
                f"{sg.end_line} · {_code(s.skill)}", "", *command_lines(s),
                *([""] if sg.command else []), f"**Why:** {untrusted(sg.rationale)}",
                "", *_grounding_lines(s), ""]
    by_file: dict[str, list[FixSuggestion]] = {}
    for s in items:
        if s.suggestion.replacement == s.suggestion.original:
            continue  # a command-only fix: shown above, no patch
        by_file.setdefault(s.repo_path or s.suggestion.path, []).append(s.suggestion)
    if by_file:
        out += ["### Patches", ""]
    for path, group in by_file.items():
        file = repo_file(repo_root, path) if repo_root else None
        current = file.read_text(encoding="utf-8") if file else None
        hint = "" if current is not None else " (zero context: `git apply --unidiff-zero`)"
        out += [f"<details><summary><code>{html.escape(escape_controls(path))}</code>{hint}"
                "</summary>", "",
                fenced(file_patch(path, group, current), "diff"), "", "</details>", ""]
    out += ["### Prompt for an agent", "", fenced(agent_prompt(items))]
    return disarm("\n".join(out).strip() + "\n")


# ---- GitLab Code Quality ----------------------------------------------------------------------


class CodeQualityLines(StrictModel):
    begin: int = Field(ge=1, description="First line of the issue.")


class CodeQualityLocation(StrictModel):
    path: str = Field(description="Path from the repository root.")
    lines: CodeQualityLines


class CodeQualityIssue(StrictModel):
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
        desc = escape_controls(f"aeval {sg.level} ({s.skill}): {sg.rationale} [grounded in "
                               f"{sg.grounded_in}: {s.grounded_text}]")
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


