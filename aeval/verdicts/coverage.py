"""Skill resource coverage: which files of the skill copy a run read, executed or wrote.

Two sources, joined per file:

- **the events** (what the agent asked for): a file tool's path (`read_file` -> read,
  `write_file` / `edit_file` -> written); in a `bash` command, a skill path in command
  position or as the script of an interpreter (``python3 $SKILL_DIR/scripts/run.py``,
  ``bash x.sh``, ``./x.sh``) -> executed, a skill path after ``>`` / ``>>`` / ``tee`` ->
  written, any other skill path the command names (``cat``, an argument) -> read;
- **the watch** on the skill copy (inotify, `adapters/sandbox/watch.py`), which sees every process,
  the CLI runtimes' own tools included: a file opened or accessed -> read; written, created
  or re-moded -> written. An execution shows to inotify only as an open by the interpreter,
  so *executed* comes from the events alone, and a file executed is not also listed as read.

Paths are attributed to the skill copy when, after ``$SKILL_DIR`` (any spelling of it,
`aeval.skill.shellparse.as_skill_var`: ``{baseDir}``, ``${CLAUDE_SKILL_DIR}``, the claude.ai
install path) is expanded and a relative path is taken from the workspace root (or from
the folder a ``cd`` earlier in the same command moved to), the path (or the file it
resolves to through symlinks) lies inside the copy. Paths outside it are ignored. Pure: no
Prefect, no I/O beyond resolving symlinks.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from aeval.artifacts.coverage import ResourceUse, SkillCoverage
from aeval.events import Event, ToolCallEvent
from aeval.isolation.copying import text_path
from aeval.skill.shellparse import as_skill_var
from aeval.skill.skill_md import SKIPPED_FOLDERS

Use = Literal["read", "executed", "written"]
PATH_KEYS = ("path", "file_path", "filePath", "notebook_path", "target_file")
READ_TOOLS = frozenset({"read_file"})
WRITE_TOOLS = frozenset({"write_file", "edit_file"})
INTERPRETERS = frozenset({
    "python", "python3", "python2", "bash", "sh", "zsh", "dash", "node", "deno", "bun", "ruby",
    "perl", "php", "Rscript", "lua", "tclsh", "pwsh", "uv", "poetry", "pipx", "npx", "source",
    ".", "exec", "env", "time", "nice", "timeout", "xargs", "sudo"})
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", "{", "}", "then", "do", "else",
                         "!", "if", "while", "until"})
_REDIRECTS = frozenset({">", ">>", "1>", "2>", "&>", "1>>", "2>>"})


def _expand(raw: str, skill_var: Path, skill_dir: Path | None = None) -> str:
    """``raw`` with the skill folder's spellings (``$SKILL_DIR``, ``${CLAUDE_SKILL_DIR}``,
    ``{baseDir}``) made ``skill_var``, and the claude.ai install path of ``skill_dir``'s own
    name (``/mnt/skills/user/<name>``) made ``skill_dir``."""
    folder = skill_dir or skill_var
    return as_skill_var(raw.strip(), (folder.name,), to=str(skill_var),
                        installed_to=str(folder))


def skill_relative(raw: str, workspace: Path, skill_dir: Path,
                   skill_var: Path | None = None) -> str | None:
    """The skill-relative path ``raw`` names, or None when it lies outside the skill copy.

    ``$SKILL_DIR`` is expanded (to ``skill_var``, the folder the variable points to, by
    default ``skill_dir``); a relative path is taken from ``workspace`` (the folder the
    command runs in); a path that reaches the copy through a symlink (or the copy's real
    path) counts."""
    if not raw or "\0" in raw:
        return None
    text = _expand(raw, skill_var or skill_dir, skill_dir)
    p = Path(text)
    if not p.is_absolute():
        p = Path(workspace) / p
    roots = {Path(os.path.normpath(skill_dir))}
    with contextlib.suppress(OSError):
        roots.add(Path(os.path.realpath(skill_dir)))
    candidates = [Path(os.path.normpath(p))]
    with contextlib.suppress(OSError):
        candidates.append(Path(os.path.realpath(p)))
    for cand in candidates:
        for root in roots:
            if cand == root:
                return None  # the folder itself is not a file of it
            if cand.is_relative_to(root):
                return cand.relative_to(root).as_posix()
    return None


def _words(command: str) -> list[str]:
    """Shell words of ``command``; separators (``;``, ``&&``, ``|`` ...) as words of their own.
    A command shlex cannot split (an open quote) falls back to whitespace."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer)
    except ValueError:
        return command.split()


def _cd(target: str | None, cwd: Path, workspace: Path, skill_var: Path) -> Path:
    """The folder a ``cd TARGET`` run in ``cwd`` lands in; the workspace root when it cannot
    be told (no target, ``-``, ``~`` or another variable)."""
    if not target:
        return Path(workspace)
    text = _expand(target, skill_var)
    if text.startswith(("-", "~")) or "$" in text or "`" in text:
        return Path(workspace)
    return Path(os.path.normpath(Path(cwd) / text))


def command_uses(command: str, workspace: Path, skill_dir: Path,
                 skill_var: Path | None = None) -> list[tuple[str, Use]]:
    """(skill path, use) for each skill file a bash command names, in order (see the module
    docstring for the rule). ``skill_var``: the folder ``$SKILL_DIR`` points to (default
    ``skill_dir``). Relative paths are taken from the workspace root, or from the folder a
    ``cd`` earlier in the command moved to (a subshell's ``cd`` ends with it)."""
    out: list[tuple[str, Use]] = []
    var = skill_var or skill_dir
    cwd, saved = Path(workspace), []
    at_start, after_interpreter, redirect, tee, cd = True, False, False, False, False
    shell, inline = False, False  # `bash -c '<script>'` (how Codex reports every command)
    for word in _words(command):
        if inline:
            out += command_uses(word, cwd, skill_dir, var)
            inline = False
            continue
        sep = word in _SEPARATORS or (bool(word) and set(word) <= set(";&|()"))
        if cd and (sep or not word.startswith("-") or word == "-"):
            cwd, cd = _cd(None if sep else word, cwd, workspace, var), False
            if not sep:
                continue
        if word and set(word) <= set(";&|()"):  # `);`, `&&`, `(`: shlex groups these
            for ch in word:
                if ch == "(":
                    saved.append(cwd)
                elif ch == ")" and saved:
                    cwd = saved.pop()
            word = ";"
        if word in _SEPARATORS:
            at_start, after_interpreter, redirect, tee = True, False, False, False
            continue
        if at_start and word in ("cd", "pushd"):
            at_start, cd = False, True
            continue
        if cd:  # an option of cd (-P, -L)
            continue
        if word in _REDIRECTS:
            redirect = True
            continue
        if word in ("<", "<<", "<<<"):
            continue
        names = [word] + ([word.split("=", 1)[1]] if "=" in word else [])
        # a command name without a slash is looked up on PATH, and a word with a variable
        # other than $SKILL_DIR cannot be resolved here: neither names a file of the skill
        names = [n for n in names if "$" not in _expand(n, var)
                 and not (at_start and "/" not in n)]
        rel = next((r for r in (skill_relative(n, cwd, skill_dir, var) for n in names) if r),
                   None)
        if rel is not None:
            use: Use = ("written" if redirect or tee else
                        "executed" if at_start or after_interpreter else "read")
            out.append((rel, use))
        base = os.path.basename(word)
        if redirect:
            redirect = False
        elif at_start and "=" in word and not word.startswith("-"):
            continue  # VAR=value before the command
        elif at_start or after_interpreter:
            if base in INTERPRETERS or re.fullmatch(r"python3?\.\d+", base):
                at_start, after_interpreter = False, True
                tee, shell = False, base in SHELLS
            elif after_interpreter and word.startswith("-"):
                if shell and not word.startswith("--") and "c" in word[1:]:
                    after_interpreter, inline = False, True  # the next word is the script
                elif word in ("-m", "-c"):
                    after_interpreter = False  # a module or inline code, not a file
                continue
            else:
                at_start, after_interpreter = False, False
                tee = base == "tee"
    return out


def _input_path(data: dict[str, Any]) -> str | None:
    for key in PATH_KEYS:
        value = data.get(key)
        if isinstance(value, str):
            return value
    return None


def uses_from_events(events: Iterable[Event], workspace: Path, skill_dir: Path,
                     cwd: Path | None = None) -> list[tuple[str, Use]]:
    """(skill path, use) from the tool calls of a run (``cwd``: where its commands ran, by
    default the workspace root)."""
    workspace = cwd or workspace
    out: list[tuple[str, Use]] = []
    for e in events:
        if not isinstance(e, ToolCallEvent):
            continue
        if e.tool == "bash" and isinstance(e.input.get("command"), str):
            out += command_uses(e.input["command"], workspace, skill_dir)
            continue
        raw = _input_path(e.input)
        if raw is None:
            continue
        rel = skill_relative(raw, workspace, skill_dir)
        if rel is None:
            continue
        if e.tool in WRITE_TOOLS:
            out.append((rel, "written"))
        elif e.tool in READ_TOOLS:
            out.append((rel, "read"))
    return out


def exercised(events: list[Event], workspace: Path, skill_dir: Path, files: Iterable[str],
              touches: Iterable[tuple[str, str, float]] = (), cwd: Path | None = None,
              loading_counts: bool = True) -> list[str]:
    """What shows the attempt exercised the skill, one line per file (first event only):
    a skill file executed by a tool call (failed or not: it ran), or read by one that
    succeeded (its command or file tool names it, or the watch saw it opened while the call
    ran); or, when ``loading_counts`` (an agent runtime: loading the skill is how it acts),
    the runtime's own skill tool. ``touches``: the watch's ``(path, what, t)`` with ``t`` on
    the events' clock. ``cwd``: where the commands ran (default the workspace; a doc test
    runs SKILL.md's blocks from the skill copy). SKILL.md counts only when
    ``loading_counts``: a doc test runs SKILL.md's own text, which is not using the skill."""
    shipped = set(files)
    if not loading_counts:
        shipped.discard("SKILL.md")
    base = cwd or workspace
    results = {e.call_id: e for e in events if type(e).__name__ == "ToolResultEvent"}
    opened = [(p, t) for p, what, t in touches if what in ("opened", "accessed")]
    found: dict[str, str] = {}

    def note(rel: str, how: str) -> None:
        if rel in shipped and rel not in found:
            found[rel] = f"{rel} {how}"

    for e in events:
        if not isinstance(e, ToolCallEvent):
            continue
        r = results.get(e.call_id)
        ok = bool(r is not None and getattr(r, "ok", False))
        if loading_counts and e.tool in ("skill", "Skill", "use_skill", "load_skill"):
            note("SKILL.md", f"loaded by event {e.seq} ({e.tool} tool)")
        if e.tool == "bash" and isinstance(e.input.get("command"), str):
            for rel, use in command_uses(e.input["command"], base, skill_dir):
                if use == "executed":
                    note(rel, f"executed by event {e.seq}")
                elif use == "read" and ok:
                    note(rel, f"read by event {e.seq}")
        else:
            raw = _input_path(e.input)
            rel = skill_relative(raw, base, skill_dir) if raw else None
            if rel is not None and e.tool in READ_TOOLS and ok:
                note(rel, f"read by event {e.seq} ({e.tool})")
        if ok and r is not None:
            for rel, t in opened:
                if e.t - 0.05 <= t <= r.t + 0.05:
                    note(rel, f"opened while event {e.seq} ran")
    return list(found.values())


WATCH_USES: dict[str, Use] = {"opened": "read", "accessed": "read", "written": "written",
                              "created": "written", "attributes": "written", "moved": "written"}


def resource_use(event_uses: Iterable[tuple[str, Use]], watch_touches: Iterable[tuple[str, str]],
                 files: Iterable[str] | None = None, watched: bool = False,
                 evidence: list[str] | None = None) -> ResourceUse:
    """Join the uses from the events with what the watch saw (``(path, what)`` pairs). With
    ``files`` (the copy's files), only those are kept (folders and deleted names drop out).
    A file executed is not listed as read as well."""
    uses: dict[Use, set[str]] = {"read": set(), "executed": set(), "written": set()}
    for rel, use in event_uses:
        uses[use].add(rel)
    for rel, what in watch_touches:
        use = WATCH_USES.get(what)
        if use is not None and rel != ".":
            uses[use].add(rel)
    keep = set(files) if files is not None else None
    for k in uses:
        if keep is not None:
            uses[k] &= keep
    uses["read"] -= uses["executed"]
    return ResourceUse(read=sorted(uses["read"]), executed=sorted(uses["executed"]),
                       written=sorted(uses["written"]), watched=watched,
                       exercised=evidence or [])


def skill_files(root: Path) -> list[str]:
    """Every regular file of a skill folder (skill-relative POSIX paths), sorted: what
    coverage is counted over. The folders discovery never searches (version control,
    installed dependencies, virtual environments, caches: `SKIPPED_FOLDERS`) are left out:
    a vendor skill that ships its node_modules had 3,000 "untouched" files."""
    root = Path(root)
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_FOLDERS]
        for n in filenames:
            p = Path(dirpath) / n
            if p.is_file() and n != ".DS_Store":
                # a name that is not UTF-8 as artifacts show it (JSON holds no lone surrogate)
                out.append(text_path(p.relative_to(root).as_posix()))
    return sorted(out)


NOT_RESOURCES = frozenset({"SKILL.md", "eval.config", "eval.config.json", "eval.config.yaml",
                           "eval.config.yml", "evals/evals.json", "LICENSE", "LICENSE.txt",
                           "LICENSE.md", "NOTICE", ".gitignore", ".aevalignore"})
"""Files of a skill that are not its resources: the instructions themselves (the runtime
loads SKILL.md for the agent; no case "uses" it), the contract, licence and ignore files."""


def resource_files(files: Iterable[str], inputs: Iterable[str] = ()) -> list[str]:
    """What coverage is counted over: the skill's own runnable and reference files, that is
    ``files`` (`skill_files`) without `NOT_RESOURCES` and without the cases' inputs
    (``inputs``: their `files` entries, a file or a folder each: fixtures are copied into
    the workspace, never used from the skill copy). A file left out is never "untouched"."""
    prefixes = tuple(i.strip("/") + "/" for i in inputs if i.strip("/"))
    exact = {i.strip("/") for i in inputs}
    return [f for f in files
            if f not in NOT_RESOURCES and f not in exact and not f.startswith(prefixes)]


def skill_coverage(files: list[str], uses: list[ResourceUse]) -> SkillCoverage:
    """Per-file counts over the runs, and the files none of them touched."""
    counts: dict[str, dict[str, int]] = {"read": {}, "executed": {}, "written": {}}
    for u in uses:
        for kind in counts:
            for rel in getattr(u, kind):
                counts[kind][rel] = counts[kind].get(rel, 0) + 1
    touched = set().union(*(u.touched() for u in uses)) if uses else set()
    return SkillCoverage(runs=len(uses), files=sorted(files),
                         untouched=sorted(set(files) - touched),
                         watched=bool(uses) and all(u.watched for u in uses),
                         **{k: dict(sorted(v.items())) for k, v in counts.items()})
