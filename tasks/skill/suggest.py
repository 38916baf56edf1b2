"""Suggest: grounded LV1 / LV2 fixes mapped to exact lines of the skill's files.

- LV1 from the static skill check (S0), with no model: where its findings prove the exact
  replacement (`aeval.verdicts.static_fix`: a moved or renamed script, an option the parser
  spells otherwise, a dropped executable bit as a `command`), grounded in the case's failed
  S0 assertion; `validated` stays False (the run did not try it).
- LV1 straight from Δ: each hunk of an executor's edit to a skill file becomes a line
  replacement whose `replacement` is the executor's own text (validated by the run when the
  case then passed terminally), grounded in its `changes_made` entry.
- For failed assertions that Δ does not explain (LV1) and for the grader's eval_feedback (LV2),
  a model (eval_skill/agents/suggester.md) proposes line replacements.
- Every kept suggestion cites an existing failed assertion or change (`case:A3`, `case:C1`)
  and its `original` equals the file's current lines; anything else goes to `rejected`.
  Nothing failed and nothing corrected -> an empty set, and no model call.
"""

from __future__ import annotations

import difflib
import json
import logging
from pathlib import Path

from aeval.adapters.llm import ask_json
from aeval.artifacts import (
    AssertionsFile,
    CaseResult,
    FixSuggestion,
    FixSuggestions,
    Grading,
    RejectedSuggestion,
    SuggesterAnswer,
)
from aeval.errors import EnvironmentFailure
from aeval.isolation.redact import Redactor
from aeval.isolation.workspace import text_files
from aeval.prompts import load_prompt
from aeval.run.layout import CaseFiles, SkillFiles
from aeval.run.read import read_grading, read_if_there
from aeval.run.store import write_model
from aeval.verdicts.finding import StaticFinding
from aeval.verdicts.judge import STATIC
from aeval.verdicts.static_fix import static_fixes

MAX_FILE_CHARS = 20_000


def _case_key(c: CaseResult) -> str:
    return c.case_id if c.epoch is None else f"{c.case_id}#{c.epoch}"


def read_lines(skill_dir: Path, rel: str) -> list[str] | None:
    p = (skill_dir / rel).resolve()
    if not p.is_relative_to(skill_dir.resolve()) or not p.is_file():
        return None
    try:
        return p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def validated_by_run(g: Grading, edit_seq: int | None, whole_run: set[str]) -> bool:
    """The run validated an edit of the executor's when, after it, no tool call failed and
    every graded assertion passed on the final state; assertions about the whole run's
    commands (``whole_run``: `commands_succeeded`) and the structural ones judge the time
    before the edit, so they do not count here."""
    later_failures = [e for e in g.self_correction.first_attempt_errors
                      if edit_seq is None or e.seq > edit_seq]
    final = [e for e in g.expectations if e.status != "ungraded"
             and e.kind != "structural" and e.id not in whole_run]
    return not later_failures and bool(final) and all(e.terminal_passed for e in final)


def whole_run_checks(case_dir: Path) -> set[str]:
    """Ids of the case's `commands_succeeded` assertions (from assertions.json)."""
    doc = read_if_there(CaseFiles(case_dir).assertions, AssertionsFile)
    if doc is None:
        return set()
    return {a.id for a in doc.assertions
            if a.check is not None and a.check.type == "commands_succeeded"}


def delta_suggestions(skill_dir: Path, case: str, g: Grading, case_dir: Path
                      ) -> tuple[list[FixSuggestion], list[RejectedSuggestion]]:
    """LV1 from the executor's own edits (kept in ``<case>/skill_after/``): one suggestion
    per changed hunk, on the shipped file's exact lines."""
    kept, rejected = [], []
    whole_run = whole_run_checks(case_dir)
    for ch in g.self_correction.changes_made:
        validated = validated_by_run(g, ch.event_seq, whole_run)
        ref = f"{case}:{ch.id}"
        if ch.change != "modified":
            rejected.append(RejectedSuggestion(
                suggestion={"grounded_in": ref, "path": ch.path, "change": ch.change},
                reason=f"a {ch.change} file is not a line replacement; see skill.diff"))
            continue
        before = read_lines(skill_dir, ch.path)
        after = read_lines(CaseFiles(case_dir).skill_after, ch.path)
        if before is None or after is None:
            rejected.append(RejectedSuggestion(suggestion={"grounded_in": ref, "path": ch.path},
                                               reason="the file is not text, or its edited "
                                                      "copy was not kept"))
            continue
        sm = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                continue
            new = after[j1:j2]
            if i1 == i2:  # pure insertion: anchor on the line before (or after) it
                if i1 > 0:
                    i1, new = i1 - 1, [before[i1 - 1], *new]
                else:
                    i2, new = 1, [*new, before[0]]
            kept.append(FixSuggestion(
                level="LV1", grounded_in=ref, path=ch.path, start_line=i1 + 1, end_line=i2,
                original="\n".join(before[i1:i2]), replacement="\n".join(new),
                rationale=f"The executor had to make this edit during {case} ("
                          + ("then the case passed terminally" if validated
                             else "the case still failed")
                          + "); shipping it removes the need for the correction.",
                validated=validated, source="delta"))
    return kept, rejected


def static_suggestions(skill_dir: Path, pairs: list[tuple[str, Grading]],
                       findings: list[StaticFinding]) -> tuple[list[FixSuggestion], set[str]]:
    """LV1 from S0's findings where they prove the fix, grounded in the first case whose S0
    assertion failed; and the failed S0 assertions they explain (every finding fixed)."""
    failed = [k for k, g in pairs
              if any(e.id == STATIC and e.status == "failed" for e in g.expectations)]
    if not failed or not findings:
        return [], set()
    try:
        fixes = static_fixes(skill_dir, findings)
    except Exception:  # a bug of the derivation must not cost the skill its conclusion
        logging.getLogger(__name__).exception("aeval: static fixes of %s failed", skill_dir)
        return [], set()
    ref = f"{failed[0]}:{STATIC}"
    kept = [FixSuggestion(level="LV1", grounded_in=ref, path=f.file, start_line=f.line,
                          end_line=f.line, original=f.original, replacement=f.replacement,
                          rationale=f.rationale, validated=False, source="static",
                          command=f.command)
            for f in fixes]
    fixed = {x for f in fixes for x in f.findings}
    whole = all(f in fixed for f in findings if f.severity == "defect")
    return kept, {f"{k}:{STATIC}" for k in failed} if whole else set()


def check_suggestion(item: dict, skill_dir: Path, failed: set[str], changes: set[str]
                     ) -> FixSuggestion | str:
    """A kept suggestion, or the reason it is rejected."""
    ref = item.get("grounded_in", "")
    if ref not in failed and ref not in changes:
        return f"grounded_in {ref!r} is neither a failed assertion nor a recorded change"
    lines = read_lines(skill_dir, item["path"])
    if lines is None:
        return f"{item['path']!r} is not a text file of the skill"
    s, e = item["start_line"], item["end_line"]
    if e < s or e > len(lines):
        return f"lines {s}-{e} are outside {item['path']} ({len(lines)} lines)"
    if "\n".join(lines[s - 1:e]) != item["original"].rstrip("\n"):
        return f"stale: `original` differs from lines {s}-{e} of {item['path']}"
    if item["original"].rstrip("\n") == item["replacement"].rstrip("\n"):
        return "the replacement equals the original"
    return FixSuggestion(level=item["level"], grounded_in=ref, path=item["path"],
                         start_line=s, end_line=e, original=item["original"].rstrip("\n"),
                         replacement=item["replacement"].rstrip("\n"),
                         rationale=item.get("rationale", ""), validated=False, source="model")


def numbered_skill(skill_dir: Path) -> str:
    parts, total = [], 0
    for p, text in text_files(skill_dir):
        body = "\n".join(f"{i:4d}| {ln}" for i, ln in enumerate(text.splitlines(), 1))
        if total + len(body) > MAX_FILE_CHARS * 4:
            parts.append(f"=== {p.relative_to(skill_dir)} (not shown: size cap)")
            continue
        total += len(body)
        parts.append(f"=== {p.relative_to(skill_dir)}\n{body}")
    return "\n".join(parts)


def suggester_input(skill_dir: Path, pairs: list[tuple[str, Grading]],
                    explained: set[str]) -> str:
    failed = [{"id": f"{k}:{e.id}", "text": e.text, "evidence": e.evidence[-600:]}
              for k, g in pairs for e in g.expectations
              if e.status == "failed" and f"{k}:{e.id}" not in explained]
    changes = [{"id": f"{k}:{c.id}", "path": c.path, "diff": c.diff[-2000:]}
               for k, g in pairs for c in g.self_correction.changes_made]
    feedback = [{"case": k, "assertion": f.assertion, "reason": f.reason}
                for k, g in pairs for f in g.eval_feedback.suggestions]
    return "\n\n".join([
        "FAILED ASSERTIONS (cite their ids):\n" + json.dumps(failed, indent=1),
        "SELF-CORRECTIONS (cite their ids):\n" + json.dumps(changes, indent=1),
        "GRADER FEEDBACK (LV2 material; cite a failed assertion or change id):\n"
        + json.dumps(feedback, indent=1),
        "SKILL FILES (with line numbers; `original` must be the exact text of the lines, "
        "without the numbers):\n" + numbered_skill(skill_dir),
    ])


def suggest(run_dir: Path, out_dir: Path, skill: str, skill_dir: Path, runtime: str,
            cases: list[CaseResult], model: str | None = None,
            api_base: str | None = None, redactor: Redactor | None = None,
            findings: list[StaticFinding] | None = None) -> FixSuggestions:
    """Compute fix_suggestions.json for one skill x runtime and write it into ``out_dir``,
    redacted with ``redactor`` (the run's credentials); ``findings``: the skill's S0 defects,
    whose proven fixes come first and need no model."""
    skill_dir = Path(skill_dir)
    pairs, dirs = [], {}
    for c in sorted(cases, key=lambda c: (c.case_id, c.epoch or 0)):
        case_dir = Path(run_dir) / c.dir
        if (g := read_grading(case_dir)) is not None:
            pairs.append((_case_key(c), g))
            dirs[_case_key(c)] = case_dir
    kept, explained_static = static_suggestions(skill_dir, pairs, findings or [])
    rejected: list[RejectedSuggestion] = []
    for key, g in pairs:
        k, r = delta_suggestions(skill_dir, key, g, dirs[key])
        kept += k
        rejected += r
    failed = {f"{k}:{e.id}" for k, g in pairs for e in g.expectations if e.status == "failed"}
    changes = {f"{k}:{c.id}" for k, g in pairs for c in g.self_correction.changes_made}
    # a failure explained by an edit of the skill (Δ) is covered by that edit's suggestion;
    # corrections outside the skill (a patched runner of the agent's own) explain nothing here
    explained = {f"{k}:{a}" for k, g in pairs if g.self_correction.changes_made
                 for a in g.self_correction.affected_assertions}
    # ... and so is a failed structural assertion (a documented command, the probe) of a case
    # whose executor then edited the skill: the edit is the fix it needed
    explained |= {f"{k}:{e.id}" for k, g in pairs if g.self_correction.changes_made
                  for e in g.expectations if e.kind == "structural" and e.status == "failed"}
    explained |= explained_static  # S0's findings, each with its proven fix
    wants_model = any(f not in explained for f in failed) or any(
        g.eval_feedback.suggestions for _, g in pairs)
    model_error = None
    if model and (failed or changes) and wants_model:
        try:
            ans = ask_json(model, load_prompt("suggester"),
                           suggester_input(skill_dir, pairs, explained), SuggesterAnswer,
                           api_base=api_base)
        except EnvironmentFailure as exc:
            ans, model_error = None, f"suggester model failed: {exc}"[:400]
        if ans is not None and ans.value is None:
            model_error = f"suggester answer invalid: {ans.error}"[:400]
        for item in ans.value.suggestions if ans is not None and ans.value else []:
            out = check_suggestion(item.model_dump(), skill_dir, failed, changes)
            if isinstance(out, str):
                rejected.append(RejectedSuggestion(suggestion=item.model_dump(), reason=out))
            else:
                kept.append(out)
    if model_error:
        rejected.append(RejectedSuggestion(suggestion={}, reason=model_error))
    # one suggestion per (path, lines, replacement); deterministic order
    unique: dict[tuple, FixSuggestion] = {}
    for s in sorted(kept, key=lambda s: (s.level, s.path, s.start_line, s.end_line,
                                         s.grounded_in)):
        unique.setdefault((s.path, s.start_line, s.end_line, s.replacement, s.command), s)
    final = sorted(unique.values(), key=lambda s: (s.path, s.start_line, s.level))
    lv1 = sum(s.level == "LV1" for s in final)
    doc = FixSuggestions(skill=skill, runtime=runtime, suggestions=final, rejected=rejected,
                         causal_share=round(lv1 / len(final), 4) if final else None)
    write_model(SkillFiles(Path(out_dir)).fix_suggestions, doc, redactor or Redactor())
    return doc
