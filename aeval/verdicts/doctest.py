"""The doc-test tier: which SKILL.md shell blocks to run, and what a failed block proves.

Real SKILL.md files are partly illustrative: blocks with placeholders (``<file>``,
``{name}``, ``YOUR_API_KEY``, a bare ``...``), console sessions, examples of what not to do,
installs of host software, commands that need a tool the reader installs. A gate is only
useful if `fail` means "this skill is broken", so a doc test fails only on a block that ran
and broke in the skill's *own* code or interface:

- the block ran a file of the skill that is missing, not executable, or whose interpreter
  line is unusable;
- the skill's own file, run with the documented arguments, exited non-zero while the
  environment was complete (no missing module or host tool, every input it names present,
  no sign of a missing network or credential), whatever the wording of its rejection;
- a Python traceback raised in a file of the skill; an argparse rejection ("invalid choice",
  "unrecognized arguments") by a script of the skill.

A missing host command or module ("command not found", "No module named X") leaves the case
`untested: needs X` unless the contract declares X. Anything else is inconclusive.

**Taint by dependency, not by order.** A failure is discounted (``not_evidence``) only when
the block needs what a block that did not run cleanly (skipped, inconclusive, needing a tool,
timed out) would have produced: a file it reads that such a block creates or names, a
variable that block sets, or the folder a block ``cd``'d into (blocks run one by one from the
skill folder, while a reader's shell would have stayed where any earlier block went). A block
whose own skill file is missing, not executable or rejects its documented arguments fails
whatever came before, unless an earlier block would have made that very file.

Pure: no processes here. ``adapters/runtimes/literal.py`` runs the blocks and folds the outcomes
with `summarize`.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Literal

from aeval.skill.shellparse import (
    Command,
    Effects,
    as_skill_var,
    commands,
    effects,
    norm,
    path_like,
    related,
    skill_root_rest,
)

# ---- placeholders ---------------------------------------------------------------------------

_PLACEHOLDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![<\w])<[A-Za-z_][\w./:-]*>"), "angle-bracket placeholder"),
    (re.compile(r"(?<![$\w])\{[A-Za-z_][\w-]*\}"), "brace placeholder"),
    (re.compile(r"\$?\{?\bYOUR_[A-Z0-9_]+\b|\byour[-_](?:api[-_])?(?:key|token|[a-z]+)\b"),
     "YOUR_... placeholder"),
    (re.compile(r"\[\.\.\.\]|\[(?:options?|args?|arguments?|flags?)\]|\[[A-Z]{2,}[A-Z_ -]*\]",
                re.I), "[...] placeholder"),
    (re.compile(r"(?:^|[\s(,=])(?:\.\.\.|…)(?=$|[\s),])", re.M), "bare ellipsis"),
    (re.compile(r"(?<![\w/.-])(?:/)?path/to/[\w./-]*"), "path/to/ placeholder"),
)
# a block shown as what NOT to do: the prose just before it, or a comment inside it, says so
_BAD_PROSE = re.compile(
    r"(?:^|\n)\W{0,6}(?:\*\*|__)?(?:bad|wrong|incorrect|don'?t|do not|avoid|never|"
    r"anti-?pattern|not this|instead of)\b[^\n]{0,60}$|[❌✗✘🚫⛔]", re.I)
_BAD_COMMENT = re.compile(r"^\s*#\s*(?:[❌✗✘🚫⛔]|(?:bad|wrong|incorrect|don'?t|do not|avoid|"
                          r"never)\b)", re.I | re.M)


@dataclass(frozen=True)
class DocBlock:
    """A SKILL.md shell block as the doc test gets it: the SKILL.md line of its first line of
    code (0: unknown), its code, and the prose before it."""

    line: int
    code: str
    before: str = ""


@dataclass(frozen=True)
class BlockPlan:
    """One SKILL.md shell block and whether the doc test runs it."""

    line: int
    code: str
    action: Literal["run", "skip"]
    reason: str | None = None
    taints: bool = True  # what a skipped block would have produced may be missing later
    effects: Effects = field(default_factory=Effects, compare=False, repr=False)


_INSTALL = re.compile(
    r"^\s*(?:sudo\s+)?(?:(?:python3?\s+-m\s+)?pip3?|uv\s+pip|uv\s+tool|pipx|npm|pnpm|yarn|"
    r"apt(?:-get)?|brew|conda|mamba|gem|cargo|go|apk|dnf|yum|choco|winget|scoop)\s+"
    r"(?:-\S+\s+)*(?:install|add|i)\b")
_CONSOLE = re.compile(r"^\s*[$>] \S", re.M)


_PROBES = frozenset({"--version", "-v", "-V", "version", "--help", "-h"})
_LOOKUPS = frozenset({"which", "type", "hash", "whereis"})


def _probe(argv: list[str]) -> bool:
    """``X --version``, ``X -v``, ``which X``, ``command -v X``, ``type X``: a look at an
    installed program (on PATH: no path, no file of the skill), nothing else run."""
    if len(argv) == 2 and "/" not in argv[0] and argv[1] in _PROBES:
        return True
    if len(argv) >= 2 and argv[0] in _LOOKUPS:
        return all("/" not in a for a in argv[1:])
    return len(argv) >= 3 and argv[0] == "command" and argv[1] in ("-v", "-V")


def _install_step(code: str) -> str | None:
    """The skip reason when a block installs host software and probes what is then on
    PATH (``npm install -g X && X --version``, ``pip install X`` then ``which X``): an
    install step, whatever its lines look like. None for any other block."""
    installed: list[str] = []
    probed = False
    for cmd in commands(code):
        argv = cmd.target_argv()
        if not argv:
            return None
        if _INSTALL.match(" ".join(cmd.argv)):
            verb = next((i for i, a in enumerate(argv) if a in ("install", "add", "i")), 0)
            installed += [a for a in argv[verb + 1:] if not a.startswith("-")]
        elif _probe(argv) or (argv[0] in ("head", "echo") and cmd.piped):
            probed = True
        else:
            return None
    if not installed or not probed:
        return None  # installs alone: the plain install skip says so
    what = ", ".join(installed[:3]) + (" ..." if len(installed) > 3 else "")
    return (f"an install step (installs {what} and checks it is there): installing host "
            "software is the case's setup")


def _commands(code: str) -> list[str]:
    """The command lines of a block (comments and blank lines dropped)."""
    return [ln for ln in code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def placeholder(code: str) -> str | None:
    """Why ``code`` is illustrative rather than runnable (None when it looks runnable). The
    skill folder's spellings (``{baseDir}``, ``${CLAUDE_SKILL_DIR}``) are no placeholders."""
    code = as_skill_var(code)
    for rx, what in _PLACEHOLDERS:
        m = rx.search(code)
        if m:
            return f"{what} {m.group(0).strip()!r}"
    return None


def doc_blocks(fences: list, steps: list[str]) -> list[DocBlock]:
    """Each step with the SKILL.md block it came from (``fences``: `aeval.skill.markdown.Fence`s):
    the first block not yet used with the same code; line 0 when a step is no block's."""
    used: set[int] = set()
    out = []
    for code in steps:
        match = next((i for i, f in enumerate(fences) if i not in used and f.shell
                      and f.code.strip() == code.strip()), None)
        if match is None:
            out.append(DocBlock(0, code))
            continue
        used.add(match)
        f = fences[match]
        lead = len(f.code) - len(f.code.lstrip("\n"))  # blank lines the step lost
        out.append(DocBlock(f.line + 1 + f.code[:lead].count("\n"), code, f.before))
    return out


def _block(b: DocBlock | tuple) -> DocBlock:
    return b if isinstance(b, DocBlock) else DocBlock(*b)


def plan_blocks(blocks: list[DocBlock] | list[tuple[int, str]]) -> list[BlockPlan]:
    """Classify the blocks: ``skip`` with the reason, or ``run``; each with its effects."""
    out = []
    for b in map(_block, blocks):
        line, code = b.line, b.code
        commands_ = _commands(code)
        why = placeholder(code)
        eff = effects(code)
        if not commands_:
            plan = BlockPlan(line, code, "skip", "no command (comments only)", taints=False)
        elif _CONSOLE.search(code):
            plan = BlockPlan(line, code, "skip",
                             "a console session ('$ ' prompts mixed with output)")
        elif counter_example(code, b.before):
            plan = BlockPlan(line, code, "skip", "an example of what not to do", taints=False)
        elif why:
            plan = BlockPlan(line, code, "skip", f"placeholder: {why}")
        elif (step := _install_step(code)) is not None:
            plan = BlockPlan(line, code, "skip", step, taints=False)
        elif all(_INSTALL.match(c) for c in commands_):
            # Installing host software is the environment's job (the case's `setup`), and a
            # doc test must not change the machine it runs on. A later block that lacks what
            # this installs is diagnosed `needs X` by itself, so the skip taints nothing.
            plan = BlockPlan(line, code, "skip", "installs host software (declare it in "
                                                 "the case's setup)", taints=False)
        else:
            plan = BlockPlan(line, code, "run")
        out.append(BlockPlan(plan.line, plan.code, plan.action, plan.reason, plan.taints, eff))
    return out


# ---- the skill's own files ------------------------------------------------------------------

# the folders skills keep their files in: a path under one names the skill's own file even
# when the whole folder is gone (`dist/`, `bin/`, `node_modules/` are the reader's project)
SKILL_FOLDERS = frozenset({"scripts", "references", "reference", "assets", "templates"})
SCRIPT_EXT = (".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php",
              ".R", ".lua", ".ps1")


def own_file(word: str, skill_dir: Path, names: tuple[str, ...] = ()) -> str | None:
    """The skill-relative path a command word names as a file of the skill itself, whether or
    not it exists: ``$SKILL_DIR/x`` (or any spelling of the skill folder, see
    `aeval.skill.shellparse.as_skill_var`: ``{baseDir}/x``, ``/mnt/skills/user/<name>/x``);
    a path through a folder named after the skill
    (``.claude/skills/<name>/x``, ``~/skills/<name>/x``); a relative path that exists in the
    skill, or starts in one of its folders or in `SKILL_FOLDERS` (``scripts/x.py``); a bare
    ``x.py`` when the skill keeps other such files at its root. None for a word that names no
    file of the skill (a program on PATH, ``./node_modules/.bin/x``, ``dist/index.js`` or
    ``bin/rails`` of the reader's project, an absolute path elsewhere, a path above it)."""
    w = word.strip()
    if not w or "://" in w or w.startswith("-"):
        return None
    rest = skill_root_rest(w, names)
    direct = bool(rest)
    w = rest if rest else w
    if "$" in w or any(c in w for c in "*?[]{}<>`"):
        return None
    parts = PurePosixPath(w).parts
    for name in names:  # `.claude/skills/pdf/scripts/x.py`, `/mnt/skills/pdf/scripts/x.py`
        if name in parts[:-1]:
            rest = parts[len(parts) - 1 - parts[::-1].index(name) + 1:]
            if rest:
                return "/".join(rest)
    if w.startswith(("/", "~")):
        return None
    rel = norm(w)
    if rel == "." or ".." in PurePosixPath(rel).parts:
        return None
    suffix = PurePosixPath(rel).suffix
    if direct or os.path.lexists(skill_dir / rel):
        return rel
    if "/" in rel:  # in one of the skill's folders, or in one a skill keeps scripts in
        first = rel.split("/", 1)[0]
        return rel if first in _top(skill_dir) or first in SKILL_FOLDERS else None
    if suffix in SCRIPT_EXT and any(PurePosixPath(n).suffix == suffix
                                    for n in _top(skill_dir, files=True)):
        return rel
    return None


def _top(skill_dir: Path, files: bool = False) -> set[str]:
    """The names of the skill folder's entries: its folders, or its files."""
    try:
        with os.scandir(skill_dir) as it:
            return {e.name for e in it if (e.is_file(follow_symlinks=False) if files
                                           else e.is_dir(follow_symlinks=False))}
    except OSError:
        return set()


def counter_example(code: str, before: str = "") -> bool:
    """A block shown as what not to do: a comment inside it, or the prose just before it."""
    return bool(_BAD_COMMENT.search(code) or _BAD_PROSE.search(before.strip()))


# ---- diagnosis of a failed block ------------------------------------------------------------

Kind = Literal["missing_tool", "defect", "inconclusive"]
_CMD_NOT_FOUND = re.compile(
    r"^(?:\S*(?:bash|sh|zsh|dash)(?::| -c:)? (?:line )?\d*:? ?)?([\w.+-]+): "
    r"(?:command )?not found\s*$", re.M)
_NO_MODULE = re.compile(r"No module named '?([A-Za-z_][\w.]*)'?")
_NODE_NO_MODULE = re.compile(r"Error: Cannot find (?:module|package) '([^'./][^']*)'")
# a program a script starts that is not installed: node, ruby, go
_NO_PROGRAM = re.compile(r"\bspawn(?:Sync)? ([\w.+-]+) ENOENT\b|"
                         r"Errno::ENOENT: No such file or directory - ([\w.+-]+)\b|"
                         r"exec: \"([\w.+-]+)\": executable file not found")
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.M)
_EXC_LINE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt|KeyError)\b.*)$", re.M)
_ARGPARSE = re.compile(r"^(?:usage: )?([\w.-]+): error: (argument [^\n]*invalid choice[^\n]*|"
                       r"unrecognized arguments[^\n]*)$", re.M)
_NO_FILE = re.compile(r"(?:can't open file|No such file or directory|not found|"
                      r"Cannot find module|does not exist)", re.I)
_OS_ERRORS = ("FileNotFoundError", "IsADirectoryError", "NotADirectoryError",
              "PermissionError", "FileExistsError")
# the environment, not the skill: no network, no credential, no display, no service
_ENVIRONMENT = re.compile(
    r"api[_ -]?key|\btoken\b|credential|not (?:set|configured)|environment variable|"
    r"\bauth|login|unauthori[sz]ed|forbidden|\b40[13]\b|\b429\b|\b5\d\d\b|rate.?limit|"
    r"connect|network|unreachable|resolve|\bdns\b|name or service|timed? ?out|ssl|certificate|"
    r"proxy|socket|\bhttps?://|\bdisplay\b|x11|wayland|\bgpu\b|cuda|docker|daemon|"
    r"out of memory|killed|no space left|read-only file system|interrupted", re.I)
_REJECTION = re.compile(
    r"usage:|unknown|unrecogni[sz]ed|invalid|not (?:a )?(?:valid|supported|recogni[sz]ed)|"
    r"unsupported|no such (?:command|action|option|subcommand|mode)|expected one of|"
    r"choose from|must be one of|unexpected (?:argument|option)|too (?:many|few) arguments|"
    r"requires? (?:an? )?(?:argument|action|command)", re.I)


@dataclass(frozen=True)
class Diagnosis:
    """What a failed block says about the skill. ``file``: the skill file a defect is about
    (an own-file defect fails whatever came before, unless an earlier block made that file)."""

    kind: Kind
    reason: str
    tool: str | None = None
    file: str | None = None
    # an own-file defect: "file" the skill file is missing or cannot start; "rejected" it ran
    # with the documented arguments and said no
    own: Literal["file", "rejected"] | None = None
    at: int | None = None  # the failing command's line in the block (0-based), when known


def _skill_paths(code: str, skill_dir: Path, names: tuple[str, ...] = ()) -> list[str]:
    """Words of the block that name a file of the skill: a script path, or a path under one of
    the skill's own top-level folders, relative to the skill folder."""
    top = set()
    if skill_dir.is_dir():
        try:
            top = {p.name for p in skill_dir.iterdir() if p.is_dir()}
        except OSError:
            top = set()
    out = []
    for cmd in commands(code):
        for w in [*cmd.argv, *cmd.reads]:
            rel = own_file(w, skill_dir, names)
            if rel is None:
                continue
            p = PurePosixPath(rel)
            if p.suffix in SCRIPT_EXT or (len(p.parts) > 1 and p.parts[0] in top):
                out.append(rel)
    return out


def _frames_in_skill(output: str, skill_dir: Path) -> list[tuple[str, int]]:
    root = skill_dir.resolve()
    frames = []
    for path, line in _FRAME.findall(output):
        p = Path(path)
        try:
            full = (p if p.is_absolute() else skill_dir / p).resolve()
        except (OSError, RuntimeError):
            continue
        if full.is_relative_to(root) and full.is_file():
            frames.append((full.relative_to(root).as_posix(), int(line)))
    return frames


def _missing(output: str, skill_dir: Path, declared: frozenset[str] | set[str]
             ) -> Diagnosis | None:
    """`needs X` when the output says a module or command is not installed."""
    m = _NO_MODULE.search(output) or _NODE_NO_MODULE.search(output)
    missing = m.group(1).split(".")[0] if m else None
    if missing is None:
        cm = _CMD_NOT_FOUND.search(output)
        if cm:
            missing = cm.group(1)
    if missing is None:
        pm = _NO_PROGRAM.search(output)
        if pm:
            missing = next(g for g in pm.groups() if g)
    if missing is None or (skill_dir / missing).exists() \
            or (skill_dir / f"{missing}.py").exists():
        return None
    if m is not None and m.re is _NO_MODULE:
        near = _near_own_module(missing, output, skill_dir)
        if near is not None:
            return near
    if missing in declared:
        return Diagnosis("inconclusive", f"declared host tool {missing} is missing", missing)
    return Diagnosis("missing_tool", f"needs {missing}", missing)


_MAX_OWN_ENTRIES = 10_000  # a skill folder's entries read for its module names


def _own_modules(skill_dir: Path) -> dict[str, str]:
    """The Python modules the skill ships: each ``.py`` file's stem and each package folder
    (one with ``__init__.py``), with the first path of that name. Bounded in entries read;
    symlinks are not followed; dot-folders and caches are skipped."""
    found: dict[str, str] = {}
    seen = 0
    stack = [skill_dir]
    while stack and seen < _MAX_OWN_ENTRIES:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            seen += 1
            if e.name.startswith(".") or e.name in ("__pycache__", "node_modules"):
                continue
            rel = Path(e.path).relative_to(skill_dir).as_posix()
            if e.is_dir(follow_symlinks=False):
                if os.path.isfile(os.path.join(e.path, "__init__.py")):
                    found.setdefault(e.name, rel + "/")
                stack.append(Path(e.path))
            elif e.name.endswith(".py") and e.is_file(follow_symlinks=False):
                found.setdefault(e.name[:-3], rel)
    return found


def _near_own_module(missing: str, output: str, skill_dir: Path) -> Diagnosis | None:
    """A defect when the module Python could not find is a near miss (difflib ratio >= 0.85)
    of one the skill ships, and the import is in the skill's own file: ``import wordcountr``
    beside ``wordcounter.py`` is the skill's typo, not a module the reader installs. A plural
    of the skill's module (``requests`` beside ``request.py``) is not a near miss: that is
    usually a real package of its own."""
    frames = _frames_in_skill(output, skill_dir)
    if not frames or len(missing) < 4:
        return None
    own = _own_modules(skill_dir)
    if missing in own:
        return None  # the skill has it, the import path is the problem: not a typo
    close = [n for n in difflib.get_close_matches(missing, list(own), n=3, cutoff=0.85)
             if missing not in (n + "s", n + "es") and n not in (missing + "s", missing + "es")]
    if not close:
        return None
    file, line = frames[-1]
    return Diagnosis("defect", f"the skill's {file}:{line} imports {missing}, which is not "
                               f"installed, and the skill ships {close[0]} ({own[close[0]]}): "
                               "a misspelled import of the skill's own module", file=file)


# bash's own report of a script it cannot parse: `scripts/x.sh: line 7: syntax error near
# unexpected token `fi'`, `/abs/x.sh: line 9: syntax error: unexpected end of file`
_SHELL_SYNTAX = re.compile(r"^(?P<path>[^\n:]{1,4096}): line (?P<line>\d{1,9}): "
                           r"(?P<msg>syntax error[^\n]{0,300})$", re.M)


def _shell_syntax_error(output: str, skill_dir: Path) -> Diagnosis | None:
    """A defect when bash could not parse a shell script of the skill (its message names
    the file and line): the skill's code, never the environment (bash's word "token" is
    no credential)."""
    root = skill_dir.resolve()
    for m in _SHELL_SYNTAX.finditer(output):
        p = Path(m.group("path").strip())
        try:
            full = (p if p.is_absolute() else skill_dir / p).resolve()
        except (OSError, RuntimeError):
            continue
        if full.is_relative_to(root) and full.is_file():
            rel = full.relative_to(root).as_posix()
            return Diagnosis("defect", f"bash cannot parse the skill's {rel}: line "
                                       f"{m.group('line')}: {m.group('msg')}", file=rel,
                             own="file")
    return None


def _last_line(output: str) -> str:
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "no output"


def _interpreter_problem(path: Path) -> str | None:
    """Why a file run directly cannot start (None when its first line is usable)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    first = head.split(b"\n", 1)[0]
    if not first.startswith(b"#!"):
        return None if path.suffix in (".sh", ".bash", "") else "it has no interpreter line (#!)"
    if first.endswith(b"\r"):
        return "its interpreter line ends with a carriage return (CRLF line endings)"
    interp = first[2:].strip().split(b" ")[0]
    if not interp.startswith(b"/"):
        return f"its interpreter line names a relative program {interp.decode(errors='replace')!r}"
    return None


def _own_command(cmd: Command, skill_dir: Path, names: tuple[str, ...]) -> tuple[str, list[str],
                                                                                  bool] | None:
    """(skill file, its arguments, run directly) when ``cmd`` runs a file of the skill."""
    script, args = cmd.script()
    if script is None:
        return None
    rel = own_file(script, skill_dir, names)
    if rel is None:
        return None
    return rel, args, cmd.runs_directly()


def _inputs_missing(args: list[str], skill_dir: Path, block: Effects) -> list[str]:
    """The path-like arguments that name nothing that exists (inputs the reader supplies),
    the block's own outputs aside."""
    out = []
    for a in args:
        value = a.split("=", 1)[1] if a.startswith("--") and "=" in a else a
        if not path_like(value) or any(related(norm(value), w) for w in block.writes):
            continue
        p = norm(value)
        if not (Path(p) if p.startswith("/") else skill_dir / p).exists():
            out.append(value)
    return out


def _shebang_program(path: Path) -> str | None:
    """The program a file's interpreter line starts (``#!/usr/bin/env node`` -> node)."""
    try:
        with open(path, "rb") as fh:
            first = fh.read(256).split(b"\n", 1)[0].decode(errors="replace")
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if not words:
        return None
    if PurePosixPath(words[0]).name == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        return rest[0] if rest else None
    return PurePosixPath(words[0]).name


def _documented_words(args: list[str]) -> list[str]:
    """The words of a documented invocation a script can reject: its action, its flags."""
    words = [a.split("=", 1)[0] for a in args if a.startswith("-") and len(a) > 1]
    if args and not args[0].startswith("-") and re.fullmatch(r"[A-Za-z][\w:-]{0,63}", args[0]):
        words.insert(0, args[0])
    return words


def diagnose_own(rel: str, args: list[str], direct: bool, exit_code: int | None, output: str,
                 skill_dir: Path, block: Effects, declared: frozenset[str] | set[str]
                 ) -> Diagnosis | None:
    """The diagnosis when the failing command ran the skill's own file ``rel`` (None: let the
    general rules decide)."""
    path = skill_dir / rel
    if not path.exists() and not path.is_symlink():
        return Diagnosis("defect", f"SKILL.md runs {rel}, which the skill does not have",
                         file=rel, own="file")
    if direct and path.is_file():
        mode = path.lstat().st_mode if not path.is_symlink() else path.stat().st_mode
        if not mode & 0o111:
            return Diagnosis("defect", f"SKILL.md runs {rel} directly, but it is not executable "
                                       f"(mode {mode & 0o777:o})", file=rel, own="file")
        problem = _interpreter_problem(path)
        if problem is not None and (exit_code in (126, 127, 2) or "bad interpreter" in output):
            return Diagnosis("defect", f"SKILL.md runs {rel} directly, but {problem}", file=rel,
                             own="file")
        program = _shebang_program(path)
        if problem is None and program and exit_code in (126, 127) and (
                "bad interpreter" in output or program in output):
            if program in declared:
                return Diagnosis("inconclusive", f"declared host tool {program} is missing",
                                 program)
            return Diagnosis("missing_tool", f"needs {program}", program)
    if exit_code is None or exit_code > 128:
        return None  # killed (a timeout, a signal): not the skill's answer
    syntax = _shell_syntax_error(output, skill_dir)
    if syntax is not None:
        return syntax
    missing = _missing(output, skill_dir, declared)
    if missing is not None:
        return missing
    frames = _frames_in_skill(output, skill_dir)
    if frames:
        return None  # a traceback: the general rules read it
    for am in _ARGPARSE.finditer(output):
        if am.group(1) == PurePosixPath(rel).name:
            return Diagnosis("defect", f"the skill's {am.group(1)} rejects what SKILL.md "
                                       f"documents: {am.group(2)}", file=rel, own="rejected")
    words = _documented_words(args)
    rejection = _REJECTION.search(output)
    named = [w for w in words if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", output)]
    if rejection and named:
        return Diagnosis("defect", f"the skill's {rel} rejects the documented {named[0]!r}: "
                                   f"{_last_line(output)}", file=rel, own="rejected")
    if _ENVIRONMENT.search(output):
        return Diagnosis("inconclusive", f"{rel} exited {exit_code}; the environment looks "
                                         f"incomplete: {_last_line(output)}")
    inputs = _inputs_missing(args, skill_dir, block)
    if inputs:
        return Diagnosis("inconclusive", f"{rel} exited {exit_code}; it needs an input the "
                                         f"reader supplies: {inputs[0]}")
    if block.uses:
        return Diagnosis("inconclusive", f"{rel} exited {exit_code}; the block uses "
                                         f"${sorted(block.uses)[0]}, which the reader sets")
    shown = " ".join(args)[:120]
    return Diagnosis("defect", f"the skill's {rel} exited {exit_code} with the documented "
                               f"arguments `{shown}`: {_last_line(output)}", file=rel,
                     own="rejected")


def diagnose(code: str, exit_code: int | None, output: str, skill_dir: Path,
             declared: frozenset[str] | set[str] = frozenset(), failed: str | None = None,
             names: tuple[str, ...] = ()) -> Diagnosis:
    """Classify a failed block from its exit code and output (see `_diagnose`); ``at`` is the
    line of the command that failed when bash named it."""
    d = _diagnose(code, exit_code, output, skill_dir, declared, failed, names)
    if d.at is None and failed is not None:
        named = commands(failed)
        at = next((c.line for c in commands(code) if named and c.argv == named[0].argv), None)
        d = replace(d, at=at)
    return d


def _diagnose(code: str, exit_code: int | None, output: str, skill_dir: Path,
              declared: frozenset[str] | set[str] = frozenset(), failed: str | None = None,
              names: tuple[str, ...] = ()) -> Diagnosis:
    """Classify a failed block from its exit code and output.

    ``failed``: the simple command that failed, as bash reported it (the doc test's ERR
    trap); without it, the block's only command that runs a skill file stands for it.
    ``declared``: host tools the contract declares (a missing declared tool is
    inconclusive: the environment lacks what it promised). ``names``: the skill's folder
    names (paths through them point into the skill).
    """
    block = effects(code)
    for m in _REDIRECT_FAILED.finditer(output):
        target = norm(m.group("path"))
        if target in block.writes:  # the shell could not open it: the command never ran
            folder = PurePosixPath(target).parent
            return Diagnosis("inconclusive", f"the block writes {target}, and the folder "
                                             f"{folder}/ it writes into is not here (the "
                                             "reader's workspace has it)")
    if failed is not None:
        suspects = commands(failed)
        group = [c for c in commands(code) if c.piped and any(
            c.argv == s.argv for s in suspects)]
        if group:  # a pipeline: bash names its last command, any of them may have failed
            pipe = group[0].pipeline
            suspects += [c for c in commands(code) if c.pipeline == pipe]
    else:
        suspects = [c for c in commands(code) if c.script()[0] is not None]
        suspects = suspects if len(suspects) == 1 else []
    in_block = commands(code)
    for cmd in suspects:
        own = _own_command(cmd, skill_dir, names)
        if own is not None:
            d = diagnose_own(*own, exit_code, output, skill_dir, block, declared)
            if d is not None:
                at = next((c.line for c in in_block if c.argv == cmd.argv), None)
                return replace(d, at=at)
            break

    syntax = _shell_syntax_error(output, skill_dir)
    if syntax is not None:
        return syntax
    missing = _missing(output, skill_dir, declared)
    if missing is not None:
        return missing
    frames = _frames_in_skill(output, skill_dir)
    if frames:
        excs = _EXC_LINE.findall(output)
        exc = excs[-1].strip() if excs else "an exception"
        file, line = frames[-1]
        if exc.split(":")[0].split(".")[-1] in _OS_ERRORS and not _names_skill_file(
                exc, skill_dir):
            tool = _bare_command(exc)
            if tool is not None:  # subprocess.run(["soffice", ...]) in a skill script
                if tool in declared:
                    return Diagnosis("inconclusive", f"declared host tool {tool} is missing",
                                     tool)
                return Diagnosis("missing_tool", f"needs {tool}", tool)
            return Diagnosis("inconclusive", f"{exc} (an input the block expects is missing)")
        return Diagnosis("defect", f"{exc} raised in the skill's {file}:{line}", file=file)

    named = _skill_paths(code, skill_dir, names)
    for am in _ARGPARSE.finditer(output):
        prog, err = am.group(1), am.group(2)
        for p in named:
            if PurePosixPath(p).name == prog and (skill_dir / p).is_file():
                return Diagnosis("defect", f"the skill's {prog} rejects what SKILL.md "
                                           f"documents: {err}", file=p)
    for p in named:
        if not (skill_dir / p).exists() and PurePosixPath(p).name in output \
                and _NO_FILE.search(output):
            return Diagnosis("defect", f"SKILL.md runs {p}, which the skill does not have",
                             file=p)

    if exit_code == 127:
        return Diagnosis("missing_tool", "needs a command that is not installed (exit 127)")
    return Diagnosis("inconclusive", f"exited {exit_code}; not in the skill's own code")


_REDIRECT_FAILED = re.compile(
    r"^(?:\S*/)?(?:ba|da|z)?sh: (?:line \d+: |\d+: )?(?:cannot create )?(?P<path>[^:\n]+): "
    r"(?:No such file or directory|Directory nonexistent)$", re.M)
"""The shell's own message when a redirection cannot open its file (bash, dash)."""


def _bare_command(exc_line: str) -> str | None:
    """The program a skill script tried to start: ``FileNotFoundError: [Errno 2] No such file
    or directory: 'soffice'`` names a bare command (no folder, no extension)."""
    m = re.search(r"FileNotFoundError: \[Errno 2\] No such file or directory: '([\w+-]+)'$",
                  exc_line)
    return m.group(1) if m else None


def _names_skill_file(exc_line: str, skill_dir: Path) -> bool:
    """Whether an OSError line names a path inside the skill (a file the skill should have)."""
    for quoted in re.findall(r"'([^']+)'", exc_line):
        p = PurePosixPath(quoted)
        if not p.is_absolute() and ".." not in p.parts and len(p.parts) > 1 and \
                (skill_dir / p.parts[0]).is_dir():
            return True
        if p.is_absolute() and Path(quoted).is_relative_to(skill_dir.resolve()):
            return True
    return False


# ---- dependency between blocks --------------------------------------------------------------

def depends(needs: Effects, earlier: Effects, skill_files: frozenset[str] = frozenset(),
            own: Literal["file", "rejected"] | None = None, file: str | None = None
            ) -> str | None:
    """Why a block with ``needs`` may depend on an ``earlier`` block (None: it does not).

    ``own``/``file``: an own-file defect and its skill file. A block whose skill file is
    missing or cannot start (``file``) fails whatever came before, unless the earlier block
    would have made that very file; one whose file rejected its documented arguments
    (``rejected``) also when the earlier block set a variable it uses or exported one.
    Any other failure depends on an earlier block that would have made a path it names,
    set a variable it uses or exported one, or left the reader's shell in another folder.
    ``skill_files``: the skill's files before any block ran (an earlier block that merely
    reads one did not produce it)."""
    made = earlier.writes | {n for n in earlier.names if n not in skill_files}
    if file is not None:
        hit = next((m for m in sorted(made) if related(norm(file), m)), None)
        if hit is not None:
            return f"it would have made {hit}"
        if own == "file":
            return None
    shared = sorted(needs.uses & earlier.sets)
    if shared:
        return f"it sets ${shared[0]}"
    if earlier.exports:
        return f"it exports ${sorted(earlier.exports)[0]}"
    if own is not None:
        return None
    if earlier.cd is not None:
        return f"the reader's shell would be in {earlier.cd} after it"
    for n in sorted(needs.names | needs.runs):
        hit = next((m for m in sorted(made) if related(n, m)), None)
        if hit is not None:
            return f"it would have made {hit}"
    return None


# ---- folding the outcomes -------------------------------------------------------------------

Outcome = Literal["ok", "skipped", "missing_tool", "defect", "inconclusive", "timeout",
                  "not_evidence"]


@dataclass
class BlockOutcome:
    """What happened to one block."""

    line: int
    outcome: Outcome
    reason: str = ""
    tool: str | None = None
    evidence: str = ""


@dataclass
class DocTestSummary:
    """The doc test's verdict: a RunResult status and the text that explains it."""

    status: Literal["completed", "failed", "untested"]
    final_text: str
    outcomes: list[BlockOutcome] = field(default_factory=list)


def taints(plan: BlockPlan, outcome: BlockOutcome) -> bool:
    """Whether a later block that depends on this one stops being evidence: it did not run
    cleanly (skipped, when its skip takes something away; or failed in any way: a defect, a
    missing tool, inconclusive, a timeout, not evidence itself), or it ran and moved the
    reader's shell (``cd``)."""
    if outcome.outcome == "skipped":
        return plan.taints or plan.effects.cd is not None
    return outcome.outcome != "ok" or plan.effects.cd is not None


def discounted(plan: BlockPlan, d: Diagnosis,
               unclean: list[tuple[BlockPlan, BlockOutcome]], shipped: frozenset[str]
               ) -> str | None:
    """Why a block that failed with ``d`` is not evidence: it needs what an earlier block
    that taints (``unclean``, in order) would have left (None: the failure is evidence). A
    clean block's ``cd`` does not move the skill's own files."""
    for earlier, outcome in unclean:
        if outcome.outcome == "ok" and d.own is not None:
            continue
        why = depends(plan.effects, earlier.effects, shipped, d.own, d.file if d.own else None)
        if why is not None:
            return f"may depend on line {earlier.line} ({outcome.outcome}: {why})"
    return None


def summarize(outcomes: list[BlockOutcome]) -> DocTestSummary:
    """defect > needs X > something ran > nothing self-contained."""
    defects = [o for o in outcomes if o.outcome == "defect"]
    if defects:
        first = defects[0]
        text = "; ".join(f"SKILL.md line {d.line}: {d.reason}" for d in defects[:3])
        if len(defects) > 3:
            text += f"; and {len(defects) - 3} more"
        if first.evidence:
            text += f"\n{first.evidence}"
        return DocTestSummary("failed", text, outcomes)
    needs = list(dict.fromkeys(o.tool or "an uninstalled command" for o in outcomes
                               if o.outcome == "missing_tool"))
    if needs:
        return DocTestSummary("untested", "needs " + ", ".join(needs), outcomes)
    ran = [o for o in outcomes if o.outcome == "ok"]
    others = [o for o in outcomes if o.outcome != "ok"]
    notes = "; ".join(f"line {o.line}: {o.outcome} ({o.reason})" for o in others)
    if not ran:
        return DocTestSummary("untested", "no self-contained block" + (f": {notes}" if notes
                                                                        else ""), outcomes)
    text = f"{len(ran)} of {len(outcomes)} documented block(s) ran without a skill defect"
    return DocTestSummary("completed", text + (f"; {notes}" if notes else ""), outcomes)


def doc_test_verdict(run_status: str, final_text: str) -> tuple[str, str]:
    """The case status and reason of a doc-test case under `literal`, from its RunResult.

    ``completed`` -> pass; ``failed`` (a skill defect) -> fail, the evidence as reason;
    ``untested`` -> untested (never counted as a pass); a timeout or anything else -> error
    (the environment stopped it; a retry may help). The structural assertions (the skill's
    own files modified, its static check) still turn any of these into fail.
    """
    if run_status == "completed":
        return "pass", f"doc test: {final_text}"
    if run_status == "failed":
        return "fail", f"doc test found a skill defect: {final_text}"
    if run_status == "untested":
        return "untested", final_text
    return "error", f"doc test {run_status}: {final_text}"
