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
definitions ``[id]: target``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SHELL_LANGS = frozenset({"bash", "sh", "shell", "zsh"})
_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
_LINK = re.compile(r"!?\[(?P<text>[^\]\n]*)\]\(\s*(?P<target><[^>\n]*>|[^\s)]+)"
                   r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
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


def _dedent(line: str, width: int) -> str:
    i = 0
    while i < width and i < len(line) and line[i] in " \t":
        i += 1
    return line[i:]


def parse(text: str, line_offset: int = 0) -> tuple[list[Fence], list[tuple[int, str]]]:
    """The fenced blocks of ``text`` and its prose lines (``(line, text)``, fences removed).
    ``line_offset``: lines of the file before ``text`` (a body after frontmatter)."""
    lines = text.split("\n")
    fences: list[Fence] = []
    prose: list[tuple[int, str]] = []
    since_fence = 0  # prose lines since the last fence closed
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m and not (m["fence"][0] == "`" and "`" in m["info"]):
            char, size = m["fence"][0], len(m["fence"])
            indent = len(m["indent"].expandtabs(4))
            close = re.compile(rf"^[ \t]*{re.escape(char)}{{{size},}}[ \t]*$")
            end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), None)
            if end is not None:
                body = "\n".join(_dedent(ln, len(m["indent"])) for ln in lines[i + 1:end])
                lang = (m["info"].strip().split() or [""])[0].lower().strip("{}.")
                recent = prose[len(prose) - since_fence:] if since_fence else []
                before = "\n".join(t for _, t in recent[-3:] if t.strip())
                fences.append(Fence(line_offset + i + 1, lang, body, indent, before))
                since_fence = 0
                i = end + 1
                continue
        prose.append((line_offset + i + 1, lines[i]))
        since_fence += 1
        i += 1
    return fences, prose


def inline_code(prose: list[tuple[int, str]]) -> list[Span]:
    """Inline code spans of the prose lines, in order."""
    out = []
    for line, text in prose:
        i = 0
        while True:
            start = text.find("`", i)
            if start < 0:
                break
            rest = text[start:]
            run = len(rest) - len(rest.lstrip("`"))
            ticks = "`" * run
            end = text.find(ticks, start + run)
            # the closing run has exactly the opening's length
            while end >= 0 and (text[end + run:end + run + 1] == "`"
                                or text[end - 1:end] == "`"):
                nxt = end + run
                while nxt < len(text) and text[nxt] == "`":
                    nxt += 1
                end = text.find(ticks, nxt)
            if end < 0:
                break
            content = text[start + run:end]
            if content.strip():
                out.append(Span(line, content.strip() if run > 1 else content))
            i = end + run
    return out


def _strip_code(text: str) -> str:
    """The prose line with its inline code spans blanked (a link inside code is not a link)."""
    return re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), text)


def links(prose: list[tuple[int, str]]) -> list[Span]:
    """Link and image targets of the prose (inline and reference definitions), in order."""
    out = []
    for line, text in prose:
        plain = _strip_code(text)
        for m in _LINK.finditer(plain):
            out.append(Span(line, m["target"].strip("<>")))
        d = _REF_DEF.match(plain)
        if d:
            out.append(Span(line, d["target"].strip("<>")))
    return out
