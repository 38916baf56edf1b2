"""Reading SKILL.md the way a reader does: fenced blocks (indented ones inside list items
too), inline code spans and links in the prose, each with the line it is on. Pure: text in,
positions out.

Fences follow CommonMark where it matters for skills: a run of at least three backticks or
tildes opens a block at any indentation (a block inside a numbered list item is indented),
the first word of the info string is its language, a closing fence of the same character and
at least the same length ends it, and the block's lines lose the opening fence's indentation.
A fence that is never closed is not a block (CommonMark would run it to the end of the file,
which turns the rest of the prose into code). Inline code spans may use several backticks
(```` ``a `b` c`` ````); links are ``[text](target)``, ``![alt](target)`` and reference
definitions ``[id]: target``. A fence without a language (or ``text``) may draw a layout
tree (``├── scripts/``, or an indented listing under ``name/``): `layout_tree` reads its
entries as paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SHELL_LANGS = frozenset({"bash", "sh", "shell", "zsh"})
# Every pattern here reads untrusted text, so each is linear: no two neighbouring parts can
# match the same characters (nothing to backtrack over), and the scanners below read each
# character a bounded number of times (tests/unit/test_markdown_linear.py).
_RUN = re.compile(r"[ \t]*+(`{3,}+|~{3,}+)")
_TICKS = re.compile(r"`+")
# a link's destination after its `](`: <bracketed> or a word, an optional title, `)`
_DEST = re.compile(r"\s*+(?P<target><[^>\n]*+>|[^\s)]++)(?:\s++(?:\"[^\"\n]*+\"|'[^'\n]*+'))?+"
                   r"\s*+\)")
_DEST_WORD = re.compile(r"\s*+[^\s)]*+")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*(?P<target><[^>\n]*>|\S+)")


@dataclass(frozen=True)
class Fence:
    """One fenced block: the line of its opening fence (1-based, in the file), its language
    (lower case, '' without one), its code (the fence's indentation removed) and the prose
    lines just before it (for context such as "Don't:")."""

    line: int
    lang: str
    code: str
    indent: int
    before: str = ""

    @property
    def shell(self) -> bool:
        return self.lang in SHELL_LANGS


@dataclass(frozen=True)
class Span:
    """An inline code span or a link target in the prose, with its line (1-based)."""

    line: int
    text: str
    start: int = 0  # where the span starts in its line (an inline code span's opening tick)


def _dedent(line: str, width: int) -> str:
    i = 0
    while i < width and i < len(line) and line[i] in " \t":
        i += 1
    return line[i:]


def _fence_run(line: str) -> tuple[str, int, int] | None:
    """The fence a line opens or closes: its character, its length and where it ends (None
    when the line does not start, after blanks, with three backticks or tildes)."""
    m = _RUN.match(line)
    return (m[1][0], len(m[1]), m.end()) if m else None


def parse(text: str, line_offset: int = 0) -> tuple[list[Fence], list[tuple[int, str]]]:
    """The fenced blocks of ``text`` and its prose lines (``(line, text)``, fences removed).
    ``line_offset``: lines of the file before ``text`` (a body after frontmatter).

    Linear in the text: each line is classified once, and whether an opening fence is ever
    closed comes from the longest closing fence of each character at or after each line
    (an unclosed fence costs no scan to the end of the file)."""
    lines = text.split("\n")
    runs = [_fence_run(ln) for ln in lines]
    # a closing fence: the run and blanks only; longest[c][j]: the longest closing fence of
    # character c on line j or later
    longest = {c: [0] * (len(lines) + 1) for c in "`~"}
    for j in range(len(lines) - 1, -1, -1):
        for row in longest.values():
            row[j] = row[j + 1]
        r = runs[j]
        if r and not lines[j][r[2]:].strip(" \t") and r[1] > longest[r[0]][j]:
            longest[r[0]][j] = r[1]
    fences: list[Fence] = []
    prose: list[tuple[int, str]] = []
    since_fence = 0  # prose lines since the last fence closed
    i = 0
    while i < len(lines):
        r = runs[i]
        info = lines[i][r[2]:] if r else ""
        if r and "`" not in info and longest[r[0]][i + 1] >= r[1]:
            char, size = r[0], r[1]
            end = i + 1
            while not (runs[end] and runs[end][0] == char and runs[end][1] >= size
                       and not lines[end][runs[end][2]:].strip(" \t")):
                end += 1
            indent_text = lines[i][:len(lines[i]) - len(lines[i].lstrip(" \t"))]
            body = "\n".join(_dedent(ln, len(indent_text)) for ln in lines[i + 1:end])
            lang = (info.strip().split() or [""])[0].lower().strip("{}.")
            recent = prose[len(prose) - since_fence:] if since_fence else []
            before = "\n".join(t for _, t in recent[-3:] if t.strip())
            fences.append(Fence(line_offset + i + 1, lang, body,
                                len(indent_text.expandtabs(4)), before))
            since_fence = 0
            i = end + 1
            continue
        prose.append((line_offset + i + 1, lines[i]))
        since_fence += 1
        i += 1
    return fences, prose


def _code_spans(text: str) -> list[tuple[int, int, int]]:
    """The inline code spans of one line as ``(start, end, ticks)``: a run of backticks opens
    a span that the next run of exactly the same length closes (content between); a run that
    nothing closes ends the line's code. One pass over the runs: linear in the line."""
    runs = [(m.start(), m.end() - m.start()) for m in _TICKS.finditer(text)]
    out = []
    k = 0
    while k < len(runs):
        start, run = runs[k]
        close = next((m for m in range(k + 1, len(runs)) if runs[m][1] == run), None)
        if close is None:
            break
        out.append((start, runs[close][0] + run, run))
        k = close + 1
    return out


def inline_code(prose: list[tuple[int, str]]) -> list[Span]:
    """Inline code spans of the prose lines, in order."""
    out = []
    for line, text in prose:
        for start, end, run in _code_spans(text):
            content = text[start + run:end - run]
            if content.strip():
                out.append(Span(line, content.strip() if run > 1 else content, start))
    return out


def _strip_code(text: str) -> str:
    """The prose line with its inline code spans blanked (a link inside code is not a link)."""
    spans = _code_spans(text)
    if not spans:
        return text
    parts, at = [], 0
    for start, end, _ in spans:
        parts += [text[at:start], " " * (end - start)]
        at = end
    return "".join(parts) + text[at:]


def _link_target(plain: str, k: int) -> tuple[str | None, int]:
    """The target of a link whose ``](`` is at ``k``, and where its match ends; on no match,
    None and where the destination's characters end (a later ``](`` before that point meets
    the same end, so it cannot match either)."""
    m = _DEST.match(plain, k + 2)
    if m:
        return m["target"], m.end()
    return None, _DEST_WORD.match(plain, k + 2).end()


def links(prose: list[tuple[int, str]]) -> list[Span]:
    """Link and image targets of the prose (inline and reference definitions), in order:
    ``[text](target)`` where text has no ``]``, found from each ``](`` (each character is
    read a bounded number of times: linear in the line)."""
    out = []
    for line, text in prose:
        plain = _strip_code(text)
        pos = 0
        while (k := plain.find("](", pos)) >= 0:
            opened = plain.rfind("[", pos, k)
            if opened < 0 or "]" in plain[opened + 1:k]:
                pos = k + 1
                continue
            target, end = _link_target(plain, k)
            if target is not None:
                out.append(Span(line, target.strip("<>")))
            pos = max(end, k + 1)
        d = _REF_DEF.match(plain)
        if d:
            out.append(Span(line, d["target"].strip("<>")))
    return out


# a layout tree: box-drawing guides (├── └── │), or ASCII ones (|-- `--), before each name
_GUIDE = re.compile(r"^[ \t│├└─┬┼|`+\\-]*+")
_BOX = re.compile(r"[├└│]|^[ \t]*+(?:\|--|`--|\+--)", re.M)
LISTING_LANGS = frozenset({"", "text", "txt", "plaintext", "plain", "tree"})
MAX_TREE_LINES = 500
MAX_TREE_LINE = 300  # a longer line is prose or data, not an entry
_ENTRY = re.compile(r"(\S*+)(\s*+)(.*)")  # a name, then a note: `fit.py  # the fit`
_NOTE = frozenset("#<←→(-—–/:")


def layout_tree(code: str) -> list[tuple[int, str, bool]] | None:
    """The entries of a layout tree as ``(line in the block (1-based), path, at top)``; None
    when the block is not a tree: one with box-drawing (or ASCII) guides, or an indented
    listing under a first line ``name/``. A trailing ``# comment`` or ``<- note`` is not part
    of a name; each name's parent is the last entry less indented."""
    lines = code.split("\n")
    if len(lines) > MAX_TREE_LINES or any(len(ln) > MAX_TREE_LINE for ln in lines):
        return None
    boxed = bool(_BOX.search(code))
    body = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip()]
    if not body:
        return None
    if not boxed:
        first = body[0][1]
        if not (re.fullmatch(r"[\w.-]+/", first.strip()) and not first[:1].isspace()
                and len(body) > 1 and all(ln[:1] in " \t" for _, ln in body[1:])):
            return None
    entries: list[tuple[int, str, bool]] = []
    stack: list[tuple[int, str]] = []  # (column, name) of the entries above
    for i, ln in body:
        col = _GUIDE.match(ln).end()
        name, gap, note = _ENTRY.match(ln[col:].strip()).groups()
        if not name or (note and len(gap) < 2 and note[0] not in _NOTE):
            if boxed:
                continue  # `My Documents/`: a name with a space is no file of a skill
            return None  # prose inside an indented listing: not a tree
        while stack and stack[-1][0] >= col:
            stack.pop()
        path = "/".join([n.rstrip("/") for _, n in stack] + [name])
        entries.append((i, path, not stack))
        stack.append((col, name))
    return entries
