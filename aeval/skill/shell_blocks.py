"""SKILL.md's shell blocks as the doc test gets them, and which of them it runs.

Reading a skill's documented steps: each block with its SKILL.md line and the prose before it
(`DocBlock`, `doc_blocks`), and the plan (`plan_blocks`): a block with a placeholder, a
console session, an example of what not to do or an install of host software is skipped with
the reason; any other block runs. Also the names a skill's own files go by (`SKILL_FOLDERS`,
`SCRIPT_EXT`, `generic_example`). Judging what a block that ran proves is
`aeval.verdicts.doctest`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from aeval.skill.shellparse import Effects, as_skill_var, commands, effects

# ---- placeholders ---------------------------------------------------------------------------

_PLACEHOLDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    # `<file>`, and words a space apart (`<team slugs>`, `<your name>`): bash would read
    # them as redirections; `<in.txt >out.txt` (blanks before `>`) is not one
    (re.compile(r"(?<![<\w])<[A-Za-z_][\w./:-]*(?: [A-Za-z_][\w./:-]*){0,5}>"),
     "angle-bracket placeholder"),
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
_BAD_COMMENT = re.compile(r"^[^\S\n]*#\s*(?:[❌✗✘🚫⛔]|(?:bad|wrong|incorrect|don'?t|do not|avoid|"
                          r"never)\b)", re.I | re.M)


@dataclass(frozen=True)
class DocBlock:
    """A SKILL.md shell block as the doc test gets it: the SKILL.md line of its first line of
    code (0: unknown), its code, the prose before it, and the sentences of SKILL.md that give
    a non-zero exit status as an answer (`result_exits`)."""

    line: int
    code: str
    before: str = ""
    results: tuple[str, ...] = ()


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
# programs that serve until the reader stops them (a dev server, an inspector, a watcher):
# the program's name, or its package (`npx @modelcontextprotocol/inspector`), first
_SERVERS = re.compile(
    r"^(?:@modelcontextprotocol/inspector(?:@\S*)?|mcp-inspector|http-server|live-server|"
    r"serve|uvicorn|gunicorn|hypercorn|daphne|nodemon|browser-sync|json-server)$")
# a program's subcommand or module that serves: `flask run`, `python -m http.server`,
# `npm run dev`, `vite` (not `vite build`), `jupyter lab`, `mkdocs serve`
_SERVING = re.compile(
    r"^(?:python[0-9.]*\s+-m\s+(?:http\.server|SimpleHTTPServer|uvicorn|flask\s+run)|"
    r"flask\s+run|fastapi\s+(?:dev|run)|streamlit\s+run|gradio\b|"
    r"jupyter(?:-|\s+)(?:lab|notebook|server)|"
    r"(?:npm|pnpm|yarn|bun)\s+(?:run\s+)?(?:dev|start|serve|watch|preview)|"
    r"vite(?:\s+(?:dev|serve|preview))?(?=\s+-|\s*$)|next\s+(?:dev|start)|nuxt\s+dev|astro\s+dev|"
    r"webpack\s+serve|hugo\s+server|jekyll\s+serve|mkdocs\s+serve|"
    r"eleventy\s+--serve|php\s+-S|rails\s+server|manage\.py\s+runserver)(?:\s|$)")
_WATCH = frozenset({"--watch", "-w", "--serve", "--reload"})


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


def serves(code: str) -> str | None:
    """The skip reason when a block starts a program that serves until the reader stops it
    (``npx @modelcontextprotocol/inspector python3 server.py``, ``npm run dev``,
    ``python -m http.server``, ``uvicorn app:app --reload``) in the foreground: run, it would
    hold the block to its timeout and say nothing of the skill. None for any other block
    (one that starts it in the background with ``&`` goes on, and runs)."""
    for cmd in commands(code):
        argv = cmd.target_argv()
        if not argv:
            continue
        name = PurePosixPath(argv[0]).name
        words = " ".join([name, *argv[1:]])
        if _SERVERS.match(argv[0]) or _SERVERS.match(name) or _SERVING.match(words) \
                or (name in ("tsc", "jest", "vitest") and _WATCH & set(argv[1:])):
            if re.search(rf"{re.escape(argv[-1])}\s*&(?!&)", code):
                continue  # started in the background: the block goes on
            shown = " ".join(argv[:3])[:60]
            return f"starts `{shown}`, which serves until the reader stops it"
    return None


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


_GENERIC_WORDS = frozenset({"example", "examples", "sample", "demo", "foo", "bar", "baz",
                            "qux", "my", "your", "some", "xxx", "placeholder", "dummy",
                            "whatever", "new", "another", "other"})
# words that name the shape of the thing, not what it does
_SHAPE_WORDS = frozenset({"script", "scripts", "file", "filename", "name", "tool", "module",
                          "program", "helper", "code"})
_GENERIC_ALONE = frozenset({"example", "foo", "bar", "baz", "placeholder", "dummy"})


def generic_example(rel: str) -> bool:
    """Whether a script's name is a generic example rather than a file (``script_name.py``,
    ``my_script.sh``, ``your_tool.js``, ``example.py``): a script's name of shape words and
    generic words only, with both (``name`` counts as either), or one of a few words that
    are nothing but an example. What a name says it does is a file: ``sample_data.py``,
    ``demo_app.py``, ``helper.py``, and any data or template (``assets/sample.csv``).
    Read only for a file the skill does not have: S0 warns, the doc test is inconclusive."""
    path = PurePosixPath(rel)
    if path.suffix not in SCRIPT_EXT:
        return False
    words = [w for w in re.split(r"[_\-.\s]+", path.stem.lower()) if w]
    if not words or not all(w in _GENERIC_WORDS or w in _SHAPE_WORDS for w in words):
        return False
    if len(words) == 1:
        return words[0] in _GENERIC_ALONE
    return any(w in _SHAPE_WORDS for w in words) and \
        any(w in _GENERIC_WORDS or w == "name" for w in words)


def placeholder(code: str) -> str | None:
    """Why ``code`` is illustrative rather than runnable (None when it looks runnable). The
    skill folder's spellings (``{baseDir}``, ``${CLAUDE_SKILL_DIR}``) are no placeholders."""
    code = as_skill_var(code)
    for rx, what in _PLACEHOLDERS:
        m = rx.search(code)
        if m:
            return f"{what} {m.group(0).strip()!r}"
    return None


def doc_blocks(fences: list, steps: list[str], prose: str = "") -> list[DocBlock]:
    """Each step with the SKILL.md block it came from (``fences``: `aeval.skill.markdown.Fence`s):
    the first block not yet used with the same code; line 0 when a step is no block's.
    ``prose``: SKILL.md without its blocks, for the exit statuses it documents."""
    results = result_exits(prose)
    used: set[int] = set()
    out = []
    for code in steps:
        match = next((i for i, f in enumerate(fences) if i not in used and f.shell
                      and f.code.strip() == code.strip()), None)
        if match is None:
            out.append(DocBlock(0, code, results=results))
            continue
        used.add(match)
        f = fences[match]
        lead = len(f.code) - len(f.code.lstrip("\n"))  # blank lines the step lost
        out.append(DocBlock(f.line + 1 + f.code[:lead].count("\n"), code, f.before, results))
    return out


# "exits 1 when it finds something", "Exit code 1 means a route failed", "`--strict`: exit 1
# on warnings as well as errors": a non-zero status the skill gives as its answer
_RESULT_EXIT = re.compile(
    r"\bexit(?:s|ing|\s+(?:code|status))?\s+(?:with\s+)?(?:(?:code|status)\s+)?"
    r"(?:[1-9]\d?|non-?zero)\b,?\s+(?:on|when|if|whenever|for|means|as soon as|to (?:signal|"
    r"say|mark|flag))\b", re.I)
# ... unless the answer is about the command line itself: then it is a rejection
_ABOUT_ARGS = re.compile(r"\busage\b|invalid|unknown (?:option|flag|command|argument)|"
                         r"bad (?:option|flag|argument)|missing (?:option|flag|argument)", re.I)


def result_exits(prose: str) -> tuple[str, ...]:
    """The sentences of ``prose`` that give a non-zero exit status as the skill's answer
    (a finding, a failed check), not as a rejection of its command line."""
    out = []
    for para in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.)\s)", prose):
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(para.split())):
            if _RESULT_EXIT.search(sentence) and not _ABOUT_ARGS.search(sentence):
                out.append(sentence[:300])
    return tuple(dict.fromkeys(out))


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
        elif (served := serves(code)) is not None:
            plan = BlockPlan(line, code, "skip", served)
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

# the folders skills keep their files in: a path under one names the skill's own file even
# when the whole folder is gone (`dist/`, `bin/`, `node_modules/` are the reader's project)
SKILL_FOLDERS = frozenset({"scripts", "references", "reference", "assets", "templates"})
SCRIPT_EXT = (".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php",
              ".R", ".lua", ".ps1")


def counter_example(code: str, before: str = "") -> bool:
    """A block shown as what not to do: a comment inside it, or the prose just before it."""
    return bool(_BAD_COMMENT.search(code) or _BAD_PROSE.search(before.strip()))
