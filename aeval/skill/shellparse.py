"""What a documented shell block does, read without running it: its simple commands, and of
each the program, the arguments, the redirections and the variables it assigns. Pure.

This is a reader's approximation of bash, enough to answer the doc test's questions (which
block could have produced the file this one reads? which command runs a file of the skill?),
never a shell: quotes, backslashes, comments, ``$( ... )``, subshells, pipelines, ``&&`` /
``||`` lists, line continuations and here-documents (whose bodies are data, not commands) are
understood; everything else is taken word by word.

    block --tokens--> [Token] --commands--> [Command] --effects--> Effects
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath

OPERATORS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")", "\n")
REDIRECTS = ("<<<", "<<-", "<<", ">>", "&>>", "&>", ">&", "<&", ">|", ">", "<")
# programs whose first word does not end the prefix: the real command comes after them
WRAPPERS = frozenset({"sudo", "env", "time", "nice", "nohup", "timeout", "exec", "command",
                      "builtin", "stdbuf", "xvfb-run", "caffeinate", "uv", "poetry", "pipenv",
                      "npx", "bunx"})
# interpreters whose first non-option argument is the script they run
INTERPRETERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|node|deno|bun|bash|sh|zsh|dash|ksh|"
                          r"ruby|perl|php|Rscript|lua|tclsh|pwsh|tsx|ts-node|osascript)$")
# wrapper options that take the next word as their value (`timeout -k 5 60 cmd`)
_VALUED = {
    "timeout": ("-s", "-k", "--signal", "--kill-after"),
    "nice": ("-n", "--adjustment"),
    "sudo": ("-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t"),
    "stdbuf": ("-i", "-o", "-e"),
    "env": ("-u", "--unset", "-C", "--chdir"),
    "exec": ("-a",),
    "uv": ("--with", "--with-requirements", "--with-editable", "--python", "-p", "--project",
           "--directory", "--extra", "--group", "--env-file", "--package", "--index"),
    "npx": ("-p", "--package", "-c", "--call"),
}
# ---- the skill folder's spellings -----------------------------------------------------------
# Every reader (S0, the doc test, the documented-command matcher, coverage, triggers) takes
# the skill folder's spellings from here: the variable aeval sets, Claude Code's variable and
# its `{baseDir}` token, and the claude.ai install path `/mnt/skills/user|public/<name>/`.
SKILL_DIR_VARS = frozenset({"SKILL_DIR", "CLAUDE_SKILL_DIR"})
_SKILL_SPELLING = re.compile(
    r"\$(?:\{(?:SKILL_DIR|CLAUDE_SKILL_DIR)\}|(?:SKILL_DIR|CLAUDE_SKILL_DIR)(?![A-Za-z0-9_]))|"
    r"(?<![$\w])\{baseDir\}|"
    r"(?<![\w.~/-])/mnt/skills/(?:user|public)/(?P<name>[A-Za-z0-9][\w.-]*)(?=[/\s\"':;)]|$)|"
    # a marketplace's path helper or Claude Code's plugin root, then the plugin's skills
    # folder: `"$(helper plugin-dir)/skills/<name>/x.sh"`, `${CLAUDE_PLUGIN_ROOT}/skills/<name>`
    r"(?:\$\([^()\n]{1,200}\)|\$\{CLAUDE_PLUGIN_ROOT\}|\$CLAUDE_PLUGIN_ROOT)/skills/"
    r"(?P<plugin_skill>[A-Za-z0-9][\w.-]*)(?=[/\s\"':;)]|$)")
_SKILL_ROOT = re.compile(r'^"?\$SKILL_DIR(?![A-Za-z0-9_])"?/?')
MAX_SPELLING_TEXT = 4_000_000  # a longer text is left as written (linear, but bounded)


def as_skill_var(text: str, names: tuple[str, ...] = (), to: str = "$SKILL_DIR",
                 installed_to: str | None = None, variables: bool = True) -> str:
    """``text`` with every spelling of the skill folder written ``to`` (``$SKILL_DIR``):
    ``${CLAUDE_SKILL_DIR}``, ``$CLAUDE_SKILL_DIR``, ``{baseDir}``, ``${SKILL_DIR}``, and
    ``/mnt/skills/user/<name>`` or ``/mnt/skills/public/<name>`` when ``<name>`` is one of
    ``names`` (the skill's names; another skill's install path is not this skill's folder).
    Nothing else changes: no line is added or removed. ``{baseDir}`` is the folder, never a
    placeholder; ``${baseDir}`` is a variable the reader sets. ``installed_to``: what the
    install path of ``<name>`` becomes instead (coverage: the folder of that name).
    ``variables=False``: ``$SKILL_DIR`` and ``$CLAUDE_SKILL_DIR`` stay as written (bash, with
    them set, follows the skill's own assignment to them; the other spellings are the folder
    whatever the skill assigns)."""
    if len(text) > MAX_SPELLING_TEXT or not any(k in text for k in ("SKILL_DIR", "{baseDir}",
                                                                     "/skills/")):
        return text

    def sub(m: re.Match[str]) -> str:
        name = m.group("name") or m.group("plugin_skill")
        if name is None:
            if not variables and m.group(0).startswith("$"):
                return m.group(0)
            return to
        if name not in names:
            return m.group(0)
        return to if installed_to is None else installed_to
    return _SKILL_SPELLING.sub(sub, text)


def skill_root_rest(word: str, names: tuple[str, ...] = ()) -> str | None:
    """The path after the skill folder's spelling that begins ``word`` (``""`` for the folder
    itself: ``$SKILL_DIR``, ``"{baseDir}"/``); None when ``word`` does not begin with one."""
    w = as_skill_var(word.strip(), names)
    m = _SKILL_ROOT.match(w)
    return w[m.end():].strip('"') if m else None


# ---- a skill's own assignment to the folder's variable -----------------------------------
# `SKILL_DIR="$HOME/.claude/skills/gh-digest/scripts"`: from there on, in that block and the
# later ones, `$SKILL_DIR` is the skill's scripts folder, not its root
_SETS_SKILL_VAR = re.compile(
    r"(?:^|(?<=[;&|(]))[^\S\n]*(?:(?:export|readonly|declare(?:[^\S\n]+-\w+)*)[^\S\n]+)?"
    r"(?P<var>SKILL_DIR|CLAUDE_SKILL_DIR)=(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s;&|)]*)",
    re.M)
_HOME_VAR = re.compile(r"^(?:\$HOME|\$\{HOME\})(?=/|$)")
_DEFAULTED = re.compile(r"^\$\{(SKILL_DIR|CLAUDE_SKILL_DIR):?[-=][^}]*\}")
_PLACEHELD = re.compile(r"path/to\b|<[^<>\n]+>|(?<![$\w])\{[A-Za-z_][\w-]*\}|\byour[-_]|YOUR_")
AS_THE_SKILL_SETS_IT = "$SKILL_DIR_AS_THE_SKILL_SETS_IT"  # a value no reader can place


def _uses_of(var: str) -> re.Pattern[str]:
    return re.compile(rf"\$\{{{var}\}}|\${var}(?![A-Za-z0-9_])")


def _skill_var_value(value: str, names: tuple[str, ...], now: dict[str, str]) -> str:
    """What an assignment makes the folder's variable stand for, as a reader writes it:
    ``$SKILL_DIR/scripts`` for a folder of the skill (through a spelling of the skill folder,
    or a path through a folder named after the skill), the value itself for a folder
    elsewhere, `AS_THE_SKILL_SETS_IT` for one no reader can place (``$(dirname "$0")``)."""
    v = value[1:-1] if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1 \
        else value
    v = _DEFAULTED.sub(r"$\1", v)  # `${SKILL_DIR:-~/.claude/skills/x}`: aeval sets it
    v = _HOME_VAR.sub("~", v)
    for var, text in now.items():
        v = _uses_of(var).sub(lambda _m, t=text: t, v)
    v = as_skill_var(v, names)
    if _SKILL_ROOT.match(v):
        return v
    parts = PurePosixPath(v).parts
    for name in names:
        if name in parts:
            rest = parts[len(parts) - parts[::-1].index(name):]
            return "/".join(("$SKILL_DIR", *rest))
    if not v or re.search(r"[\s$`]", v.replace(AS_THE_SKILL_SETS_IT, "")):
        return AS_THE_SKILL_SETS_IT
    return v


def follow_skill_dir(code: str, names: tuple[str, ...] = (),
                     now: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
    """``code`` with each use of ``$SKILL_DIR`` / ``$CLAUDE_SKILL_DIR`` that follows the
    skill's own assignment to it written as what the skill set it to (see
    `_skill_var_value`), and what each stands for at the end (``now``: at the start, from
    earlier blocks). Without such an assignment the code is returned as it is. No line is
    added or removed."""
    now = dict(now or {})
    if len(code) > MAX_SPELLING_TEXT or ("SKILL_DIR" not in code):
        return code, now
    out, pos = [], 0
    for m in _SETS_SKILL_VAR.finditer(code):
        out.append(_substitute(code[pos:m.start()], now))
        out.append(m.group(0))
        meant = _skill_var_value(m.group("value"), names, now)
        if not _SKILL_ROOT.match(meant) and _PLACEHELD.search(as_skill_var(m.group("value"))):
            now.pop(m.group("var"), None)  # `SKILL_DIR=/path/to/skill`: the reader's install
            # of this skill, read as its root (as before any assignment)
        else:
            now[m.group("var")] = meant
        pos = m.end()
    out.append(_substitute(code[pos:], now))
    return "".join(out), now


def skill_dir_sets_in(code: str, names: tuple[str, ...], folder: str) -> str:
    """``code`` for bash, with the value of each assignment to the folder's variable that
    names the skill through its install path (``SKILL_DIR=~/.claude/skills/<name>/scripts``,
    which is not where the copy is) written as ``folder`` (the copy) and the rest: the
    block then reads the skill's files as the skill means it to. Values that spell the
    folder by its variables (``${CLAUDE_SKILL_DIR}/scripts``) already work and stay."""
    if len(code) > MAX_SPELLING_TEXT or "SKILL_DIR" not in code:
        return code

    def sub(m: re.Match[str]) -> str:
        value = m.group("value")
        meant = _skill_var_value(value, names, {})
        if "SKILL_DIR" in value or not _SKILL_ROOT.match(meant):
            return m.group(0)
        rest = meant[_SKILL_ROOT.match(meant).end():]
        new = shlex.quote(folder + ("/" + rest if rest else ""))
        return m.group(0)[:m.start("value") - m.start()] + new
    return _SETS_SKILL_VAR.sub(sub, code)


def _substitute(text: str, now: dict[str, str]) -> str:
    for var, value in now.items():
        text = _uses_of(var).sub(lambda _m, v=value: v, text)
    return text


RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!",
                      "{", "}", "esac"})
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=")
_EXT = re.compile(r"\.[A-Za-z0-9]{1,10}$")
# the variables every shell has, which no block of the skill sets
AMBIENT = frozenset({"HOME", "PATH", "PWD", "OLDPWD", "USER", "SHELL", "TMPDIR", "LANG",
                     "LC_ALL", "TERM", "SKILL_DIR", "CLAUDE_SKILL_DIR", "RANDOM", "SECONDS",
                     "LINENO", "BASH_SOURCE", "HOSTNAME", "UID", "EUID", "PPID", "IFS", "OSTYPE",
                     "BASH_VERSION", "PIPESTATUS", "CI"})
OUTPUT_FLAGS = frozenset({"-o", "--output", "--out", "--outdir", "--out-dir", "--output-dir",
                          "--output-file", "--outfile", "-O", "--dest", "--destination",
                          "--target-dir", "--save", "--save-to", "--export", "--log-file",
                          "-d", "--directory", "-C", "-P", "--prefix"})


@dataclass(frozen=True)
class Token:
    """A word (quotes removed, ``raw`` as written) or an operator, with its 0-based line."""

    text: str
    raw: str
    op: bool
    line: int


def tokens(code: str) -> list[Token]:
    """The words and operators of ``code``; a here-document's body is skipped (it is data);
    an unclosed quote ends the word at the end of the text."""
    out: list[Token] = []
    i, n, line = 0, len(code), 0
    pending_heredocs: list[tuple[str, bool]] = []  # (delimiter, strip tabs)
    expect_delim: str | None = None  # the operator just read was << or <<-
    while i < n:
        c = code[i]
        if c == "\\" and i + 1 < n and code[i + 1] == "\n":  # a line continuation
            i += 2
            line += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if c == "#":
            while i < n and code[i] != "\n":
                i += 1
            continue
        if c == "\n":
            out.append(Token("\n", "\n", True, line))
            i += 1
            line += 1
            for delim, strip in pending_heredocs:  # skip each here-document's body
                while i < n:
                    j = code.find("\n", i)
                    end = n if j < 0 else j
                    body_line = code[i:end]
                    i = end + 1 if j >= 0 else n
                    line += 1
                    if (body_line.lstrip("\t") if strip else body_line).rstrip("\r") == delim:
                        break
            pending_heredocs.clear()
            continue
        op = next((o for o in (*REDIRECTS, *OPERATORS) if code.startswith(o, i)), None)
        if op is not None:
            out.append(Token(op, op, True, line))
            i += len(op)
            expect_delim = op if op in ("<<", "<<-") else None
            continue
        # a word: up to an unquoted blank or operator character
        start, text, depth = i, [], 0
        while i < n:
            c = code[i]
            if depth == 0 and (c in " \t\r\n;&|<>" or (c in "()" and not text)):
                break
            if depth == 0 and c == ")":
                break
            if c == "\\" and i + 1 < n:
                if code[i + 1] == "\n":
                    i += 2
                    line += 1
                    continue
                text.append(code[i + 1])
                i += 2
                continue
            if c == "'":
                j = code.find("'", i + 1)
                j = n if j < 0 else j
                chunk = code[i + 1:j]
                line += chunk.count("\n")
                text.append(chunk)
                i = j + 1
                continue
            if c == '"':
                j = i + 1
                while j < n and code[j] != '"':
                    j += 2 if code[j] == "\\" and j + 1 < n else 1
                chunk = code[i + 1:j]
                line += chunk.count("\n")
                text.append(re.sub(r'\\(["\\$`])', r"\1", chunk))
                i = j + 1
                continue
            if c == "$" and code.startswith("$(", i):
                depth += 1
                text.append("$(")
                i += 2
                continue
            if c == "(" and depth:
                depth += 1
            elif c == ")" and depth:
                depth -= 1
            elif c == "\n":
                line += 1
            text.append(c)
            i += 1
        word = "".join(text)
        raw = code[start:i]
        if raw.isdigit() and i < n and code[i] in "<>":
            continue  # `2>`: a file descriptor, part of the redirection
        if expect_delim is not None:
            pending_heredocs.append((word, expect_delim == "<<-"))
            expect_delim = None
        out.append(Token(word, raw, False, line))
    return out


@dataclass
class Command:
    """One simple command: ``argv`` (assignments and redirections removed), the variables it
    assigns, its redirection targets, its line (0-based) and whether it runs in a subshell
    ``( ... )`` (whose ``cd`` does not outlast it) or in a pipeline."""

    argv: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    assigns: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    line: int = 0
    subshell: bool = False
    piped: bool = False
    pipeline: int = 0  # commands joined by `|` share this number
    # the 0-based line each word (argv, input redirection) is first written on: a command
    # continued over lines (`\`, a console's `> `) names a path on a later line than its own
    word_lines: dict[str, int] = field(default_factory=dict)

    @property
    def program(self) -> str | None:
        """The program this command runs, wrappers (``sudo``, ``env``, ``timeout 60``) and
        their options skipped."""
        words = self.target_argv()
        return words[0] if words else None

    def target_argv(self) -> list[str]:
        """argv from the real program on: ``timeout 60 env A=1 python3 x.py`` ->
        ``python3 x.py``."""
        return self._unwrap()[0]

    def _unwrap(self) -> tuple[list[str], bool]:
        """target_argv, and whether ``uv run`` runs it (``uv run x.py`` runs x.py with
        Python: the file needs no executable bit)."""
        words = list(self.argv)
        uv = False
        while words and PurePosixPath(words[0]).name in WRAPPERS:
            name = PurePosixPath(words[0]).name
            words = words[1:]
            if name in ("uv", "poetry", "pipenv"):
                if words and words[0] == "run":
                    words = words[1:]
                    uv = name == "uv"
                else:
                    return [name, *words], False
            if name == "command" and words[:1] in (["-v"], ["-V"]):
                return [name, *words], False  # `command -v python3` looks a program up
            while words and (words[0].startswith("-") or _ASSIGN.match(words[0])):
                flag = words.pop(0)
                if flag in _VALUED.get(name, ()):
                    words = words[1:]
            if name == "timeout" and words and re.match(r"^\d+(\.\d+)?[smhd]?$", words[0]):
                words = words[1:]
        return words, uv

    def runs_directly(self) -> bool:
        """Whether the file `script` names is started by the kernel (it needs the executable
        bit and a usable interpreter line): ``./scripts/x.py``, ``$SKILL_DIR/bin/tool``; not
        when an interpreter runs it (``python3 x.py``, ``bash x.sh``, ``node x.js``, ``npx
        tsx x.ts``, ``deno run x.ts``) nor ``uv run x.py`` (uv gives a ``.py`` file to
        Python; any other file it starts as a program)."""
        words, uv = self._unwrap()
        script, _ = self.script()
        if script is None or words[:1] != [script]:
            return False
        return not (uv and PurePosixPath(script).suffix in (".py", ".pyw"))

    def script(self) -> tuple[str | None, list[str]]:
        """The file this command runs and its arguments: the program itself when it names a
        path (``./run.sh a``, ``scripts/x.py a``), or the script an interpreter is given
        (``python3 -u scripts/x.py a``). ``(None, [])`` for ``python3 -m mod``, ``-c`` code,
        or a program looked up on PATH."""
        words = self.target_argv()
        if not words:
            return None, []
        prog = words[0]
        if INTERPRETERS.match(PurePosixPath(prog).name):
            rest = words[1:]
            while rest and rest[0].startswith("-"):
                if rest[0] in ("-m", "-c", "-e", "--eval", "-"):
                    return None, []
                rest = rest[1:]
            if rest and rest[0] == "run" and PurePosixPath(prog).name in ("deno", "bun"):
                rest = rest[1:]
                while rest and rest[0].startswith("-"):  # `deno run --allow-read x.ts`
                    rest = rest[1:]
            return (rest[0], rest[1:]) if rest else (None, [])
        if "/" in prog:
            return prog, words[1:]
        return None, []


def commands(code: str) -> list[Command]:
    """The simple commands of a block, in order."""
    out: list[Command] = []
    cur = Command()
    depth = 0
    redirect: str | None = None
    piped_next = False
    pipeline = 0

    def flush(pipe: bool = False) -> None:
        nonlocal cur, piped_next, pipeline
        if cur.argv or cur.assigns or cur.writes or cur.reads:
            cur.piped = cur.piped or pipe
            cur.pipeline = pipeline
            out.append(cur)
        if not pipe:
            pipeline += 1
        cur = Command(subshell=depth > 0, piped=piped_next)

    for tok in tokens(code):
        if not cur.argv and not cur.assigns:
            cur.line = tok.line
        if redirect is not None and not tok.op:
            if redirect.startswith(("<<", "<&")):
                pass  # a here-document delimiter, or a descriptor
            elif redirect.startswith("<"):
                cur.reads.append(tok.text)
                cur.word_lines.setdefault(tok.text, tok.line)
            elif not tok.text.startswith("&") and not tok.text.isdigit():
                cur.writes.append(tok.text)
            redirect = None
            continue
        if tok.op:
            # a redirection with no word after it (`<slug> && cp ...`: a placeholder read as
            # `<` and `>`) is bash's syntax error: the next command's first word is no target
            redirect = None
            if tok.text in REDIRECTS:
                redirect = tok.text
                continue
            if tok.text == "(":
                flush()
                depth += 1
                cur.subshell = True
                continue
            if tok.text == ")":
                flush()
                depth = max(0, depth - 1)
                cur.subshell = depth > 0
                continue
            pipe = tok.text in ("|", "|&")
            piped_next = pipe
            flush(pipe)
            piped_next = False
            continue
        if not cur.argv and not cur.assigns and tok.text in RESERVED and tok.raw == tok.text:
            continue  # `if`, `then`, `do`, `{`: the command follows
        m = _ASSIGN.match(tok.text)
        if m and not cur.argv:
            cur.assigns.append(m.group(1))
            continue
        cur.argv.append(tok.text)
        cur.raw.append(tok.raw)
        cur.word_lines.setdefault(tok.text, tok.line)
    flush()
    return out


def path_like(word: str) -> bool:
    """A word that names a file or folder: it has a slash or a file extension; no URL, no
    option, no variable other than $SKILL_DIR, no glob."""
    if not word or word.startswith("-") or "://" in word or word.startswith(("$(", "`")):
        return False
    if any(c in as_skill_var(word) for c in "*?[]{}<>|;`\n"):
        return False
    rest = re.sub(r"\$\{?SKILL_DIR\}?/?", "", as_skill_var(word))
    if "$" in rest:
        return False
    return "/" in word or (bool(_EXT.search(word)) and not re.fullmatch(r"[\d.]+", word))


def _plain(word: str) -> bool:
    """A word that is a literal path (no variable but $SKILL_DIR, no glob, no descriptor)."""
    word = as_skill_var(word)
    rest = re.sub(r"\$\{?SKILL_DIR\}?/?", "", word)
    return bool(word) and "$" not in rest and not any(c in word for c in "*?[]{}`&") \
        and "://" not in word


def norm(path: str) -> str:
    """A path as the doc test compares paths: ``$SKILL_DIR/``, ``./`` and a trailing slash
    removed, ``a//b`` collapsed."""
    p = re.sub(r"^\$\{?SKILL_DIR\}?/?", "", as_skill_var(path.strip()))
    while p.startswith("./"):
        p = p[2:]
    p = re.sub(r"/+", "/", p).rstrip("/")
    return p or "."


def related(a: str, b: str) -> bool:
    """The same path, or one inside the other (a block that made ``out/`` made ``out/x``)."""
    if a == b:
        return True
    pa, pb = PurePosixPath(a).parts, PurePosixPath(b).parts
    short, long_ = (pa, pb) if len(pa) <= len(pb) else (pb, pa)
    return bool(short) and long_[:len(short)] == short


@dataclass
class Effects:
    """What a block leaves behind for later blocks, and what it takes from earlier ones."""

    writes: set[str] = field(default_factory=set)  # files or folders it creates or changes
    names: set[str] = field(default_factory=set)  # every path it names (not run as a program)
    runs: set[str] = field(default_factory=set)  # files it runs
    sets: set[str] = field(default_factory=set)  # variables it assigns or exports
    exports: set[str] = field(default_factory=set)  # variables later processes inherit
    uses: set[str] = field(default_factory=set)  # variables it reads that it did not set
    cd: str | None = None  # where a `cd` outside any subshell leaves the reader's shell


def _flag_values(argv: list[str], flags: frozenset[str]) -> list[str]:
    out = []
    for i, w in enumerate(argv):
        if "=" in w and w.split("=", 1)[0] in flags:
            out.append(w.split("=", 1)[1])
        elif w in flags and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            out.append(argv[i + 1])
    return out


def effects(code: str) -> Effects:
    """The block's writes, named paths, runs, variables and lasting ``cd``."""
    eff = Effects()
    for cmd in commands(code):
        eff.sets.update(cmd.assigns)
        argv = cmd.target_argv()
        prog = PurePosixPath(argv[0]).name if argv else ""
        for raw in cmd.raw:
            for v in _VAR.findall(raw):
                if v not in eff.sets and v not in AMBIENT:
                    eff.uses.add(v)
        eff.writes.update(norm(w) for w in cmd.writes if _plain(w))
        script, _ = cmd.script()
        if script is not None:
            eff.runs.add(norm(script))
        args = [a for a in argv[1:] if not a.startswith("-")]
        if prog in ("export", "declare", "typeset", "local", "readonly", "read"):
            named = {_ASSIGN.match(a.split("=", 1)[0] + "=").group(1) for a in args
                     if _ASSIGN.match(a.split("=", 1)[0] + "=")}
            eff.sets.update(named)
            if prog == "export" or (prog == "declare" and "-x" in argv):
                eff.exports.update(named)
            continue
        if prog == "for" and args:
            eff.sets.add(args[0])
        if prog in ("cd", "pushd") and not cmd.subshell:
            target = args[0] if args else "~"
            eff.cd = None if norm(target) in (".", "") or skill_root_rest(target) == "" \
                else target
        made: list[str] = []
        if prog in ("mkdir", "touch", "tee"):
            made += args
        elif prog in ("cp", "mv", "ln", "install", "rsync", "scp") and len(args) >= 2:
            made.append(args[-1])
        elif prog == "git" and len(args) >= 2 and args[0] == "clone":
            made.append(args[2] if len(args) > 2 else
                        PurePosixPath(args[1]).name.removesuffix(".git"))
        made += _flag_values(argv, OUTPUT_FLAGS)
        eff.writes.update(norm(w) for w in made if _plain(w))
        for w in [*argv[1:], *cmd.reads]:
            value = w.split("=", 1)[1] if w.startswith("--") and "=" in w else w
            if path_like(value) and (script is None or norm(value) != norm(script)):
                eff.names.add(norm(value))
    return eff
