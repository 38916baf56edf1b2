"""The static skill check (S0): what SKILL.md names must be there and must be usable, before
anything runs. Zero-key, deterministic, the same on every tier and runtime.

A finding is one of:

- **missing**: a local path SKILL.md names does not exist in the skill: a file a documented
  command runs (``python3 scripts/x.py``, ``./run.sh``, ``$SKILL_DIR/bin/tool``), a path under
  one of the skill's own folders (``references/api.md`` in a block or an inline code span),
  or the target of a markdown link or image; and the same one level down, in the reference
  files SKILL.md links to (their links resolve from their own folder, their commands from
  the skill's root);
- **not executable**: a file SKILL.md runs directly (``scripts/x.py ...``) lacks the
  executable bit, or its interpreter line is unusable (none on a non-shell script, CRLF
  line endings, a relative interpreter). Prose shorthand (``use `scripts/x.py monthly` ``)
  for a file the fenced blocks give to its interpreter names the file, it does not run
  it; a direct run only prose shows, with no block either way, is a warning;
- **rejected**: a subcommand or option SKILL.md documents for the skill's own script is one
  the script does not accept (read from its argparse / click / ``sys.argv`` dispatch /
  ``case "$1"`` source, see `aeval.skill.script_interface`), a documented call lacks an
  option or positional the script requires, or gives an option a value outside its
  ``choices`` (`aeval.verdicts.resource_check`);
- **corrupt**: a JSON, YAML or TOML resource the skill ships does not parse; and, deeper
  (`aeval.verdicts.resource_check`), the files a SKILL.md table or a reference file's
  directions name are checked like links.

- **the code of what runs** (`aeval.verdicts.deep_check`): a syntax error at the declared
  Python, an undefined name, a broken import of the skill's own module, a relative JS/TS
  import of nothing, a bash parse error, in a file the docs run or one it imports.

A finding is a **defect** (the skill fails S0) or a **warning** (shown with the skill's lint
warnings by ``aeval validate`` and ``aeval run``, never a fail): what a block runs, a link,
an inline command of SKILL.md's prose and a path its prose sends the agent to (``see `x` ``,
``read``, ``run``, ``in``) are defects; a path SKILL.md's prose only mentions (``A `x`
script would help``), an inline span of a reference file's
prose (read by the agent on demand, it names the reader's files and a script's old flags as
often as the skill's), an inline command SKILL.md gives as an example (``e.g. `...` ``), a
missing file with a generic example name (``scripts/script_name.py``, ``my_script.sh``,
``example.py``) and a file a layout tree of the skill lists (``├── scripts/fit.py``) are
warnings. A fence without a language is read for the lines that run the skill's own scripts
(``uv run scripts/x.py ...``; output and listings are not commands) and for a layout tree.
A one-word span is read as a shell word: its quotes are not part of the path.

Not references: placeholders (``<file>``, ``{name}``, ``path/to/``, ``your_...``, an
all-caps metavar), URLs, absolute paths outside the skill, paths above it (``..``), paths a
documented command creates (``> out.txt``, ``-o report.pdf``, ``mkdir build``), globs and
variables the reader sets, blocks shown as what not to do. Pure apart from reading the
skill's own files (the original, never an attempt's copy).
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import unquote

from aeval.skill import markdown
from aeval.skill.script_interface import Interface, read_interface
from aeval.skill.shell_blocks import counter_example, generic_example, placeholder
from aeval.skill.shellparse import (
    INTERPRETERS,
    commands,
    effects,
    follow_skill_dir,
    norm,
    related,
    skill_root_rest,
    tokens,
)
from aeval.skill.skill_md import SKILL_FILE, Skill
from aeval.verdicts.deep_check import Run, deep_check, helper_path
from aeval.verdicts.doctest import interpreter_problem, own_file
from aeval.verdicts.finding import StaticFinding
from aeval.verdicts.resource_check import call_problems, check_resources

MAX_REFERENCE_BYTES = 2_000_000
MAX_SCRIPT_BYTES = 1_000_000  # a larger script is not read for its interface
MAX_FINDINGS = 50
_METAVAR = re.compile(r"^(?:[A-Z][A-Z0-9_-]*|command|action|subcommand|cmd|args?|options?)$")


class _Checker:
    def __init__(self, skill: Skill):
        self.root = Path(skill.path)
        self.names = tuple(dict.fromkeys((skill.name, self.root.name)))
        self.findings: list[StaticFinding] = []
        self.seen: dict[tuple[str, int, str], int] = {}  # -> index in findings
        self.severity = "defect"  # of what is being read (a reference file's prose: warning)
        try:
            self.top = {p.name for p in self.root.iterdir() if p.is_dir()}
        except OSError:
            self.top = set()
        self.interfaces: dict[str, Interface | None] = {}
        # how the fenced blocks run each of the skill's files: through an interpreter
        # (``python scripts/x.py``) or directly (``./scripts/x.py``); prose shorthand for a
        # file they run through an interpreter names it, it does not run it
        self.fenced_runs: dict[str, set[str]] = {"interpreted": set(), "direct": set()}
        self.skill_vars: dict[str, str] = {}  # what the skill set $SKILL_DIR to (its blocks)
        self.ran: dict[str, Run] = {}  # each file the docs run, at its first run (deep tier)

    # ---- recording ------------------------------------------------------------------------
    def add(self, file: str, line: int, via: int | None, kind: str, path: str,
            problem: str, warning: bool = False, word: str | None = None) -> None:
        key = (file, line, problem)
        severity = "warning" if warning else self.severity
        if key in self.seen:  # the same on one line: a defect outweighs a warning
            at = self.seen[key]
            if severity == "defect":
                self.findings[at] = self.findings[at].model_copy(update={"severity": severity})
            return
        if sum(f.severity == severity for f in self.findings) >= MAX_FINDINGS:
            return
        self.seen[key] = len(self.findings)
        self.findings.append(StaticFinding(file=file, line=line, via=via, kind=kind, path=path,
                                           problem=problem, severity=severity, word=word))

    # ---- the filesystem of the skill ------------------------------------------------------
    def exists(self, rel: str) -> bool:
        return os.path.lexists(self.root / rel)

    def near_miss(self, rel: str) -> str:
        """A hint when only the case of a name differs (macOS authors, Linux agents)."""
        parent = self.root / PurePosixPath(rel).parent
        try:
            match = [p.name for p in parent.iterdir() if p.name.lower() ==
                     PurePosixPath(rel).name.lower()]
        except OSError:
            return ""
        return f" (there is {match[0]}: file names are case-sensitive)" if match else ""

    # ---- one document ---------------------------------------------------------------------
    def document(self, text: str, file: str, offset: int, via: int | None) -> list[tuple[int,
                                                                                          str]]:
        """Check one markdown document; return the linked markdown files (line, path)."""
        fences, prose = markdown.parse(text, offset)
        produced: set[str] = set()
        shell = [(f.line, self.block_commands(f)) for f in fences
                 if not counter_example(f.code, f.before)]
        shell = [(ln, code) for ln, code in shell if code is not None]
        # the skill's own `SKILL_DIR=.../scripts` is followed, block to block
        followed = []
        for ln, code in shell:
            code, self.skill_vars = follow_skill_dir(code, self.names, self.skill_vars)
            followed.append((ln, code))
        shell = followed
        trees = [f for f in fences if f.lang in markdown.LISTING_LANGS]
        spans = [s for s in markdown.inline_code(prose)]
        for _, code in shell:
            produced |= effects(code).writes
            self.note_fenced_runs(code)
        for s in spans:
            if " " in s.text.strip():
                produced |= effects(s.text).writes
        base = str(PurePosixPath(file).parent)  # where the document's links resolve from
        for ln, code in shell:
            self.commands_of(code, ln, file, via, produced)
        for f in trees:
            self.tree(f, file, via)
        lines = dict(prose)
        made: set[tuple[int, str]] = set()  # a path saved on a line is made wherever named there
        for s in spans:
            text_ = follow_skill_dir(s.text.strip(), self.names, self.skill_vars)[0]
            if placeholder(text_):
                continue
            example = (s.line, text_) in made or _made_or_example(lines[s.line], s)
            if example:
                made.add((s.line, text_))
            if " " in text_:
                # an inline command: SKILL.md's are what the agent runs first (a failing
                # finding); a reference file's prose, or one given "e.g.", is a warning
                self.severity = "warning" if via is not None or example else "defect"
                try:
                    self.commands_of(text_, s.line, file, via, produced,
                                     inline="program" if _as_program(lines[s.line], s)
                                     else "prose")
                finally:
                    self.severity = "defect"
            elif via is None and not example:
                # a path named in prose: in SKILL.md only (a reference file's prose is read
                # by the agent on demand and names the reader's files as often as the skill's)
                self.severity = "defect" if _directed(lines[s.line], s) else "warning"
                try:
                    self.reference(_word(text_), s.line, file, None, produced)
                finally:
                    self.severity = "defect"
        linked = []
        for link in markdown.links(prose):
            rel = self.link_target(link.text, base)
            if rel is None:
                continue
            if not self.exists(rel):
                self.add(file, link.line, via, "missing", rel,
                         f"links to {rel}, which the skill does not have"
                         f"{self.near_miss(rel)}")
            elif rel.lower().endswith((".md", ".markdown")) and rel != SKILL_FILE:
                linked.append((link.line, rel))
        return linked

    def note_fenced_runs(self, code: str) -> None:
        """Record how a fenced block runs each file of the skill (see `fenced_runs`)."""
        for cmd in commands(code):
            script, _ = cmd.script()
            if script is None or placeholder(script):
                continue
            rel = own_file(script, self.root, self.names)
            if rel is not None:
                how = "direct" if cmd.runs_directly() else "interpreted"
                self.fenced_runs[how].add(rel)

    def block_commands(self, fence: markdown.Fence) -> str | None:
        """What a fence runs, in place (other lines blank): a shell block's code, a console
        session's commands, and the lines of a fence without a language that run the
        skill's own scripts (``python3 scripts/x.py ...``); None for anything else."""
        if not (fence.shell or fence.lang in ("console", "terminal", "")):
            return None
        if fence.lang in ("console", "terminal") or _PROMPTED.search(fence.code):
            return _console_commands(fence.code)
        if fence.shell:
            return fence.code
        if markdown.layout_tree(fence.code) is not None:
            return None
        lines = fence.code.split("\n")
        kept = [ln if self.runs_own_script(ln) else "" for ln in lines]
        if not any(kept):
            return None
        # what changes the folder or makes the paths the next lines read is kept too
        return "\n".join(k or (ln if _SETUP.match(ln) else "")
                         for k, ln in zip(kept, lines, strict=True))

    def runs_own_script(self, line: str) -> bool:
        """Whether one line of a fence without a language is a command that runs a file of
        the skill's own folders: given to an interpreter, or started as a program with
        arguments or as ``./x`` (a bare path alone is a listing, not a command)."""
        if line.rstrip().endswith("\\") or len(line) > 2000:
            return False  # a continued command is not read from a plain fence
        cmds = commands(line)
        if len(cmds) != 1:
            return False
        cmd = cmds[0]
        script, args = cmd.script()
        if script is None or placeholder(script) or not _PLAIN_PATH.match(script):
            return False  # `scripts/x.py: wrote out.json` is output
        rel = own_file(script, self.root, self.names)
        if rel is None or "/" not in rel or rel.split("/", 1)[0] not in self.top:
            return False
        argv = cmd.target_argv()
        interpreted = bool(argv) and bool(INTERPRETERS.match(PurePosixPath(argv[0]).name))
        return interpreted or bool(args) or script.startswith(("./", "$", "{"))

    def tree(self, fence: markdown.Fence, file: str, via: int | None) -> None:
        """A layout tree of this skill (its root is the skill's folder, or it lists
        SKILL.md at its top): each file it lists that the skill lacks is a warning."""
        entries = markdown.layout_tree(fence.code)
        if not entries:
            return
        root = entries[0][1].rstrip("/")
        if entries[0][2] and root in (*self.names, "."):  # `pdf-forms/` on its own line
            entries = [(ln, p.split("/", 1)[1], top) for ln, p, top in entries[1:] if "/" in p]
        elif not any(p == SKILL_FILE for _, p, _ in entries):
            return  # the reader's project, or another skill's
        for ln, rel, _ in entries:
            if rel.endswith("/") or placeholder(rel) or any(c in rel for c in "*?[]{}<>…") \
                    or "..." in rel or rel.split("/")[-1].startswith("."):
                continue
            if not self.exists(rel) and not self.exists(rel + "/"):
                self.add(file, fence.line + ln, via, "missing", rel,
                         f"lists {rel} in a layout tree, which the skill does not have"
                         f"{self.near_miss(rel)}", warning=True)

    def link_target(self, target: str, base: str) -> str | None:
        t = target.strip()
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", t) or placeholder(t):
            return None  # a URL (https:, mailto:, tel:, data:, ...) or a placeholder
        t = unquote(t.split("#", 1)[0].split("?", 1)[0])
        rest = skill_root_rest(t, self.names)  # `{baseDir}/x.md`, `/mnt/skills/user/<name>/x.md`
        if rest is not None:
            t, base = rest, "."
        if not t or t.startswith(("/", "~")):
            return None  # an anchor of this document, an absolute or a home path
        rel = norm(posixpath.normpath(posixpath.join(base, t)))
        if rel.split("/", 1)[0] == "..":
            return None  # above the skill: not the skill's to have
        return rel

    def reference(self, word: str, line: int, file: str, via: int | None,
                  produced: set[str], executed: bool = False) -> str | None:
        """Check one path word (from the skill's root); return its skill-relative path when it
        names one that is there."""
        if placeholder(word) or _METAVAR.match(word):
            return None
        rel = own_file(word, self.root, self.names)
        if rel is None or rel == SKILL_FILE:
            return rel
        in_own_folder = "/" in rel and rel.split("/", 1)[0] in self.top
        if not (executed or in_own_folder):
            return None
        if any(related(rel, p) for p in produced):
            return None
        if not self.exists(rel):
            what = "runs" if executed else "names"
            generic = generic_example(rel)
            self.add(file, line, via, "missing", rel,
                     f"{what} {rel}, which the skill does not have{self.near_miss(rel)}"
                     + (" (a generic example name: read as an illustration)" if generic
                        else ""), warning=generic)
            return None
        return rel

    def commands_of(self, code: str, line: int, file: str, via: int | None,
                    produced: set[str], inline: Literal["", "prose", "program"] = "") -> None:
        """Check the commands of a block (``inline=""``) or of an inline span of prose:
        ``"program"`` when the prose says the file runs as a program (``run it directly:``),
        ``"prose"`` for shorthand (``use `scripts/x.py monthly` ``), which runs a file
        directly only as far as the fenced blocks do (see `fenced_runs`)."""
        if placeholder(code) and inline:
            return
        for cmd in commands(code):
            at = line + (cmd.line + (0 if inline else 1))
            argv = cmd.target_argv()
            if argv and PurePosixPath(argv[0]).name in ("cd", "pushd") and not cmd.subshell:
                if len(argv) < 2 or skill_root_rest(argv[1], self.names) != "":
                    return  # after a `cd` elsewhere (home, for a bare one) the block's
                    # relative paths are someone else's
                continue
            script, args = cmd.script()
            # `"$(helper plugin)/skills/<name>/x.sh"`: a marketplace's path to this skill's file
            script = helper_path(script, self.root, self.names) or script if script else script
            runs = script is not None and not placeholder(script)
            ran = self.reference(script, at, file, via, produced, executed=True) if runs else None
            if ran is not None and ran not in self.ran:
                self.ran[ran] = Run(file, at, via, self.severity)
            for w in [*argv[1:], *cmd.reads]:
                if w == script:
                    continue
                value = w.split("=", 1)[1] if w.startswith("--") and "=" in w else w
                if "/" in value:  # on the line the word is written on
                    self.reference(value, line + cmd.word_lines.get(w, cmd.line)
                                   + (0 if inline else 1), file, via, produced)
            if ran is None:  # not the skill's, a placeholder, missing or made by the docs
                continue
            if cmd.runs_directly():  # not given to an interpreter (nor `uv run x.py`)
                if inline != "prose":
                    self.startable(ran, at, file, via)
                elif ran in self.fenced_runs["direct"]:
                    self.startable(ran, at, file, via)  # the blocks run it so too
                elif ran not in self.fenced_runs["interpreted"]:
                    # prose shorthand no block spells out either way: the reader may well
                    # give it to its interpreter, so a warning on the line, never a defect
                    self.startable(ran, at, file, via, prose=True)
                # else the blocks give it to its interpreter: the prose names the file
            # a call is whole in a block, without stdin from a file (`<form.pdf>` reads so)
            self.interface(ran, args, at, file, via, whole=not inline and not cmd.reads)

    def startable(self, rel: str, line: int, file: str, via: int | None,
                  prose: bool = False) -> None:
        """A finding when the file a line runs directly cannot be started by the kernel;
        ``prose``: an inline span of prose that no fenced block runs either way (a
        warning, worded as what the prose does)."""
        path = self.root / rel
        runs = f"runs {rel} directly" + (" in prose (no block runs it)" if prose else "")
        try:
            st = path.stat()
        except OSError:
            return
        if not path.is_file():
            return
        if not st.st_mode & 0o111:
            self.add(file, line, via, "not_executable", rel,
                     f"{runs}, but it is not executable (mode "
                     f"{st.st_mode & 0o777:o}; git update-index --chmod=+x {rel})",
                     warning=prose)
            return
        problem = interpreter_problem(path)
        if problem is not None:
            self.add(file, line, via, "not_executable", rel, f"{runs}, but {problem}",
                     warning=prose)

    def interface(self, rel: str, args: list[str], line: int, file: str,
                  via: int | None, whole: bool = False) -> None:
        if rel not in self.interfaces:
            self.interfaces[rel] = _read(self.root / rel)
        iface = self.interfaces[rel]
        if iface is None:
            return
        words = [a for a in args if not placeholder(a)]
        if words and re.fullmatch(r"[A-Za-z][\w:-]{0,63}", words[0]) \
                and not _METAVAR.match(words[0]) and iface.rejects_action(words[0]):
            known = ", ".join(sorted(iface.actions or ()))
            self.add(file, line, via, "rejected", rel,
                     f"documents `{words[0]}` for {rel}, which does not accept it "
                     f"(it accepts: {known})", word=words[0])
        for a in words:
            if a == "--":
                return  # the words after it are operands, whatever they look like
            if not a.startswith("-") or a == "-" or re.fullmatch(r"-\d[\d.]*", a):
                continue  # `-` is stdin (or stdout), `-5` a negative number: operands
            flag = a.split("=", 1)[0]
            if iface.rejects_option(flag):
                self.add(file, line, via, "rejected", rel,
                         f"documents the option {flag} for {rel}, which does not accept it",
                         word=flag)
        for problem in call_problems(iface, rel, args, whole):  # required, choices
            self.add(file, line, via, "rejected", rel, problem)


_MADE = re.compile(r"(?:(?:\b(?:save|saved|saves|create|creates|created|write|writes|"
                   r"written|generate|generates|produce|produces|output|outputs|export|"
                   r"exports|name it|call it|rename|becomes|will be|for example|such as|"
                   r"like|place|put|copy|drop|examples?\W*:)|\be\.g\.)[^`]{0,30}$)", re.I)
# the prose before a path tells the agent to open, read or run that file
_DIRECTED = re.compile(r"\b(?:see|read|reads|load|loads|consult|refer to|open|run|runs|"
                       r"execute|follow|use|uses|check|in|at|from)\b[^`]{0,30}$", re.I)
_BEFORE = 80  # characters of prose before a span that say what it is (the patterns end at $)


def _made_or_example(line: str, span: markdown.Span) -> bool:
    """Whether the prose just before a path says it is made (``save it as `x` ``) or only an
    example of a name (``e.g. `references/aws.md` ``, ``**Example**: `scripts/x.py` ``). Only
    the few words before the span are read: linear in the line, however many spans it has."""
    return bool(_MADE.search(line[max(0, span.start - _BEFORE):span.start]))


def _directed(line: str, span: markdown.Span) -> bool:
    """Whether the prose just before a path sends the agent to it (``see `x` ``, ``read `x`
    first``, ``the template in `x` ``): a missing file there is a defect; a path merely
    mentioned (``A `scripts/rotate_pdf.py` script would help``) is a warning."""
    return bool(_DIRECTED.search(line[max(0, span.start - _BEFORE):span.start]))


# the prose before an inline command says the file is started as a program, not shorthand
_AS_PROGRAM = re.compile(r"\b(?:as an? (?:program|executable|command)|directly|standalone|"
                         r"executable)\b[^`]{0,30}$", re.I)


def _as_program(line: str, span: markdown.Span) -> bool:
    """Whether the prose just before an inline command claims the file runs as a program
    (``or run it as a program: `scripts/x.py ...` ``): that claim needs the executable bit."""
    return bool(_AS_PROGRAM.search(line[max(0, span.start - _BEFORE):span.start]))


def _word(span: str) -> str:
    """One inline code span read as the one word it is: its quotes removed, as a shell reads
    them (`` `scripts/x.py"` `` and `` `"scripts/x.py"` `` are ``scripts/x.py``)."""
    if len(span) > 4096:
        return span
    words = [t for t in tokens(span) if not t.op]
    return words[0].text if len(words) == 1 else span


_PROMPT = re.compile(r"^\s*\$ (.*)$")


_PROMPTED = re.compile(r"^[^\S\n]*\$ \S", re.M)
_PLAIN_PATH = re.compile(r"^[\w.$/{}~-]+$")
_SETUP = re.compile(r"^\s*+(?:cd|pushd|mkdir|cp|mv|touch|ln|export)\s")


_CONTINUED = re.compile(r"^\s*> ?(.*)$")


def _console_commands(code: str) -> str | None:
    """The commands of a console session (``$ `` lines, prompts removed, and the ``> ``
    lines that continue one: after a line ending in a backslash, ``|``, ``&&`` or ``||``),
    in place: other lines blank, so line numbers hold. None when the block has no prompt
    (an unlabelled fence is then output or a listing, not commands)."""
    lines = code.split("\n")
    if not any(_PROMPT.match(ln) for ln in lines):
        return None
    out: list[str] = []
    more = False  # the last command line kept asks for another
    for ln in lines:
        m = _PROMPT.match(ln)
        c = _CONTINUED.match(ln) if m is None and more else None
        kept = m.group(1) if m else c.group(1) if c else None
        out.append(kept if kept is not None else "")
        more = kept is not None and kept.rstrip().endswith(("\\", "|", "&&", "||"))
    return "\n".join(out)


def _read(path: Path) -> Interface | None:
    try:
        if path.stat().st_size > MAX_SCRIPT_BYTES:
            return None
        source = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return read_interface(source, path.suffix)


def static_check(skill: Skill) -> list[StaticFinding]:
    """Every S0 finding of a skill, SKILL.md's first, then its reference files', in order.
    Never raises: an unreadable reference file is passed over."""
    checker = _Checker(skill)
    try:
        linked = checker.document(skill.body, SKILL_FILE, skill.body_offset, None)
    except RecursionError:
        return checker.findings
    first: dict[str, int] = {}  # each reference file once, with the first line linking it
    for via, rel in linked:
        first.setdefault(rel, via)
    for rel, via in first.items():
        path = checker.root / rel
        try:
            if path.stat().st_size > MAX_REFERENCE_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        try:
            checker.document(text, rel, 0, via)
        except RecursionError:
            continue
    checker.findings += deep_check(checker.root, checker.ran, checker.findings)  # their code
    try:  # what SKILL.md and its references rely on: tables, guides, data resources
        named = check_resources(checker, skill, first)
    except RecursionError:
        named = []
    files = [SKILL_FILE, *first, *named]
    return sorted(checker.findings, key=lambda f: (
        files.index(f.file) if f.file in files else len(files), f.file, f.line))
