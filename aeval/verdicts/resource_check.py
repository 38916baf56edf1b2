"""What SKILL.md and its reference files rely on, checked deeply: part of the static check
(S0, zero-key, before anything runs), reported as the same `StaticFinding`s.

- **calls** (`call_problems`): a documented call of the skill's own script against what its
  parser demands (`aeval.skill.script_interface.Usage`): an option it requires
  (``required=True``) or a positional it requires that the call lacks, a value outside an
  option's ``choices``. A placeholder value is no value (``--format <fmt>``); a call with
  ``--help`` (or ``--version``) is exempt; a call that passes its words through a variable
  (``"$@"``, ``$ARGS``) or a placeholder (``[options]``, ``...``) is unknown, and so is a call
  with no argument at all (the doc test reads that as the reader's context, not a rejection).
  What a call lacks is read from a whole command only (a fenced block's: a prose span quotes
  a fragment); a value outside ``choices`` is wrong wherever it is written.
- **resources** (`check_resources`): every JSON, YAML and TOML file the skill ships is
  parsed (bounded in size). A corrupt one is a defect when the skill relies on it (a script
  of the skill names it, or SKILL.md or a reference file names it): the finding is on that
  line and names the file's line and column of the error; else a warning on the file
  itself. Not findings: a file named or documented as broken on purpose (``invalid.json``,
  ``malformed`` in the line that names it), a template (``{{ }}``, ``{% %}``), JSON with
  comments or trailing commas (tsconfig-style), an empty file (one to fill), YAML tags
  aeval does not construct. Under a test folder a corrupt file is at most a warning.
- **guides** (`check_resources`): the reference files SKILL.md names in inline code (not
  only those it links) are read like linked ones; a file a row of a SKILL.md table names
  (``| Python | `references/python.md` |``) is checked like a link (a defect when missing,
  unless the table lists outputs or examples); and a file a reference file's prose sends the
  agent to (``see `forms.md` ``, ``read `advanced.md` first``, ``load `references/x.md` ``)
  must be there, from the reference's own folder or the skill's root. A mere mention in a
  reference file's prose is not read (it names the reader's files as often as the
  skill's), nor are common project documents (``README.md``, ``CHANGELOG.md``, ...) or a
  file the prose says is the reader's (``your``, ``the project's``).
"""

from __future__ import annotations

import os
import posixpath
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from aeval import bounded_json
from aeval.skill import markdown
from aeval.skill.script_interface import Interface, Usage
from aeval.skill.shell_blocks import counter_example, generic_example, placeholder
from aeval.skill.shellparse import effects, tokens
from aeval.skill.skill_md import SKILL_FILE, Skill
from aeval.verdicts.doctest import own_file

MAX_DATA_BYTES = 2_000_000  # a larger resource is not parsed
MAX_DATA_FILES = 500
MAX_SOURCE_BYTES = 1_000_000  # a larger script is not searched for what it loads
MAX_PARSED_BYTES = 20_000_000  # all resources of one skill together: the rest are not parsed
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when there
DATA_SUFFIXES = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".toml": "TOML"}
SOURCE_SUFFIXES = (".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".mts",
                   ".rb", ".pl", ".go", ".rs", ".java", ".kt", ".php", ".lua", ".r", ".R",
                   ".ps1", ".swift", ".cs")
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
              ".pytest_cache", ".ruff_cache", "dist", "build", ".aeval"}
_TEST_DIRS = {"tests", "test", "__tests__", "testdata", "fixtures", "spec", "specs"}
# a name or a line that says the file is broken on purpose (a validator's sample input)
_ON_PURPOSE = re.compile(r"(?<![a-z])(?:in-?valid|broken|bad|malformed|corrupt(?:ed)?|errors?|"
                         r"fail(?:s|ing|ure)?|wrong|bogus|garbage|truncated|unparsable|"
                         r"syntax[-_ ]error|negative)(?![a-z])", re.I)
_TEMPLATE = re.compile(r"\{\{|\{%|<%|\$\{\{|\{#")
_JSON_AT = re.compile(r"line (\d+) column (\d+)")
_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")
_TOML_AT_END = re.compile(r"\(at end of document\)")


# ---- calls ------------------------------------------------------------------------------------

_METAVAR_VALUE = re.compile(r"^(?:[A-Z][A-Z0-9_-]*|value|val|fmt|format|type|mode|choice|"
                            r"option|opt|string|str|name|level|kind|style|x)$")


def _literal(value: str) -> bool:
    """Whether a word is a value as written (not a placeholder, a metavar such as ``FORMAT``
    or ``fmt``, a variable, a glob, usage notation)."""
    return bool(value) and not placeholder(value) and not value.startswith("-") and not any(
        c in value for c in "$`*?[]{}<>|…") and "..." not in value \
        and not _METAVAR_VALUE.match(value)


def _resolve(option: str, known: frozenset[str] | set[str], abbreviations: bool) -> str | None:
    if option in known:
        return option
    if abbreviations and option.startswith("--"):
        hits = [o for o in known if o.startswith(option)]
        return hits[0] if len(hits) == 1 else None
    return None


def _choice_problems(iface: Interface, rel: str, args: list[str]) -> Iterator[str]:
    for i, word in enumerate(args):
        if word == "--":
            return
        if not word.startswith("-"):
            continue
        opt, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if not eq:
            value = args[i + 1] if i + 1 < len(args) else ""
        opt_ = _resolve(opt, set(iface.choices), iface.abbreviations)
        if opt_ is None or not _literal(value):
            continue
        allowed = iface.choices[opt_]
        if value not in allowed:
            where = f" ({rel} line {iface.choice_lines[opt_]})" if opt_ in iface.choice_lines \
                else ""
            yield (f"documents {opt} {value} for {rel}, whose {opt_} accepts only "
                   f"{', '.join(sorted(allowed))}{where}")


_SKILL_PATH = re.compile(r"^\$\{?[A-Za-z_]\w*\}?/\S+$")  # `$SKILL_DIR/assets/x.json`: one word


def _lacks(iface: Interface, rel: str, args: list[str]) -> Iterator[str]:
    """What a whole call lacks of what the script's parser requires (nothing when unknown)."""
    usages = iface.usages or {}
    main = usages.get(None)
    if main is None or not args:
        return
    exits = set().union(*(u.exits for u in usages.values()))
    if any(a.split("=", 1)[0] in exits for a in args):
        return
    if main.argc is not None:  # a script that counts its words (sys.argv, $#)
        yield from _count(main.argc, rel, args)
        return
    chain: list[Usage] = [main]
    usage, seen, positional, i, rest = main, set(), 0, 0, False
    while i < len(args):
        word = args[i]
        i += 1
        if not rest and word == "--":
            rest = True
            continue
        if not rest and word.startswith("-") and len(word) > 1 \
                and not re.match(r"^-\d", word):
            opt, eq, _ = word.partition("=")
            known = usage.flags | usage.valued
            found = _resolve(opt, known, iface.abbreviations)
            if found is None:
                return  # an option this parser's reading does not know: unknown
            seen.add(found)
            if found in usage.valued and not eq:
                i += 1  # its value
            continue
        if ("$" in word and not _SKILL_PATH.match(word)) or word.startswith("[") \
                or any(c in word for c in "`*?…") or "..." in word:
            return  # words from a variable, a glob, "[options]": what they hold is unknown
        if usage.subcommands and len(chain) == 1:
            sub = usages.get(word)
            if sub is None:
                return  # an action it rejects is reported as such
            usage = sub
            chain.append(sub)
            continue
        positional += 1
    for u in chain:
        for spellings, line in u.required:
            if not seen & set(spellings):
                yield (f"runs {rel} without {spellings[-1]}, which it requires "
                       f"({rel} line {line}: required=True)")
    last = chain[-1]
    if last.positionals is not None and not last.subcommands and positional < last.positionals:
        name, line = last.names[min(positional, len(last.names) - 1)] if last.names \
            else ("an argument", 0)
        yield (f"runs {rel} with {positional} of the {last.positionals} positional "
               f"argument(s) it requires: {name} is missing" +
               (f" ({rel} line {line})" if line else ""))


def _count(argc: tuple[int, int | None, int, str], rel: str, args: list[str]) -> Iterator[str]:
    """A call of a script that counts its words (every word counts, options too)."""
    least, most, line, test = argc
    if any(a in ("-h", "--help") or ("$" in a and not _SKILL_PATH.match(a)) or a.startswith("[")
           or any(c in a for c in "`*?…") or "..." in a for a in args):
        return
    n = len(args)
    if n < least or (most is not None and n > most):
        want = f"exactly {least}" if most == least else f"at least {least}" if n < least \
            else f"at most {most}"
        yield (f"runs {rel} with {n} argument(s), but it exits unless given {want} "
               f"({rel} line {line}: {test})")


def call_problems(iface: Interface, rel: str, args: list[str], whole: bool = True) -> list[str]:
    """What a documented call of ``rel`` (``args``: its words after the script) gets wrong.
    What it lacks is read only from a ``whole`` command (a block's, not a prose span's: prose
    quotes fragments, ``run `x.py --important` on the raw files``)."""
    if iface.usages is None and not iface.choices:
        return []
    out = list(_choice_problems(iface, rel, args))
    if whole:
        out += _lacks(iface, rel, args)
    return out


# ---- resources --------------------------------------------------------------------------------

def _data_files(root: Path, left_out: list[str] | None) -> list[str]:
    skip = set(left_out or ())
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath).relative_to(root).as_posix()
        here = "" if here == "." else here + "/"
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS
                             and f"{here}{d}/" not in skip and not os.path.islink(
                                 os.path.join(dirpath, d)))
        for name in sorted(filenames):
            rel = here + name
            if PurePosixPath(name).suffix.lower() in DATA_SUFFIXES and rel not in skip:
                out.append(rel)
                if len(out) >= MAX_DATA_FILES:
                    return out
    return out


def _jsonc(text: str) -> bool:
    """Whether a JSON text parses once comments and trailing commas go (JSONC: tsconfig,
    VS Code settings): not corrupt, a dialect."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(c)
            i += 1
    cleaned = re.sub(r",(\s*[}\]])", r"\1", "".join(out))
    try:
        bounded_json.loads(cleaned)
    except ValueError:
        return False
    return True


def _json_lines(text: str) -> bool:
    """Whether a text is JSON Lines (one document a line), whatever its file name says."""
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) < 2:
        return False
    try:
        for ln in lines:
            bounded_json.loads(ln)
    except ValueError:
        return False
    return True


def parse_problem(text: str, kind: str) -> tuple[int, int, str] | None:
    """Where and why a resource of ``kind`` (JSON, YAML, TOML) does not parse: (line, column,
    message), 1-based; None when it parses, or is a dialect or template rather than corrupt."""
    if not text.strip():
        return None
    try:
        if kind == "JSON":
            bounded_json.loads(text, max_bytes=MAX_DATA_BYTES)
        elif kind == "YAML":
            for _ in yaml.compose_all(text, Loader=_YAML_LOADER):
                pass
        else:
            tomllib.loads(text)
        return None
    except bounded_json.UnreadableJson as exc:
        m = _JSON_AT.search(str(exc))
        if m is None or _TEMPLATE.search(text) or _jsonc(text) or _json_lines(text):
            return None  # over a bound (depth, digits), a template, JSONC or JSON Lines
        message = str(exc).split(":", 1)[0]
        return int(m[1]), int(m[2]), message
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is None or _TEMPLATE.search(text):
            return None
        return mark.line + 1, mark.column + 1, str(exc.problem or exc.context or "not YAML")
    except yaml.YAMLError:
        return None
    except tomllib.TOMLDecodeError as exc:
        if _TEMPLATE.search(text):
            return None
        m = _TOML_AT.search(str(exc))
        message = _TOML_AT.sub("", _TOML_AT_END.sub("", str(exc))).strip()
        if m is None:
            return text.count("\n") + 1, 1, message
        return int(m[1]), int(m[2]), message
    except (RecursionError, MemoryError, ValueError):
        return None


def _names_in(text: str, rel: str) -> int | None:
    """The first line (1-based) of ``text`` that names ``rel`` (its path, or its file name
    as a word of its own)."""
    base = re.escape(PurePosixPath(rel).name)
    rx = re.compile(rf"(?<![\w.-]){base}(?![\w-]|\.\w)")
    for n, line in enumerate(text.split("\n"), 1):
        if rx.search(line):
            return n
    return None


def _sources(root: Path, docs: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """(rel, text) of what may rely on a resource: SKILL.md and its reference files first,
    then the skill's scripts."""
    yield from docs
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = Path(dirpath) / name
            try:
                if path.is_symlink() or path.stat().st_size > MAX_SOURCE_BYTES:
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            count += 1
            if count > MAX_DATA_FILES:
                return
            yield path.relative_to(root).as_posix(), text


def _corrupt(checker: Any, skill: Skill, docs: list[tuple[str, str]]) -> None:
    root = checker.root
    sources: list[tuple[str, str]] | None = None
    budget = MAX_PARSED_BYTES
    for rel in _data_files(root, skill.left_out):
        if _ON_PURPOSE.search(rel):
            continue
        path = root / rel
        try:
            if path.is_symlink() or path.stat().st_size > MAX_DATA_BYTES:
                continue
            raw = path.read_bytes()
        except OSError:
            continue
        budget -= len(raw)
        if budget < 0:
            return
        kind = DATA_SUFFIXES[PurePosixPath(rel).suffix.lower()]
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            continue  # another encoding: what reads it says how; not aeval's to guess
        at = parse_problem(text, kind)
        if at is None:
            continue
        line, column, message = at
        what = f"is not valid {kind}: line {line} column {column}: {message}"
        if sources is None:
            sources = list(_sources(root, docs))
        relied = None
        for src, src_text in sources:
            if src == rel:
                continue
            n = _names_in(src_text, rel)
            if n is not None:
                relied = (src, n + (skill.body_offset if src == SKILL_FILE else 0))
                src_line = src_text.split("\n")[n - 1]
                if _ON_PURPOSE.search(src_line):
                    relied = ("", 0)  # named as broken on purpose
                break
        if relied == ("", 0):
            continue
        tested = rel.split("/", 1)[0] in _TEST_DIRS
        if relied is None:
            checker.add(rel, line, None, "corrupt", rel, f"{rel} {what}", warning=True)
        else:
            src, n = relied
            checker.add(src, n, None, "corrupt", rel, f"relies on {rel}, which {what}",
                        warning=tested)


# ---- guides -----------------------------------------------------------------------------------

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_OUTPUTS = (r"output|outputs|results?|generat\w*|creat\w*|produc\w*|writes?|written|"
            r"sav(?:e|es|ed)|export\w*|examples?|e\.g|for example|such as|sample")
_NOT_THE_SKILLS = re.compile(rf"\b(?:{_OUTPUTS})\b", re.I)  # a header or lead-in: outputs
_NOT_THE_SKILLS_ROW = re.compile(rf"\b(?:{_OUTPUTS}|your)\b", re.I)  # a row: also the reader's
# the prose before a path in a reference file sends the agent to it
_SENDS = re.compile(r"\b(?:see|read|reading|load|loading|consult|refer to|follow|"
                    r"check out|continue (?:with|in)|details in|documented in|described in)\b"
                    r"[^`]{0,25}$", re.I)
# or the prose after it places it beside the reference: "listed in `feed-fields.md` next to
# this file", "`checklist.md` in this folder"
_BESIDE = re.compile(r"^[^.;`\n]{0,40}?\b(?:(?:next to|beside|alongside) (?:this|the present) "
                     r"(?:file|page|guide|document|one)|in (?:this|the same) (?:folder|"
                     r"directory))\b", re.I)
_THEIRS = re.compile(r"\b(?:your|user'?s|project'?s|repo(?:sitory)?'?s|their|its own)\b"
                     r"[^`]{0,25}$", re.I)
_PROJECT_DOCS = {"readme", "changelog", "changes", "history", "contributing", "license",
                 "licence", "agents", "claude", "gemini", "security", "code_of_conduct",
                 "todo", "skill", "notes", "plan", "design", "memory", "authors", "support",
                 "index", "summary"}
_DOC_NAME = re.compile(r"^[\w.-]+(?:/[\w.-]+)*\.(?:md|markdown|mdx)$")
_CELL_PATH = re.compile(r"(?<![\w./:-])[\w.-]+(?:/[\w.-]+)+\.[A-Za-z]\w{0,7}(?![\w/-])")
# a list item's lead-in that sends the agent to what the list names ("Load the guide for
# your language:", "Read these before editing:")
_LEAD_IN = re.compile(r"\b(?:see|read|load|consult|open|refer to|follow)\b[^`]*:\s*$", re.I)
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def _word(span: str) -> str:
    """One inline code span read as the one shell word it is (its quotes removed)."""
    if len(span) > 4096:
        return span
    words = [t for t in tokens(span) if not t.op]
    return words[0].text if len(words) == 1 else span


def _tables(prose: list[tuple[int, str]]) -> Iterator[tuple[int, str, str]]:
    """(line, text, header) of each body row of the markdown tables in ``prose``."""
    rows = list(prose)
    i = 0
    while i + 1 < len(rows):
        (_, header), (_, rule) = rows[i], rows[i + 1]
        if _TABLE_ROW.match(header) and _TABLE_RULE.match(rule):
            j = i + 2
            while j < len(rows) and rows[j][0] == rows[j - 1][0] + 1 \
                    and _TABLE_ROW.match(rows[j][1]):
                yield rows[j][0], rows[j][1], header
                j += 1
            i = j
        else:
            i += 1


def _produced(checker: Any, fences: list[markdown.Fence],
              spans: list[markdown.Span]) -> set[str]:
    out: set[str] = set()
    for f in fences:
        if counter_example(f.code, f.before):
            continue
        code = checker.block_commands(f)
        if code is not None:
            out |= effects(code).writes
    for s in spans:
        if " " in s.text.strip():
            out |= effects(s.text).writes
    return out


def _listed(prose: list[tuple[int, str]]) -> Iterator[tuple[int, str, str]]:
    """(line, text, lead-in) of each item of a list whose lead-in line sends the agent to
    what it lists (``Load the guide for your language:``)."""
    lead = ""
    for ln, text in prose:
        if _ITEM.match(text):
            if lead:
                yield ln, text, lead
        elif text.strip():  # a paragraph (or the list's end): a new lead-in or none
            lead = text if _LEAD_IN.search(text) else ""


def _table_rows(checker: Any, skill: Skill) -> None:
    """A file a SKILL.md table (or a list after a "load/read/see ...:" lead-in) names is
    checked like a link (its header, lead-in or row saying the files are outputs or
    examples: not)."""
    fences, prose = markdown.parse(skill.body, skill.body_offset)
    spans = markdown.inline_code(prose)
    produced = _produced(checker, fences, spans)
    by_line: dict[int, list[markdown.Span]] = {}
    for s in spans:
        by_line.setdefault(s.line, []).append(s)
    for line, row, header in [*_tables(prose), *_listed(prose)]:
        if _NOT_THE_SKILLS.search(header) or _NOT_THE_SKILLS_ROW.search(row):
            continue
        words = []
        for s in by_line.get(line, []):
            text = s.text.strip()
            if " " in text or placeholder(text):
                continue
            words.append(_word(text))
        plain = re.sub(r"`[^`]*`|\[[^\]]*\]\([^)]*\)|https?://\S+", " ", row)
        words += [m[0] for m in _CELL_PATH.finditer(plain)
                  if m[0].split("/", 1)[0] in checker.top]
        for word in words:
            if generic_example(word):
                continue
            checker.reference(word, line, SKILL_FILE, None, produced)


def _named_guides(checker: Any, skill: Skill, visited: set[str]) -> list[tuple[str, int]]:
    """The markdown files SKILL.md names in inline code that are there and were not linked:
    (path, the first SKILL.md line naming it)."""
    _, prose = markdown.parse(skill.body, skill.body_offset)
    out: dict[str, int] = {}
    for s in markdown.inline_code(prose):
        text = s.text.strip()
        if " " in text or placeholder(text):
            continue
        rel = own_file(_word(text), checker.root, checker.names)
        if rel and _DOC_NAME.match(rel) and rel != SKILL_FILE and rel not in visited \
                and (checker.root / rel).is_file():
            out.setdefault(rel, s.line)
    return list(out.items())


def _shipped_names(root: Path) -> set[str]:
    """The file names anywhere in the skill (a sibling named bare may sit in another folder
    of it: the agent finds it there)."""
    names: set[str] = set()
    for _, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        names.update(filenames)
        if len(names) > 10_000:
            break
    return names


def _sends(checker: Any, text: str, rel: str, via: int, shipped: set[str]) -> None:
    """A file a reference file's prose sends the agent to must be there."""
    base = str(PurePosixPath(rel).parent)
    fences, prose = markdown.parse(text, 0)
    lines = dict(prose)
    spans = markdown.inline_code(prose)
    produced: set[str] | None = None
    for s in spans:
        word = _word(s.text.strip())
        if " " in word or placeholder(word) or not _DOC_NAME.match(word):
            continue
        line = lines[s.line]
        before = line[max(0, s.start - 80):s.start]
        after = line[s.start + len(s.text) + 2:][:80]
        if not (_SENDS.search(before) or _BESIDE.search(after)) or _THEIRS.search(before) \
                or _NOT_THE_SKILLS.search(line):
            continue  # not sent to, the reader's, or an output the steps write
        if PurePosixPath(word).stem.lower() in _PROJECT_DOCS or word.startswith(("/", "~")):
            continue
        here = posixpath.normpath(posixpath.join(base, word))
        if here.startswith("..") or os.path.lexists(checker.root / here):
            continue
        if "/" in word:
            here = posixpath.normpath(word)  # from the skill's root, as SKILL.md's paths
            if here.split("/", 1)[0] not in checker.top:
                continue  # not one of the skill's folders: someone else's path
            if os.path.lexists(checker.root / here):
                continue
        elif word in shipped:
            continue  # a sibling that sits elsewhere in the skill: found by its name
        if produced is None:
            produced = _produced(checker, fences, spans)
        if any(PurePosixPath(p).name == PurePosixPath(word).name for p in produced):
            continue  # the reference's own steps write it
        checker.add(rel, s.line, via, "missing", here,
                    f"sends the agent to {word}, which the skill does not have"
                    + (f" (looked for {here})" if here != word else ""))


def check_resources(checker: Any, skill: Skill, visited: dict[str, int]) -> list[str]:
    """Add to ``checker`` (the static check's) what SKILL.md and its reference files rely on:
    the reference files SKILL.md names without linking, the files its tables and the
    reference files' directions name, and every shipped JSON/YAML/TOML resource parsed.
    ``visited``: the reference files already read, with the SKILL.md line linking each.
    Returns the reference files it read besides (for the order of the findings)."""
    _table_rows(checker, skill)
    refs = dict(visited)
    for rel, via in _named_guides(checker, skill, set(visited)):
        text = _read(checker.root / rel)
        if text is None:
            continue
        try:
            checker.document(text, rel, 0, via)
        except RecursionError:
            continue
        refs[rel] = via
    shipped = _shipped_names(checker.root)
    docs: list[tuple[str, str]] = []
    skill_text = skill.body
    docs.append((SKILL_FILE, skill_text))
    for rel, via in refs.items():
        text = _read(checker.root / rel)
        if text is None:
            continue
        docs.append((rel, text))
        try:
            _sends(checker, text, rel, via, shipped)
        except RecursionError:
            continue
    _corrupt(checker, skill, docs)
    return [rel for rel in refs if rel not in visited]


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_DATA_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
