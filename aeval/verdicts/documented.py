"""Documented commands must work: which commands a skill documents, and which tool calls of a
run ran one of them and failed. Pure: text in, findings out.

A documented command is a shell command in SKILL.md (a fenced bash/sh block, or an inline
code span) or in the contract's `steps` that runs one of the skill's own files. Its
*signature* is that file, its action (the first positional argument, when it looks like an
action name: `segment_train`, `convert`; not a path or a value) and its flags (`--data`).
A tool call of the agent runs a documented command when, in one of its simple commands, it
runs the same skill file with the same action and only flags the documentation shows;
argument values do not matter. When such a call fails, the skill did not work as documented
on the first attempt, whatever the agent did next. What the agent improvised (the script
without arguments, an action the docs do not name, `--help`) is left to the grader.

It counts only when the command ran and the skill's own code rejected it. A call the runtime
refused (a tool it has not got, its policy: `ToolResultEvent.refused`) never ran, and a
command that names the skill in another runtime's folder (``.agents/skills/x/...`` where this
runtime's copy is ``.opencode/skills/x``) did not reach the skill: both are the agent's
errors (`agent_errors` says which), never the skill's.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from aeval.events import REFUSALS, Event, ToolCallEvent, ToolResultEvent, calls_by_id
from aeval.skill import markdown
from aeval.skill.shellparse import Command, as_skill_var, commands

_ACTION = re.compile(r"^[A-Za-z][A-Za-z0-9_:-]{0,63}$")
_SKILL_VAR = "$SKILL_DIR/"  # every spelling of the skill folder reads so (`as_skill_var`)
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_MAX_NESTING = 3  # `bash -c "sh -c '...'"` and deeper: read three shells down
_NOT_RUN = (".md", ".txt", ".json", ".yaml", ".yml", ".csv")  # documentation files are read
SHELL_TOOLS = frozenset({"bash", "shell", "exec_command", "command_execution", "Bash"})


@dataclass(frozen=True)
class Signature:
    """What identifies a documented command: the skill file it runs, its action, its flags."""

    file: str
    action: str | None
    flags: frozenset[str] = field(default_factory=frozenset)

    def __str__(self) -> str:
        parts = [self.file, *([self.action] if self.action else []), *sorted(self.flags)]
        return " ".join(parts)


@dataclass(frozen=True)
class DocumentedFailure:
    """A tool call that ran a documented command and failed."""

    seq: int  # the failing tool_result event
    call_seq: int  # its tool_call event
    command: str
    signature: str
    exit_code: int | None
    excerpt: str


def _shell_code(argv: list[str]) -> str | None:
    """The code a shell is given to run: ``bash -c CODE``, ``sh -lc CODE``, ``bash -o
    pipefail -c CODE`` (None for anything else, a script run by bash included)."""
    if not argv or PurePosixPath(argv[0]).name not in _SHELLS:
        return None
    i, code = 1, False
    while i < len(argv) and argv[i].startswith(("-", "+")) and argv[i] != "--":
        if argv[i] in ("-o", "+o", "-O", "+O"):
            i += 2  # an option name follows
            continue
        code = code or (not argv[i].startswith("--") and "c" in argv[i][1:])
        i += 1
    return argv[i] if code and i < len(argv) else None


def _simple_commands(command: str, depth: int = 0) -> list[Command]:
    """The simple commands of ``command`` as `aeval.skill.shellparse` reads them (lists, pipelines,
    subshells, ``VAR=value`` prefixes), with the commands inside ``bash -c '...'`` in place
    of the shell that runs them."""
    out: list[Command] = []
    for cmd in commands(command):
        code = _shell_code(cmd.target_argv())
        if code is not None and depth < _MAX_NESTING:
            out += _simple_commands(code, depth + 1)
        else:
            out.append(cmd)
    return out


def _skill_path(token: str, skill_files: frozenset[str], skill_roots: tuple[str, ...]
                ) -> str | None:
    """The skill file a token names, relative to the skill root, or None."""
    t = as_skill_var(token)
    if t.startswith(_SKILL_VAR):
        t = t[len(_SKILL_VAR):]
    else:
        for root in skill_roots:
            if root and t.startswith(root.rstrip("/") + "/"):
                t = t[len(root.rstrip("/")) + 1:]
                break
    t = t.removeprefix("./")
    if t in skill_files:
        return t
    # `python3 /abs/.../.agents/skills/<name>/scripts/run.py`, `skills/<name>/scripts/run.py`
    parts = PurePosixPath(t).parts
    for i in range(1, len(parts)):
        rel = "/".join(parts[i:])
        if rel in skill_files and "/" in rel:
            return rel if _copy_prefix(parts[:i], skill_roots) else None
    return None


def _copy_prefix(prefix: tuple[str, ...], skill_roots: tuple[str, ...]) -> bool:
    """Whether the folders before a skill file's path can be the skill copy: they end as a
    root ends (``/x/ws/.opencode/skills/seg``, ``skills/seg``, ``seg`` for the root
    ``.opencode/skills/seg``). ``.agents/skills/seg`` is another runtime's folder, where
    this runtime's copy is not. Without roots, any prefix."""
    roots = [PurePosixPath(r).parts for r in skill_roots if r]
    if not roots:
        return True
    for root in roots:
        k = min(len(prefix), len(root))
        if prefix[len(prefix) - k:] == root[len(root) - k:]:
            return True
    return False


def misplaced_skill_paths(command: str, skill_files: frozenset[str],
                          skill_roots: tuple[str, ...]) -> list[str]:
    """Words of ``command`` that name one of the skill's files under a folder that is not
    the skill copy (another runtime's skills folder): where the command looked, the skill
    was not."""
    if not any(skill_roots):
        return []
    out = []
    for cmd in _simple_commands(command):
        for w in [*cmd.argv, *cmd.reads]:
            if as_skill_var(w).startswith(_SKILL_VAR):  # the copy, wherever it is
                continue
            parts = PurePosixPath(w.removeprefix("./")).parts
            for i in range(1, len(parts)):
                rel = "/".join(parts[i:])
                if "/" in rel and rel in skill_files:
                    if not _copy_prefix(parts[:i], skill_roots) and w not in out:
                        out.append(w)
                    break
    return out


def signatures(command: str, skill_files: frozenset[str],
               skill_roots: tuple[str, ...] = ()) -> list[Signature]:
    """The signature of every simple command in ``command`` that runs a skill file (script
    files only: documentation files are read, not run). The file is the program, or the
    script an interpreter is given, once the wrappers are skipped (``timeout 60``, ``env
    A=1``, ``nice -n 5``, ``exec``, ``command``, ``uv run``, a ``VAR=value`` prefix); the
    commands of a pipeline or list, and those inside ``bash -c '...'``, count one by one. A
    file that is only an argument (``cat run.sh``, ``shellcheck run.sh``) was not run."""
    out = []
    for cmd in _simple_commands(command):
        script, rest = cmd.script()
        rel = _skill_path(script, skill_files, skill_roots) if script else None
        if rel is None or rel.endswith(_NOT_RUN):
            continue
        action = None
        if rest and not rest[0].startswith("-") and _ACTION.match(rest[0]):
            action = rest[0]
        flags = frozenset(r.split("=", 1)[0] for r in rest
                          if r.startswith("-") and len(r) > 1 and r != "--")
        out.append(Signature(rel, action, flags))
    return out


def skill_files(skill_dir: Path, limit: int = 5000) -> frozenset[str]:
    """Relative paths of the skill's regular files (symlinks not followed; at most ``limit``)."""
    out: set[str] = set()
    root = Path(skill_dir)
    for d, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [x for x in dirs if x not in (".git", "node_modules", "__pycache__")]
        for f in files:
            p = Path(d) / f
            if p.is_file() and not p.is_symlink():
                out.add(p.relative_to(root).as_posix())
            if len(out) >= limit:
                return frozenset(out)
    return frozenset(out)


def documented_commands(skill_md: str, steps: list[str]) -> list[str]:
    """Shell commands a skill documents: SKILL.md's fenced shell blocks (indented ones in list
    items too, console sessions without their ``$`` prompts) and inline code spans, and the
    contract's steps."""
    fences, prose = markdown.parse(skill_md)
    found = []
    for f in fences:
        if f.shell or f.lang in ("console", "terminal", ""):
            found.append("\n".join(re.sub(r"^\s*\$ ", "", ln) for ln in f.code.splitlines()))
    # an inline span is a command when it has arguments (`scripts/run.py` alone names a file)
    found += [s.text for s in markdown.inline_code(prose) if len(s.text.split()) > 1]
    return [*found, *steps]


def documented_signatures(skill_md: str, steps: list[str], skill_files: frozenset[str]
                          ) -> list[Signature]:
    out: list[Signature] = []
    for cmd in documented_commands(skill_md, steps):
        for sig in signatures(cmd, skill_files):
            if sig not in out:
                out.append(sig)
    return out


def matches(call: Signature, documented: list[Signature]) -> Signature | None:
    """The documented command a call runs: same file, same action, flags all documented."""
    for d in documented:
        if d.file == call.file and d.action == call.action and call.flags <= d.flags:
            return d
    return None


def _command(call: ToolCallEvent) -> str | None:
    command = call.input.get("command") or call.input.get("cmd")
    if isinstance(command, list):
        command = shlex.join(str(c) for c in command)
    return command if isinstance(command, str) else None


def agent_errors(events: list[Event], skill_files: frozenset[str],
                 skill_roots: tuple[str, ...] = ()) -> dict[int, str]:
    """Failed tool calls that are the agent's error, by their tool_result's seq, with the
    reason as a person reads it: the runtime refused the call (it never ran), or the command
    named the skill's files where this runtime does not put them."""
    calls = calls_by_id(events)
    out: dict[int, str] = {}
    copy = next((r for r in skill_roots[1:] if r), skill_roots[0] if skill_roots else "")
    for e in events:
        if not isinstance(e, ToolResultEvent) or e.ok:
            continue
        if e.refused:
            out[e.seq] = f"refused by the runtime ({REFUSALS[e.refused]}): it never ran"
            continue
        call = calls.get(e.call_id)
        command = _command(call) if isinstance(call, ToolCallEvent) else None
        wrong = misplaced_skill_paths(command, skill_files, skill_roots) if command else []
        if wrong:
            out[e.seq] = (f"names {wrong[0]}, not in this runtime's skill copy ({copy}/): "
                          "the agent's path, the skill never ran")
    return out


def failed_documented_calls(events: list[Event], documented: list[Signature],
                            skill_files: frozenset[str], skill_roots: tuple[str, ...] = ()
                            ) -> list[DocumentedFailure]:
    """Every failed shell tool call of the run that ran a documented command: the runtime
    ran it (not refused) and it ran the skill's own file (the copy, not a path in another
    runtime's folder)."""
    if not documented:
        return []
    calls = calls_by_id(events)
    out = []
    for e in events:
        if not isinstance(e, ToolResultEvent) or e.ok or e.refused:
            continue
        call = calls.get(e.call_id)
        if not isinstance(call, ToolCallEvent):
            continue
        command = _command(call)
        if command is None:
            continue
        for sig in signatures(command, skill_files, skill_roots):
            doc = matches(sig, documented)
            if doc is not None:
                out.append(DocumentedFailure(
                    seq=e.seq, call_seq=call.seq, command=command[:300], signature=str(doc),
                    exit_code=e.exit_code, excerpt=e.output.strip()[-400:]))
                break
    return out
