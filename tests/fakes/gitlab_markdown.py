"""What GitLab would render *live* in a note body: the part a reader, GitLab's notifier and
its reference filters act on. A model of GitLab Flavored Markdown good enough to judge aeval's
bodies: CommonMark with raw HTML, tables and strikethrough (markdown-it-py); code spans,
fenced and indented code are inert, as in GitLab, where no mention, reference, link or
image is processed inside code.

``live_text`` is everything outside code (text, raw HTML, link targets, image sources);
``live_references`` finds in it what GitLab acts on: mentions (``@all`` notifies everyone),
issue / MR / label / milestone / epic references (``#1 !2 ~x %x &3``), bare URLs (autolinked),
links, images and raw HTML tags other than aeval's own markup."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
REFERENCE = re.compile(
    r"(?<![\w`])(@[\w.-]+|#\d+|![0-9]+|~\"[^\"]+\"|~[\w-]+|%\"[^\"]+\"|%[A-Za-z][\w.-]*|&\d+)"
    r"|(https?://\S+|www\.\S+)")
AEVAL_HTML = re.compile(r"^(<!-- aeval:[^>]*-->|</?(details|summary|sub|code)>)$")
"""Raw HTML aeval itself writes (its markers, collapsible sections, small print)."""


def _walk(tokens, out: list[str]) -> None:
    for t in tokens:
        if t.type in ("fence", "code_block", "code_inline"):
            continue
        if t.type == "inline" and t.children:
            _walk(t.children, out)
        elif t.type in ("text", "html_inline", "html_block"):
            out.append(t.content)
        elif t.type == "link_open":
            out.append(f"LINK({t.attrGet('href')})")
        elif t.type == "image":
            out.append(f"IMAGE({t.attrGet('src')})")


def live_text(body: str) -> list[str]:
    """The pieces of ``body`` GitLab renders outside code."""
    out: list[str] = []
    _walk(_MD.parse(body), out)
    return out


def live_references(body: str) -> list[str]:
    """Mentions, references, links, images and foreign HTML that would be live in ``body``."""
    found = []
    for piece in live_text(body):
        if piece.startswith(("LINK(", "IMAGE(")):
            found.append(piece)
            continue
        for tag in re.findall(r"<[^>]*>", piece):
            if not AEVAL_HTML.match(tag):
                found.append(tag)
        found += [m.group() for m in REFERENCE.finditer(re.sub(r"<[^>]*>", " ", piece))]
    return found
