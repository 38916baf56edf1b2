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
  line endings, a relative interpreter);
- **rejected**: a subcommand or option SKILL.md documents for the skill's own script is one
  the script does not accept (read from its argparse / click / ``sys.argv`` dispatch /
  ``case "$1"`` source, see `aeval.skill.script_interface`).

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
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field

from aeval.skill import markdown
from aeval.skill.script_interface import Interface, read_interface
from aeval.skill.shellparse import commands, effects, norm, related, skill_root_rest
from aeval.skill.skill_md import SKILL_FILE, Skill
from aeval.verdicts.doctest import counter_example, own_file, placeholder

MAX_REFERENCE_BYTES = 2_000_000
MAX_SCRIPT_BYTES = 1_000_000  # a larger script is not read for its interface
MAX_FINDINGS = 50
_METAVAR = re.compile(r"^(?:[A-Z][A-Z0-9_-]*|command|action|subcommand|cmd|args?|options?)$")


class StaticFinding(BaseModel):
    """One problem the static check found, tied to the line that names it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field(description="The skill file whose line names the problem (SKILL.md, or "
                                  "a reference file it links to).")
    line: int = Field(description="That file's line (1-based).")
    via: int | None = Field(None, description="For a reference file: the SKILL.md line that "
                                              "links to it.")
    kind: str = Field(description="missing | not_executable | rejected")
    path: str = Field(description="The skill-relative path concerned.")
    problem: str = Field(description="What is wrong, in one line.")

    def __str__(self) -> str:
        where = f"{self.file} line {self.line}"
        if self.via is not None:
            where += f" (linked from {SKILL_FILE} line {self.via})"
        return f"{where}: {self.problem}"


class _Checker:
    def __init__(self, skill: Skill):
        self.root = Path(skill.path)
        self.names = tuple(dict.fromkeys((skill.name, self.root.name)))
        self.findings: list[StaticFinding] = []
        self.seen: set[tuple[str, int, str]] = set()
        try:
            self.top = {p.name for p in self.root.iterdir() if p.is_dir()}
        except OSError:
            self.top = set()
        self.interfaces: dict[str, Interface | None] = {}

    # ---- recording ------------------------------------------------------------------------
    def add(self, file: str, line: int, via: int | None, kind: str, path: str,
            problem: str) -> None:
        key = (file, line, problem)
        if key in self.seen or len(self.findings) >= MAX_FINDINGS:
            return
        self.seen.add(key)
        self.findings.append(StaticFinding(file=file, line=line, via=via, kind=kind, path=path,
                                           problem=problem))

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
        shell = [(f.line, _console_commands(f.code) if _is_console(f) else f.code)
                 for f in fences if (f.shell or f.lang in ("console", "terminal", ""))
                 and not counter_example(f.code, f.before)]
        shell = [(ln, code) for ln, code in shell if code is not None]
        spans = [s for s in markdown.inline_code(prose)]
        for _, code in shell:
            produced |= effects(code).writes
        for s in spans:
            if " " in s.text.strip():
                produced |= effects(s.text).writes
        base = str(PurePosixPath(file).parent)  # where the document's links resolve from
        for ln, code in shell:
            self.commands_of(code, ln, file, via, produced)
        lines = dict(prose)
        for s in spans:
            text_ = s.text.strip()
            if placeholder(text_):
                continue
            if " " in text_:
                self.commands_of(text_, s.line, file, via, produced, inline=True)
            elif via is None and not _made_or_example(lines[s.line], s.text):
                # a path named in prose: in SKILL.md only (a reference file's prose is read
                # by the agent on demand and names the reader's files as often as the skill's)
                self.reference(text_, s.line, file, None, produced)
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
            self.add(file, line, via, "missing", rel,
                     f"{what} {rel}, which the skill does not have{self.near_miss(rel)}")
            return None
        return rel

    def commands_of(self, code: str, line: int, file: str, via: int | None,
                    produced: set[str], inline: bool = False) -> None:
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
            runs = script is not None and not placeholder(script)
            ran = self.reference(script, at, file, via, produced, executed=True) if runs else None
            for w in [*argv[1:], *cmd.reads]:
                if w == script:
                    continue
                value = w.split("=", 1)[1] if w.startswith("--") and "=" in w else w
                if "/" in value:
                    self.reference(value, at, file, via, produced)
            if ran is None:  # not the skill's, a placeholder, missing or made by the docs
                continue
            if cmd.runs_directly():  # not given to an interpreter (nor `uv run x.py`)
                self.startable(ran, at, file, via)
            self.interface(ran, args, at, file, via)

    def startable(self, rel: str, line: int, file: str, via: int | None) -> None:
        path = self.root / rel
        try:
            st = path.stat()
        except OSError:
            return
        if not path.is_file():
            return
        if not st.st_mode & 0o111:
            self.add(file, line, via, "not_executable", rel,
                     f"runs {rel} directly, but it is not executable (mode "
                     f"{st.st_mode & 0o777:o}; git update-index --chmod=+x {rel})")
            return
        try:
            with open(path, "rb") as fh:
                first = fh.read(256).split(b"\n", 1)[0]
        except OSError:
            return
        if not first.startswith(b"#!"):
            if path.suffix not in (".sh", ".bash", ""):
                self.add(file, line, via, "not_executable", rel,
                         f"runs {rel} directly, but it has no interpreter line (#!)")
        elif first.endswith(b"\r"):
            self.add(file, line, via, "not_executable", rel,
                     f"runs {rel} directly, but its interpreter line ends with a carriage "
                     f"return (CRLF line endings)")
        elif not first[2:].strip().startswith(b"/"):
            self.add(file, line, via, "not_executable", rel,
                     f"runs {rel} directly, but its interpreter line names a relative "
                     f"program {first[2:].strip().decode(errors='replace')!r}")

    def interface(self, rel: str, args: list[str], line: int, file: str,
                  via: int | None) -> None:
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
                     f"(it accepts: {known})")
        for a in words:
            if a == "--":
                return  # the words after it are operands, whatever they look like
            if not a.startswith("-"):
                continue
            flag = a.split("=", 1)[0]
            if iface.rejects_option(flag):
                self.add(file, line, via, "rejected", rel,
                         f"documents the option {flag} for {rel}, which does not accept it")


_MADE = re.compile(r"(?:\b(?:save|saved|saves|create|creates|created|write|writes|written|"
                   r"generate|generates|produce|produces|output|outputs|export|exports|name "
                   r"it|call it|rename|becomes|will be|e\.g\.|for example|such as|like)\b"
                   r"[^`]{0,30}$)", re.I)


def _made_or_example(line: str, span: str) -> bool:
    """Whether the prose just before a path says it is made (``save it as `x` ``) or only an
    example of a name (``e.g. `references/aws.md` ``)."""
    before, found, _ = line.partition(f"`{span}`")
    return bool(found and _MADE.search(before))


_PROMPT = re.compile(r"^\s*\$ (.*)$")


def _is_console(fence: markdown.Fence) -> bool:
    return fence.lang in ("console", "terminal", "") or bool(
        re.search(r"^\s*\$ \S", fence.code, re.M))


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
    files = [SKILL_FILE, *first]
    return sorted(checker.findings, key=lambda f: (files.index(f.file), f.line))
