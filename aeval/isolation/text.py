"""Untrusted text made inert for display: what a skill, a model or a transcript wrote never
acts on the console, an XML parser, a browser or a forge.

`escape_controls` writes every character that is not plain printable text as a visible
escape: C0 and C1 control characters (ESC sequences that recolour, rewrite CI log lines or
hide OSC 8 links, carriage returns and backspaces that overwrite a line, NUL), DEL, Unicode
bidirectional overrides and isolates ("Trojan source"), line and paragraph separators, the
byte-order mark, XML's non-characters, and lone surrogates (a file name that was not UTF-8,
decoded with ``surrogateescape``: ``\\xff`` for the byte it stands for). Newlines and tabs are
kept unless the caller says otherwise. The result is valid XML 1.0 character data and
encodes as UTF-8.
"""

from __future__ import annotations

import logging
import re

_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f"  # C0 (tab kept below), DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides
    "\u2028\u2029\ufeff\ufff9-\ufffb\ufffe\uffff"  # separators, BOM, annotations, non-chars
    "\ud800-\udfff]"  # lone surrogates
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(ch: str) -> str:
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte it stands for
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep: str = "\n\t") -> str:
    """``text`` with every control or invisible formatting character written as a visible
    escape (``\\x1b``, ``\\u202e``, ``\\r``); the characters in ``keep`` stay as they are."""
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _visible(m.group()),
                       text.replace("\t", "\t" if "\t" in keep else "\\t"))


def one_line(text: str) -> str:
    """``text`` inert and on one line: newlines and tabs escaped too."""
    return escape_controls(text, keep="")


class InertFilter(logging.Filter):
    """A logging filter that makes a record's message inert (`escape_controls`, newlines kept),
    and the run names Prefect adds to it: for every handler aeval's records or Prefect's reach
    (the console, Prefect's API log handler and so its UI). It changes the message, never the
    handler's own formatting (its colours stay)."""

    NAMES = ("task_run_name", "flow_run_name")

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler to report
            return True
        safe = escape_controls(message)
        if safe != message or record.args:
            record.msg, record.args = safe, None
        for name in self.NAMES:
            value = getattr(record, name, None)
            if isinstance(value, str):
                setattr(record, name, one_line(value))
        return True


def code_span(text: str) -> str:
    """``text`` as one inline code span of CommonMark / GitLab Flavored Markdown: inert there
    (no mention, reference, link, image, HTML or emphasis is rendered inside a code span), on
    one line (a line break shown as ``↵``), control characters escaped, and delimited by a
    backtick run longer than any inside it. Empty text gives an empty string. In a table cell
    the caller still escapes ``|``."""
    flat = escape_controls(text.replace("\r\n", "\n").replace("\n", " ↵ "), keep="")
    if not flat.strip():
        return ""
    longest = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"
