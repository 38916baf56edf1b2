"""Reading a failed doc-test block: its exit code and output, and what they prove about the
skill (`diagnose`). The rules are the ones `aeval.verdicts.doctest` states: a defect only in
the skill's own code or interface, `needs X` for a host tool or module the reader installs,
anything else inconclusive.

Pure: no processes here; the outputs are untrusted text, read by bounded regular expressions.
"""


from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path, PurePosixPath

from aeval.isolation.shown import shown_by_name
from aeval.skill.shell_blocks import SCRIPT_EXT, generic_example
from aeval.skill.shellparse import (
    Command,
    Effects,
    commands,
    effects,
    norm,
    path_like,
    related,
)
from aeval.verdicts.context import context_refusal, exception_context
from aeval.verdicts.doctest import Diagnosis, interpreter_problem, own_file
from aeval.verdicts.loading import loaded_file
from aeval.verdicts.missing import frames_in_skill, install_advice, missing, shipped_named

_EXC_LINE = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt|KeyError)\b.*)$", re.M)
# argparse's error line: ``prog: error: ...``, a subcommand's ``prog sub: error: ...``
_ARGPARSE = re.compile(r"^(?:usage: )?([\w.-]+)(?: [\w:.-]+){0,3}: error: "
                       r"(argument [^\n]*invalid choice[^\n]*|"
                       r"unrecognized arguments[^\n]*|"
                       r"the following arguments are required[^\n]*)$", re.M)
_NO_FILE = re.compile(r"(?:can't open file|No such file or directory|not found|"
                      r"Cannot find module|does not exist)", re.I)
_OS_ERRORS = ("FileNotFoundError", "IsADirectoryError", "NotADirectoryError",
              "PermissionError", "FileExistsError")
# the environment, not the skill: no network, no credential, no display, no service
_ENVIRONMENT = re.compile(
    r"api[_ -]?key|(?<!unexpected )\btoken\b|credential|not (?:set|configured)|"
    r"environment variable|"
    r"\bauth|login|unauthori[sz]ed|forbidden|\b40[13]\b|\b429\b|\b5\d\d\b|rate.?limit|"
    r"connect|network|unreachable|resolve|\bdns\b|name or service|timed? ?out|ssl|certificate|"
    r"proxy|socket|\bhttps?://|\bdisplay\b|x11|wayland|\bgpu\b|cuda|docker|daemon|"
    r"out of memory|killed|no space left|read-only file system|interrupted", re.I)
_PATHS = re.compile(r"\S*/\S*")  # a word with a slash: a path or URL, read apart
_SKILL_VARS = frozenset({"SKILL_DIR", "CLAUDE_SKILL_DIR"})  # aeval sets these; no block can
_REJECTION = re.compile(
    r"usage:|unknown|unrecogni[sz]ed|invalid|not (?:a )?(?:valid|supported|recogni[sz]ed)|"
    r"unsupported|no such (?:command|action|option|subcommand|mode)|expected one of|"
    r"choose from|must be one of|unexpected (?:argument|option)|too (?:many|few) arguments|"
    r"requires? (?:an? )?(?:argument|action|command)", re.I)




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


# bash's own report of a script it cannot parse: `scripts/x.sh: line 7: syntax error near
# unexpected token `fi'`, `/abs/x.sh: line 9: syntax error: unexpected end of file`; dash's
# `scripts/x.sh: 4: Syntax error: end of file unexpected (expecting "fi")`
_SHELL_SYNTAX = re.compile(r"^(?P<path>[^\n:]{1,4096}): (?:line )?(?P<line>\d{1,9}): "
                           r"(?P<msg>[Ss]yntax error[^\n]{0,300})$", re.M)


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


# bash's own report about the block it was given (``bash -c``), not about a script: it
# could not parse it (``bash: -c: line 3: syntax error near unexpected token `newline'``),
# expand a word (``bad substitution``), or open a redirection (``bash: $x: ambiguous
# redirect``, ``bash: line 2: team: No such file or directory``)
_BASH_SAYS = re.compile(
    r"^(?:\S*/)?bash: (?:(?:-c|eval): )?(?:line (?P<line>\d{1,9}): )?(?:"
    r"(?P<syntax>syntax error[^\n]{0,300}|unexpected EOF while looking for[^\n]{0,100})|"
    r"(?P<word>[^\n]{1,300}?): (?P<what>ambiguous redirect|bad substitution|"
    r"No such file or directory))$", re.M)


def _bash_refused(code: str, exit_code: int | None, output: str, skill_dir: Path,
                  names: tuple[str, ...]) -> Diagnosis | None:
    """Inconclusive when bash itself stopped the block before the command ran: a syntax
    error (exit 2: an angle-bracket placeholder with a space, ``<team slugs>``, reads as
    redirections), a word it could not expand, or a redirection from a file that is not
    here or to an ambiguous target. The skill's script never saw its arguments, so this
    is no rejection of them (a placeholder or an illustration, or the reader's input). A
    missing file of the skill's own that the block redirects from is left to the rules
    that read the skill's files."""
    lines = code.count("\n") + 1
    reads = {r for c in commands(code) for r in c.reads}
    for m in _BASH_SAYS.finditer(output):
        n = int(m.group("line")) - 2 if m.group("line") else None  # the ERR trap's line
        at = n if n is not None and 0 <= n < lines else None
        if m.group("syntax"):
            if exit_code != 2 or (m.group("line") and at is None):
                continue
            return Diagnosis("inconclusive", f"bash cannot parse the block as written "
                                             f"({m.group('syntax')}): a placeholder or an "
                                             "illustration, not a command the skill's script "
                                             "was given", at=at)
        word, what = m.group("word"), m.group("what")
        if what == "No such file or directory":
            if word not in reads:
                continue  # a program or script bash could not start: the other rules
            rel = own_file(word, skill_dir, names)
            if rel is not None and "/" in rel:
                continue  # the skill's own file: a missing path of the skill
            return Diagnosis("inconclusive", f"the block redirects from {word}, which is not "
                                             "here (a placeholder or the reader's input): "
                                             "bash stopped before the command ran",
                             at=at, input=word)
        return Diagnosis("inconclusive", f"bash stopped the block before the command ran "
                                         f"({word}: {what}): a placeholder or the reader's "
                                         "value, not the skill's answer", at=at)
    return None


def _pseudo_command(code: str, tool: str) -> bool:
    """Whether every command of the block that starts ``tool`` is prose written as shell
    rather than a program: a bare word with no argument after ``||`` (``gh auth status ||
    skip``; after ``&&`` a bare ``make`` is a real program), or a capitalised word leading a
    sentence of plain words (``Run the tests first``). A program with arguments, or alone on
    its line, is a real command."""
    starts = [c for c in commands(code) if c.target_argv()[:1] == [tool]]
    if not starts:
        return False
    lines = code.split("\n")
    for c in starts:
        argv = c.target_argv()
        line = lines[c.line] if c.line < len(lines) else ""
        fallback = len(argv) == 1 and re.search(
            rf"\|\|[^\S\n]*{re.escape(tool)}[^\S\n]*(?:$|[;#)]|\|\||&&)", line)
        sentence = re.fullmatch(r"[A-Z][a-z]{1,20}", tool) and len(argv) >= 2 and all(
            re.fullmatch(r"[a-z][a-z']{0,20}[.,:]?", w) for w in argv[1:])
        if not (fallback or sentence):
            return False
    return True


def _last_line(output: str) -> str:
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "no output"


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


_MAKE = re.compile(r"^(?:g|gnu)?make$")
_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
# GNU make and BSD make when the goal itself has no rule; a prerequisite without one is
# "..., needed by 'x'" (an input the reader's tree lacks), not a target SKILL.md names
_NO_RULE = re.compile(r"No rule to make target [`'‘\"]([^'’\"\n]+)['’\"]\.|"
                      r"don't know how to make ([^\s.]+)\.?\s*Stop", re.I)


def _make_goal(cmd: Command, output: str, skill_dir: Path, names: tuple[str, ...],
               block: Effects) -> Diagnosis | None:
    """A defect when ``cmd`` runs make on the skill's own makefile (``make -f
    scripts/release.mk bundle``, ``make -C $SKILL_DIR bundle``, or a bare ``make bundle``
    from the skill folder, whose makefile is the skill's) and make has no rule for a goal
    SKILL.md wrote: the makefile is the skill's interface, the goal its subcommand."""
    argv = cmd.target_argv()
    if not argv or not _MAKE.match(PurePosixPath(argv[0]).name):
        return None
    makefile = folder = None
    goals: list[str] = []
    words = iter(argv[1:])
    for w in words:
        if w in ("-f", "--file", "--makefile", "-C", "--directory"):
            value = next(words, "")
            if w in ("-C", "--directory"):
                folder = value
            else:
                makefile = value
        elif w.startswith(("-f", "--file=", "--makefile=")) and len(w) > 2:
            makefile = w.split("=", 1)[1] if w.startswith("--") else w[2:]
        elif w.startswith(("-C", "--directory=")) and len(w) > 2:
            folder = w.split("=", 1)[1] if w.startswith("--") else w[2:]
        elif not w.startswith("-") and "=" not in w:
            goals.append(w)
    if folder is not None:
        base = "." if folder.rstrip("/") in (".", "$SKILL_DIR", "${SKILL_DIR}") \
            else own_file(folder, skill_dir, names)
        if base is None or not (skill_dir / base).is_dir():
            return None
    elif block.cd is not None:
        return None  # the reader's folder, whose makefile is not the skill's
    else:
        base = "."
    if makefile is not None:
        rel = own_file(makefile, skill_dir, names) if folder is None \
            else norm(f"{base}/{makefile}")
    else:
        rel = next((norm(f"{base}/{n}") for n in _MAKEFILES if (skill_dir / base / n).is_file()),
                   None)
    if rel is None or not (skill_dir / rel).is_file():
        return None
    for m in _NO_RULE.finditer(output):
        goal = m.group(1) or m.group(2)
        if goal in goals and "$" not in goal:
            return Diagnosis("defect", f"the skill's {rel} has no target {goal!r}, which "
                                       f"SKILL.md runs: {m.group(0).strip()}", file=rel,
                             own="usage")
    return None


def _in(path: str, folder: Path) -> bool:
    try:
        return Path(path).is_relative_to(folder) or Path(path).is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


def _inputs_missing(args: list[str], skill_dir: Path, block: Effects) -> list[str]:
    """The path-like arguments that name nothing that exists (inputs the reader supplies),
    the block's own outputs aside."""
    out = []
    for a in args:
        value = a.split("=", 1)[1] if a.startswith("--") and "=" in a else a
        if not path_like(value) or any(related(norm(value), w) for w in block.writes):
            continue
        p = norm(value)
        if p.startswith("/") and not _in(p, skill_dir) and not shown_by_name(p):
            out.append(value)  # `/var/log`: the reader's machine's; no case sees it
        elif not (Path(p) if p.startswith("/") else skill_dir / p).exists():
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


def _rejected_first(named: list[str], output: str) -> list[str]:
    """``named`` (documented words the output repeats) with those a rejection line names
    first (``unknown option -e``): a usage synopsis after it repeats every flag, the
    accepted ones too (``usage: check_env.sh -r REQUIRED -e ENVFILE``)."""
    said = [ln for ln in output.splitlines()
            if _REJECTION.search(ln) and not re.match(r"\s*usage:", ln, re.I)]
    return sorted(named, key=lambda w: not any(
        re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", ln) for ln in said))


def _unparsed_or_missing(output: str, skill_dir: Path, declared: frozenset[str] | set[str]
                         ) -> Diagnosis | None:
    """What is read first from any failed block's output, before its traceback: a skill
    script the shell could not parse, then a module or command that is missing."""
    syntax = _shell_syntax_error(output, skill_dir)
    return syntax if syntax is not None else missing(output, skill_dir, declared)


def _unlisted(args: list[str], output: str, error: str) -> str:
    """For argparse's "the following arguments are required", the documented flags its usage
    line does not list (a renamed ``--effect-size`` shows as "required: --cohens-d"; the flag
    SKILL.md passes is the one to fix), as a clause of the reason, or ""."""
    if not error.startswith("the following arguments are required"):
        return ""
    usage = re.search(r"^usage: (.*(?:\n {2,}.*)*)", output, re.M)
    if usage is None or len(usage.group(1)) > 20_000:
        return ""
    listed = set(re.findall(r"(?<![\w-])(-{1,2}[\w][\w-]*)", usage.group(1)))
    flags = [a.split("=", 1)[0] for a in args if re.fullmatch(r"-{1,2}[A-Za-z][\w-]*(=.*)?", a)]
    gone = [f for f in dict.fromkeys(flags) if f not in listed]
    if not gone:
        return ""
    return f" (SKILL.md passes {', '.join(gone[:3])}, which its usage does not list)"


def _illustration(rel: str) -> Diagnosis:
    """A block that runs a generic example name the skill does not have (``python
    scripts/script_name.py --help`` in a "writing scripts" section): it shows the shape of a
    command, so its failure says nothing of the skill (S0 warns about the name)."""
    return Diagnosis("inconclusive", f"runs {rel}, a generic example name the skill does not "
                                     "have: an illustration, not a command of the skill")


def documented_exit(rel: str, exit_code: int, results: tuple[str, ...]) -> str | None:
    """The sentence of SKILL.md (``results``: `aeval.skill.shell_blocks.result_exits`) that
    gives ``exit_code`` as the answer of the skill's ``rel`` (``exits 1 when it finds
    something``), or None. A sentence that names another file of the skill is about that
    one; one that names no file is about whichever script it documents."""
    name = PurePosixPath(rel).name
    for sentence in results:
        if not re.search(rf"\bexit\w*\s+(?:with\s+)?(?:(?:code|status)\s+)?"
                         rf"(?:{exit_code}|{'non-?zero' if exit_code == 1 else '$^'})\b",
                         sentence, re.I):
            continue
        files = {m.group(1) for m in re.finditer(r"([\w.-]+\.(?:[a-z]{1,4}))\b", sentence)
                 if PurePosixPath(m.group(1)).suffix in SCRIPT_EXT}
        if not files or name in files:
            return sentence
    return None


def diagnose_own(rel: str, args: list[str], direct: bool, exit_code: int | None, output: str,
                 skill_dir: Path, block: Effects, declared: frozenset[str] | set[str],
                 results: tuple[str, ...] = ()) -> Diagnosis | None:
    """The diagnosis when the failing command ran the skill's own file ``rel`` (None: let the
    general rules decide). ``results``: SKILL.md's sentences that give a non-zero exit as an
    answer; a script that exits so, with no rejection or crash in its output, answered."""
    path = skill_dir / rel
    if not path.exists() and not path.is_symlink():
        if generic_example(rel):
            return _illustration(rel)
        return Diagnosis("defect", f"SKILL.md runs {rel}, which the skill does not have",
                         file=rel, own="file")
    if direct and path.is_file():
        mode = path.lstat().st_mode if not path.is_symlink() else path.stat().st_mode
        if not mode & 0o111:
            return Diagnosis("defect", f"SKILL.md runs {rel} directly, but it is not executable "
                                       f"(mode {mode & 0o777:o})", file=rel, own="file")
        problem = interpreter_problem(path)
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
    unparsed = _unparsed_or_missing(output, skill_dir, declared)
    if unparsed is not None and unparsed.kind == "defect" and unparsed.file not in (None, rel):
        # a helper module the documented script loads: name the script SKILL.md runs too
        return replace(unparsed, reason=f"running {rel}: {unparsed.reason}")
    if unparsed is not None:
        return unparsed
    if frames_in_skill(output, skill_dir):
        return None  # a traceback: the general rules read it
    for am in _ARGPARSE.finditer(output):
        if am.group(1) == PurePosixPath(rel).name:
            # argparse read only the words SKILL.md wrote: with no variable among them, no
            # earlier block (an export, an assignment) could have changed what it saw
            fixed = not (_variables(args) - _SKILL_VARS)
            err = am.group(2)
            return Diagnosis("defect", f"the skill's {am.group(1)} rejects what SKILL.md "
                                       f"documents: {err}{_unlisted(args, output, err)}",
                             file=rel,
                             own="usage" if fixed else "rejected")
    words = _documented_words(args)
    rejection = _REJECTION.search(output)
    named = _rejected_first([w for w in words
                             if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", output)], output)
    if rejection and named:
        return Diagnosis("defect", f"the skill's {rel} rejects the documented {named[0]!r}: "
                                   f"{_last_line(output)}", file=rel, own="rejected")
    advice = install_advice(output, exit_code, declared)
    if advice is not None:
        return advice
    context = context_refusal(rel, output, skill_dir)
    if context is not None:  # the reader's repository, files, login or network
        return context
    if _ENVIRONMENT.search(_PATHS.sub(" ", output)):  # not a "503" or "auth" in a path
        return Diagnosis("inconclusive", f"{rel} exited {exit_code}; the environment looks "
                                         f"incomplete: {_last_line(output)}")
    inputs = _inputs_missing(args, skill_dir, block)
    if inputs:
        return Diagnosis("inconclusive", f"{rel} exited {exit_code}; it needs an input the "
                                         f"reader supplies: {inputs[0]}")
    if block.uses:
        return Diagnosis("inconclusive", f"{rel} exited {exit_code}; the block uses "
                                         f"${sorted(block.uses)[0]}, which the reader sets")
    said = documented_exit(rel, exit_code, results)
    if said is not None:  # a linter's or a scanner's finding, as SKILL.md says it exits
        return Diagnosis("result", f"{rel} exited {exit_code}, its answer as SKILL.md "
                                   f"documents it ({said!r})")
    shown = " ".join(args)[:120]
    return Diagnosis("defect", f"the skill's {rel} exited {exit_code} with the documented "
                               f"arguments `{shown}`: {_last_line(output)}", file=rel,
                     own="rejected")


def diagnose(code: str, exit_code: int | None, output: str, skill_dir: Path,
             declared: frozenset[str] | set[str] = frozenset(), failed: str | None = None,
             names: tuple[str, ...] = (), results: tuple[str, ...] = ()) -> Diagnosis:
    """Classify a failed block from its exit code and output (see `_diagnose`); ``at`` is the
    line of the command that failed when bash named it."""
    d = _diagnose(code, exit_code, output, skill_dir, declared, failed, names, results)
    if d.kind == "missing_tool" and d.tool is not None and _pseudo_command(code, d.tool):
        d = Diagnosis("inconclusive", f"`{d.tool}` is no program: the block uses it as a word "
                                      "of prose (a pseudo-command), not a host tool to install")
    if d.at is None and failed is not None:
        named = commands(failed)
        at = next((c.line for c in commands(code) if named and c.argv == named[0].argv), None)
        d = replace(d, at=at)
    return d


def _diagnose(code: str, exit_code: int | None, output: str, skill_dir: Path,
              declared: frozenset[str] | set[str] = frozenset(), failed: str | None = None,
              names: tuple[str, ...] = (), results: tuple[str, ...] = ()) -> Diagnosis:
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
    refused = _bash_refused(code, exit_code, output, skill_dir, names)
    if refused is not None:
        return refused
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
        misplaced = _misplaced(cmd, output, skill_dir)
        if misplaced is not None:
            at = next((c.line for c in in_block if c.argv == cmd.argv), None)
            return replace(misplaced, at=at)
        goal = _make_goal(cmd, output, skill_dir, names, block)
        if goal is not None:
            return replace(goal, at=next((c.line for c in in_block if c.argv == cmd.argv), None))
        own = _own_command(cmd, skill_dir, names)
        if own is not None:
            d = diagnose_own(*own, exit_code, output, skill_dir, block, declared, results)
            if d is not None:
                at = next((c.line for c in in_block if c.argv == cmd.argv), None)
                return replace(d, at=at)
            break

    unparsed = _unparsed_or_missing(output, skill_dir, declared)
    if unparsed is not None:
        return unparsed
    frames = frames_in_skill(output, skill_dir)
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
            gone = re.search(r"'([^'\n]{1,500})'\s*$", exc)
            return Diagnosis("inconclusive", f"{exc} (an input the block expects is missing)",
                             input=gone.group(1) if gone else None)
        context = exception_context(exc, output, skill_dir, f"{file}:{line}")
        if context is not None:  # KeyError: 'GITHUB_TOKEN', a name that does not resolve
            return context
        kind = exc.split(":")[0].split(".")[-1]
        loading = loaded_file(exc, output, skill_dir, frames)
        what = f", loading the skill's {loading[0]}, which is not valid {loading[1]}" \
            if loading else ""
        return Diagnosis("defect", f"{exc} raised in the skill's {file}:{line}{what}",
                         file=file, own="file" if kind in _UNPARSABLE else "crash")

    advice = install_advice(output, exit_code, declared)
    if advice is not None:
        return advice
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
            if generic_example(p):
                return _illustration(p)
            return Diagnosis("defect", f"SKILL.md runs {p}, which the skill does not have",
                             file=p)

    if exit_code == 127:
        return Diagnosis("missing_tool", "needs a command that is not installed (exit 127)")
    return Diagnosis("inconclusive", f"exited {exit_code}; not in the skill's own code")


_REDIRECT_FAILED = re.compile(
    r"^(?:\S*/)?(?:ba|da|z)?sh: (?:line \d+: |\d+: )?(?:cannot create )?(?P<path>[^:\n]+): "
    r"(?:No such file or directory|Directory nonexistent)$", re.M)
"""The shell's own message when a redirection cannot open its file (bash, dash)."""


_UNPARSABLE = frozenset({"SyntaxError", "IndentationError", "TabError"})


def _variables(args: list[str]) -> set[str]:
    """The variables the words of a command expand (``$X``, ``${X}``, ``${X:-d}``)."""
    return {m.group(1) or m.group(2) for a in args
            for m in re.finditer(r"\$\{([A-Za-z_]\w*)|\$([A-Za-z_]\w*)", a)}


def _misplaced(cmd: Command, output: str, skill_dir: Path) -> Diagnosis | None:
    """A defect when SKILL.md runs a bare script name (``python3 build.py``) that is not at
    the skill's root, the interpreter says it cannot open it, and the skill ships a file of
    that name elsewhere (``scripts/build.py``): the line's path is wrong. A bare name the
    skill ships nowhere is the reader's project's (``python manage.py``)."""
    script, _args = cmd.script()
    if script is None or "/" in script or "$" in script or \
            PurePosixPath(script).suffix not in SCRIPT_EXT or (skill_dir / script).exists():
        return None
    if not re.search(rf"(?:can't open file|Cannot find module|No such file or directory)"
                     rf"[^\n]{{0,200}}{re.escape(script)}|{re.escape(script)}[^\n]{{0,40}}"
                     rf"No such file or directory", output):
        return None
    found = shipped_named(skill_dir, script)
    if not found:
        return None
    return Diagnosis("defect", f"SKILL.md runs {script} from the skill folder, which has no "
                               f"{script} there (the skill ships {found[0]}): a missing path",
                     file=found[0])


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
