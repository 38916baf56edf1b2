"""aeval's documentation as the tests read it: README.md (the first screen) and the pages of
docs/ (mkdocs.yml builds them into a site). A test that checks a thing is documented reads it
here, wherever the page that says it lives; the quickstart tests read README.md itself."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_OPEN = re.compile(r"^\s*(`{3,}|~{3,})([^`]*)$")
_HEADING = re.compile(r"^(#{1,6}) (.+?)\s*#*\s*$")


def documentation_pages() -> list[Path]:
    """README.md, then every page of docs/ (its Markdown files, sub-folders aside)."""
    return [README, *sorted(DOCS.glob("*.md"))]


def documentation_text() -> str:
    """Every page, one after the other."""
    return "\n".join(p.read_text(encoding="utf-8") for p in documentation_pages())


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language (the info string's first word), its text, and the
    line of the page its body starts on (1-based)."""

    lang: str
    body: str
    line: int


def prose_and_blocks(text: str) -> tuple[list[tuple[int, str]], list[Block]]:
    """The page's lines outside fenced code blocks (numbered from 1), and its fenced blocks.
    A fence closes on a line of the same character, at least as long (CommonMark)."""
    prose: list[tuple[int, str]] = []
    blocks: list[Block] = []
    fence, lang, start, body = None, "", 0, []
    for number, line in enumerate(text.split("\n"), 1):
        if fence is None:
            m = _OPEN.match(line)
            if m:
                fence, lang, start, body = m.group(1), m.group(2).strip(), number + 1, []
            else:
                prose.append((number, line))
        elif re.fullmatch(rf"\s*{fence[0]}{{{len(fence)},}}\s*", line):
            blocks.append(Block(lang.split(" ")[0] if lang else "", "\n".join(body), start))
            fence = None
        else:
            body.append(line)
    return prose, blocks


def headings(text: str) -> list[tuple[int, int, str]]:
    """(line, level, title) of each heading outside code blocks."""
    prose, _ = prose_and_blocks(text)
    return [(n, len(m.group(1)), m.group(2)) for n, line in prose
            if (m := _HEADING.match(line))]


def documented_section(title: str) -> str:
    """The section headed ``title`` (any level; the one page that has it): from its heading
    to the next heading of the same or a higher level, or the end of its page."""
    found = []
    for page in documentation_pages():
        text = page.read_text(encoding="utf-8")
        heads = headings(text)
        for i, (line, level, name) in enumerate(heads):
            if name == title:
                end = next((n for n, lv, _ in heads[i + 1:] if lv <= level), None)
                lines = text.split("\n")
                found.append("\n".join(lines[line - 1:end - 1 if end else None]))
    assert len(found) == 1, f"{len(found)} sections headed {title!r} in README.md and docs/"
    return found[0]
