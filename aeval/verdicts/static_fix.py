"""Fixes the static skill check (S0) proves, with no model: the exact replacement of a finding,
derived from the skill's own files, or nothing.

- **a moved or renamed file**: a documented path the skill does not have (``missing``) whose
  evident new place is exactly one file of the skill: the only file of that name elsewhere
  (``scripts/count.py`` -> ``tools/count.py``), the only one that differs in letter case,
  or the only close match (difflib) among the files of its folder with its extension
  (``scripts/count_word.py`` -> ``scripts/count_words.py``), or, with none there, the only
  closer match among the skill's files of that extension (``tools/count_words.py``). The
  path is replaced on the line that names it;
- **an option the parser spells otherwise**: a documented option the script refuses
  (``rejected``, `StaticFinding.word`) whose evident spelling is exactly one option of the
  script's parser: the same but for case and ``_`` / ``-`` (``--dry_run`` -> ``--dry-run``),
  or the only close match (``--out`` -> ``--output``). The option is replaced on its line;
- **a subcommand the script names otherwise**: a documented action the script refuses whose
  evident name is exactly one action it accepts: the same but for case and ``_`` / ``-``,
  the only close match (``summarize`` -> ``summary``), or the only accepted action the word
  holds as a ``_`` / ``-`` part (``segment_train`` -> ``train``);
- **a dropped executable bit**: a file the docs run directly that is not executable while its
  interpreter line is usable: the fix is the command ``chmod +x <file>`` (a mode is no line).

Two candidates, a path or option not found on the finding's line, a file the check could not
read: no fix. A wrong fix is worse than none. Pure apart from reading the skill's own files.
"""

from __future__ import annotations

import difflib
import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from aeval.skill.script_interface import Interface, read_interface
from aeval.verdicts.doctest import interpreter_problem
from aeval.verdicts.finding import StaticFinding
from aeval.verdicts.missing import shipped_files

PATH_CUTOFF = 0.75  # difflib ratio of two file stems in one folder: a rename, not another file
MOVED_CUTOFF = 0.85  # ... of a file's stem elsewhere in the skill: renamed and moved
OPTION_CUTOFF = 0.7  # difflib ratio of two long options: a spelling of the same option
MAX_SCRIPT_BYTES = 1_000_000


@dataclass(frozen=True)
class StaticFix:
    """One fix of one line of a skill document (or a command), and the findings it fixes."""

    file: str  # the document whose line changes (SKILL.md, a reference file)
    line: int  # 1-based
    original: str  # the line as it is
    replacement: str  # the line fixed (equal to `original` for a command-only fix)
    rationale: str
    findings: tuple[StaticFinding, ...]
    command: str | None = None  # a command to run in the skill's folder (a file mode)


@dataclass(frozen=True)
class _Edit:
    line: int
    old: str
    new: str
    pattern: re.Pattern[str]
    why: str
    finding: StaticFinding


def _path_pattern(rel: str) -> re.Pattern[str]:
    # a path as written: after a prefix that leads to the skill's root (`./`, `$SKILL_DIR/`,
    # `../` from a reference file) or a word boundary; never inside a longer name
    return re.compile(r"(?<![\w.-])" + re.escape(rel) + r"(?![\w/-]|\.\w)")


def _option_pattern(flag: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])")


def moved_to(root: Path, rel: str, files: list[str]) -> tuple[str, str] | None:
    """The one file of the skill that is evidently ``rel`` moved or renamed, and how it was
    found; None when none is, or when two could be."""
    path = PurePosixPath(rel)
    others = [f for f in files if f != rel]
    same = [f for f in others if PurePosixPath(f).name == path.name]
    if same:
        return (same[0], f"the skill's only file named {path.name}") if len(same) == 1 \
            else None
    cased = [f for f in others if f.lower() == rel.lower()]
    if cased:
        return (cased[0], "the same path but for letter case (file names are "
                          "case-sensitive)") if len(cased) == 1 else None
    if not path.suffix:
        return None
    kind = [f for f in others if PurePosixPath(f).suffix == path.suffix]
    folder = [f for f in kind if PurePosixPath(f).parent == path.parent]
    close = _close(path.stem, folder, PATH_CUTOFF)
    if close:
        if len(close) != 1:
            return None
        where = f"{path.parent}/" if str(path.parent) != "." else "the skill's root"
        return close[0], f"the only close match among the {path.suffix} files of {where}"
    # renamed and moved: a closer match still, and the only one in the whole skill
    close = _close(path.stem, kind, MOVED_CUTOFF)
    if len(close) != 1:
        return None
    return close[0], f"the only close match among the skill's {path.suffix} files"


def _close(stem: str, files: list[str], cutoff: float) -> list[str]:
    """The files whose stem is a difflib close match of ``stem`` (at most two: one is
    evident, two are ambiguous)."""
    by_stem: dict[str, list[str]] = {}
    for f in files:
        by_stem.setdefault(PurePosixPath(f).stem, []).append(f)
    found = difflib.get_close_matches(stem, list(by_stem), n=2, cutoff=cutoff)
    return [f for s in found for f in by_stem[s]][:2]


def _interface(root: Path, rel: str) -> Interface | None:
    try:
        if (root / rel).stat().st_size > MAX_SCRIPT_BYTES:
            return None
        source = (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return read_interface(source, PurePosixPath(rel).suffix)


def _evident(word: str, known: list[str], cutoff: float) -> str | None:
    """The one of ``known`` that is ``word`` but for case and ``_`` / ``-``, else the only
    close match; None when none is, or two are."""
    same = [k for k in known if k.lower().replace("_", "-") == word.lower().replace("_", "-")]
    if same:
        return same[0] if len(same) == 1 else None
    close = difflib.get_close_matches(word, known, n=2, cutoff=cutoff)
    return close[0] if len(close) == 1 else None


def spelled_as(root: Path, rel: str, flag: str) -> str | None:
    """The one option of ``rel``'s parser that is evidently ``flag`` spelled otherwise."""
    if not flag.startswith("--") or len(flag) < 4:
        return None
    iface = _interface(root, rel)
    if iface is None or not iface.options or flag in iface.options:
        return None
    options = sorted(o for o in iface.options if o.startswith("--") and o != "--help")
    return _evident(flag, options, OPTION_CUTOFF)


def action_as(root: Path, rel: str, word: str) -> str | None:
    """The one action (subcommand) of ``rel`` that is evidently the documented ``word``."""
    iface = _interface(root, rel)
    if iface is None or not iface.actions or word in iface.actions or len(word) < 3:
        return None
    actions = sorted(iface.actions)
    found = _evident(word, actions, PATH_CUTOFF)
    if found is not None or any(k.lower().replace("_", "-") == word.lower().replace("_", "-")
                                for k in actions):
        return found
    parts = re.split(r"[_-]", word)
    held = [a for a in actions if len(parts) > 1 and a in (parts[0], parts[-1])]
    return held[0] if len(held) == 1 else None


def _where(lines: list[str], f: StaticFinding, pattern: re.Pattern[str]) -> int | None:
    """The 1-based line holding ``pattern`` once: the finding's, or a line that continues its
    command (after a trailing backslash); None when it is on none, or on two."""
    hits, at = [], f.line
    while 1 <= at <= len(lines):
        n = len(pattern.findall(lines[at - 1]))
        if n:
            hits.append((at, n))
        if not lines[at - 1].rstrip().endswith("\\"):
            break
        at += 1
    if len(hits) != 1 or (hits[0][1] != 1 and f.kind == "rejected"):
        return None
    return hits[0][0]


def static_fixes(root: Path, findings: list[StaticFinding]) -> list[StaticFix]:
    """The fixes S0's ``findings`` (of the skill at ``root``, the original) prove, one per
    document line (its edits together) or per command, in the findings' order."""
    root = Path(root)
    files: list[str] | None = None
    texts: dict[str, list[str] | None] = {}
    edits: dict[tuple[str, int], list[_Edit]] = {}
    commands: dict[str, StaticFix] = {}
    for f in findings:
        if f.severity != "defect":
            continue
        if f.file not in texts:
            texts[f.file] = _lines(root, f.file)
        lines = texts[f.file]
        if lines is None or not 1 <= f.line <= len(lines):
            continue
        if f.kind == "not_executable":
            fix = _chmod(root, f, lines)
            if fix is not None and fix.command is not None and fix.command not in commands:
                commands[fix.command] = fix
            continue
        if f.kind == "missing":
            if files is None:
                files = shipped_files(root)
            found = moved_to(root, f.path, files)
            if found is None:
                continue
            new, how = found
            why = f"{f.path} is not in the skill; {new} is {how}"
            old = f.path
            base = posixpath.dirname(f.file)
            if base and _where(lines, f, _path_pattern(old)) is None:
                # a reference file's link, written from its own folder (`old.md`)
                old = posixpath.relpath(f.path, base)
                new = posixpath.relpath(new, base)
            pattern = _path_pattern(old)
        elif f.kind == "rejected" and f.word and f.word.startswith("-"):
            new = spelled_as(root, f.path, f.word)
            if new is None:
                continue
            pattern, old = _option_pattern(f.word), f.word
            why = (f"{f.path} does not accept {f.word}; {new} is the only option of its "
                   f"parser spelled so")
        elif f.kind == "rejected" and f.word:
            new = action_as(root, f.path, f.word)
            if new is None:
                continue
            pattern, old = _option_pattern(f.word), f.word
            why = (f"{f.path} does not accept `{f.word}`; `{new}` is the only action it "
                   f"accepts named so")
        else:
            continue
        at = _where(lines, f, pattern)
        if at is None:
            continue
        edits.setdefault((f.file, at), []).append(_Edit(at, old, new, pattern, why, f))
    out = []
    for (file, at), group in edits.items():
        original = (texts[file] or [])[at - 1]
        fixed, seen = original, set()
        for e in group:
            if (e.old, e.new) in seen:
                continue
            seen.add((e.old, e.new))
            fixed = e.pattern.sub(lambda _m, new=e.new: new, fixed)
        if fixed == original:
            continue
        why = "; ".join(dict.fromkeys(e.why for e in group))
        out.append(StaticFix(file=file, line=at, original=original, replacement=fixed,
                             rationale=f"Static check (S0), no model: {why}.",
                             findings=tuple(e.finding for e in group)))
    return sorted([*out, *commands.values()], key=lambda x: (x.file, x.line))


def _chmod(root: Path, f: StaticFinding, lines: list[str]) -> StaticFix | None:
    """``chmod +x`` when the executable bit is all the file lacks to start."""
    path = root / f.path
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None
    if not path.is_file() or path.is_symlink() or mode & 0o111 or \
            interpreter_problem(path) is not None:
        return None
    return StaticFix(
        file=f.file, line=f.line, original=lines[f.line - 1], replacement=lines[f.line - 1],
        command=f"chmod +x {_shell_word(f.path)}", findings=(f,),
        rationale=f"Static check (S0), no model: line {f.line} runs {f.path} directly, which "
                  f"is not executable (mode {mode & 0o777:o}) though its interpreter line is "
                  f"usable; run the command in the skill's folder and commit the mode (git "
                  f"update-index --chmod=+x {f.path} where git ignores file modes).")


def _shell_word(rel: str) -> str:
    """A skill path as one inert shell word (quoted when it needs it, never an option)."""
    return shlex.quote(f"./{rel}" if rel.startswith("-") else rel)


def _lines(root: Path, rel: str) -> list[str] | None:
    path = root / rel
    try:
        if path.is_symlink() or not path.resolve().is_relative_to(root.resolve()):
            return None
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
