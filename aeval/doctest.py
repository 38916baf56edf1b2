"""The doc-test tier: which SKILL.md shell blocks to run, and what a failed block proves.

Real SKILL.md files are partly illustrative: blocks with placeholders (``<file>``,
``{name}``, ``YOUR_API_KEY``, a bare ``...``), cleanup fragments that need earlier context
(``kill $VIEWER_PID``), commands that need a host tool the skill tells users to install.
A gate is only useful if `fail` means "this skill is broken", so a doc test fails only on
a block that ran and broke in the skill's *own* code or interface:

- a Python traceback raised in a file of the skill (not an input file the block names),
- an unknown action or flag of a skill script (argparse "invalid choice" /
  "unrecognized arguments" from a script of the skill),
- a file of the skill that the block names and that does not exist.

A missing host command or module (exit 127, "command not found", ModuleNotFoundError)
leaves the case `untested: needs X` unless the contract declares X. Anything else is
inconclusive. After a block that was skipped, needed a missing tool or failed
inconclusively, later failures are not evidence: they may depend on it.

Pure: no processes here. ``adapters/literal.py`` runs the blocks and folds the outcomes
with `summarize`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

# ---- placeholders ---------------------------------------------------------------------------

_PLACEHOLDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![<\w])<[A-Za-z_][\w./:-]*>"), "angle-bracket placeholder"),
    (re.compile(r"(?<![$\w])\{[A-Za-z_][\w-]*\}"), "brace placeholder"),
    (re.compile(r"\$?\{?\bYOUR_[A-Z0-9_]+\b|\byour[-_](?:api[-_])?(?:key|token|[a-z]+)\b"),
     "YOUR_... placeholder"),
    (re.compile(r"\[\.\.\.\]|\[(?:options?|args?|arguments?|flags?)\]|\[[A-Z]{2,}[A-Z_ -]*\]",
                re.I), "[...] placeholder"),
    (re.compile(r"(?:^|[\s(,=])(?:\.\.\.|…)(?=$|[\s),])", re.M), "bare ellipsis"),
)


@dataclass(frozen=True)
class BlockPlan:
    """One SKILL.md shell block and whether the doc test runs it."""

    line: int
    code: str
    action: Literal["run", "skip"]
    reason: str | None = None
    taints: bool = True  # a skipped block's absence may explain later failures


_INSTALL = re.compile(
    r"^\s*(?:sudo\s+)?(?:(?:python3?\s+-m\s+)?pip3?|uv\s+pip|pipx|npm|pnpm|yarn|apt(?:-get)?|"
    r"brew|conda|mamba|gem|cargo|go|apk|dnf|yum)\s+(?:-\S+\s+)*(?:install|add|i)\b")
_CONSOLE = re.compile(r"^\s*\$ \S", re.M)


def _commands(code: str) -> list[str]:
    """The command lines of a block (comments and blank lines dropped)."""
    return [ln for ln in code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def placeholder(code: str) -> str | None:
    """Why ``code`` is illustrative rather than runnable (None when it looks runnable)."""
    for rx, what in _PLACEHOLDERS:
        m = rx.search(code)
        if m:
            return f"{what} {m.group(0).strip()!r}"
    return None


def plan_blocks(blocks: list[tuple[int, str]]) -> list[BlockPlan]:
    """Classify ``(line, code)`` blocks: ``skip`` with the reason, or ``run``."""
    out = []
    for line, code in blocks:
        commands = _commands(code)
        why = placeholder(code)
        if not commands:
            out.append(BlockPlan(line, code, "skip", "no command (comments only)", taints=False))
        elif _CONSOLE.search(code):
            out.append(BlockPlan(line, code, "skip",
                                 "a console session ('$ ' prompts mixed with output)"))
        elif why:
            out.append(BlockPlan(line, code, "skip", f"placeholder: {why}"))
        elif all(_INSTALL.match(c) for c in commands):
            # Installing host software is the environment's job (the case's `setup`), and a
            # doc test must not change the machine it runs on. A later block that lacks what
            # this installs is diagnosed `needs X` by itself, so the skip taints nothing.
            out.append(BlockPlan(line, code, "skip", "installs host software (declare it in "
                                                     "the case's setup)", taints=False))
        else:
            out.append(BlockPlan(line, code, "run"))
    return out


# ---- diagnosis of a failed block ------------------------------------------------------------

Kind = Literal["missing_tool", "defect", "inconclusive"]
_CMD_NOT_FOUND = re.compile(
    r"^(?:\S*(?:bash|sh|zsh|dash)(?::| -c:)? (?:line )?\d*:? ?)?([\w.+-]+): "
    r"(?:command )?not found\s*$", re.M)
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
_NODE_NO_MODULE = re.compile(r"Error: Cannot find (?:module|package) '([^'./][^']*)'")
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)', re.M)
_EXC_LINE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt|KeyError)\b.*)$", re.M)
_ARGPARSE = re.compile(r"^(?:usage: )?([\w.-]+): error: (argument [^\n]*invalid choice[^\n]*|"
                       r"unrecognized arguments[^\n]*)$", re.M)
_NO_FILE = re.compile(r"(?:can't open file|No such file or directory|not found|"
                      r"Cannot find module|does not exist)", re.I)
_SCRIPT_EXT = (".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl")
_OS_ERRORS = ("FileNotFoundError", "IsADirectoryError", "NotADirectoryError",
              "PermissionError", "FileExistsError")


@dataclass(frozen=True)
class Diagnosis:
    """What a failed block says about the skill."""

    kind: Kind
    reason: str
    tool: str | None = None


def _skill_paths(code: str, skill_dir: Path) -> list[str]:
    """Words of the block that name a file of the skill: a script path, or a path under one of
    the skill's own top-level folders, relative to the skill folder (``$SKILL_DIR/`` and
    ``./`` prefixes removed)."""
    try:
        words = shlex.split(code, comments=True)
    except ValueError:
        words = code.split()
    top = {p.name for p in skill_dir.iterdir() if p.is_dir()} if skill_dir.is_dir() else set()
    out = []
    for w in words:
        for prefix in ("${SKILL_DIR}/", "$SKILL_DIR/", "./"):
            w = w.removeprefix(prefix)
        if not w or w.startswith(("/", "-", "$", "~")) or any(c in w for c in "=*?{}") \
                or "://" in w:
            continue
        p = PurePosixPath(w)
        if ".." in p.parts:
            continue
        if p.suffix in _SCRIPT_EXT or (len(p.parts) > 1 and p.parts[0] in top):
            out.append(w)
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


def diagnose(code: str, exit_code: int | None, output: str, skill_dir: Path,
             declared: frozenset[str] | set[str] = frozenset()) -> Diagnosis:
    """Classify a failed block from its exit code and output.

    ``declared``: host tools the contract declares; a missing declared tool is not
    `missing_tool` (the case then says the environment lacks it, not that it is untested).
    """
    m = _NO_MODULE.search(output) or _NODE_NO_MODULE.search(output)
    missing = m.group(1).split(".")[0] if m else None
    if missing is None:
        cm = _CMD_NOT_FOUND.search(output)
        if cm:
            missing = cm.group(1)
    if missing is not None and not (skill_dir / missing).exists() \
            and not (skill_dir / f"{missing}.py").exists():
        if missing in declared:
            return Diagnosis("inconclusive", f"declared host tool {missing} is missing", missing)
        return Diagnosis("missing_tool", f"needs {missing}", missing)

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
        return Diagnosis("defect", f"{exc} raised in the skill's {file}:{line}")

    named = _skill_paths(code, skill_dir)
    for am in _ARGPARSE.finditer(output):
        prog, err = am.group(1), am.group(2)
        if any(PurePosixPath(p).name == prog and (skill_dir / p).is_file() for p in named):
            return Diagnosis("defect", f"the skill's {prog} rejects what SKILL.md documents: "
                                       f"{err}")
    for p in named:
        if not (skill_dir / p).exists() and PurePosixPath(p).name in output \
                and _NO_FILE.search(output):
            return Diagnosis("defect", f"SKILL.md runs {p}, which the skill does not have")

    if exit_code == 127:
        return Diagnosis("missing_tool", "needs a command that is not installed (exit 127)")
    return Diagnosis("inconclusive", f"exited {exit_code}; not in the skill's own code")


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


def taints(outcome: BlockOutcome) -> bool:
    """Whether later failures stop being evidence after this block."""
    return outcome.outcome not in ("ok", "defect")


def summarize(outcomes: list[BlockOutcome]) -> DocTestSummary:
    """defect > needs X > something ran > nothing self-contained."""
    defect = next((o for o in outcomes if o.outcome == "defect"), None)
    if defect is not None:
        text = f"SKILL.md line {defect.line}: {defect.reason}"
        if defect.evidence:
            text += f"\n{defect.evidence}"
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
    (the environment stopped it; a retry may help). The structural assertion (the skill's own
    files modified) still turns any of these into fail.
    """
    if run_status == "completed":
        return "pass", f"doc test: {final_text}"
    if run_status == "failed":
        return "fail", f"doc test found a skill defect: {final_text}"
    if run_status == "untested":
        return "untested", final_text
    return "error", f"doc test {run_status}: {final_text}"
