"""Untrusted patterns over untrusted text, in linear time.

A contract's regular expressions (``file_contains``, ``command`` stdout, ``json_path``,
``transcript_regex``, ``tool_used`` input) are written by whoever opens the merge request, and
the text they are matched against is what a case produced. Python's ``re`` backtracks: ``^(a+)+$``
against a long line of ``a`` ending in ``b`` never ends, and it would hang aeval's own process,
not only the case. So they run on RE2 (google-re2), whose time is linear in the text. What RE2
cannot do in linear time (backreferences, lookahead and lookbehind) it refuses to compile: that
pattern is the contract's problem, found when the contract is loaded (`compile_pattern` raises
`PatternError`, one line saying why).

Patterns are MULTILINE, as they were with ``re`` (``^`` and ``$`` at every line). Differences
from Python's syntax a user may meet: ``\\Z`` is written ``\\z``; ``\\d`` and ``\\w`` are ASCII.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import re2

SYNTAX = "RE2 syntax, linear time: no backreferences or lookaround, \\z for \\Z"


class PatternError(ValueError):
    """A pattern RE2 cannot take: its message says why, in one line."""


@dataclass(frozen=True)
class Found:
    """Where a pattern matched: character offsets in the text, and the matched text."""

    start: int
    end: int
    text: str


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print each refused pattern on aeval's stderr
    return options


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re2._Regexp:
    """``pattern`` compiled for MULTILINE search; `PatternError` when RE2 refuses it."""
    try:
        return re2.compile(f"(?m){pattern}", options=_options())
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        why = why.replace(f"(?m){pattern}", pattern).strip()
        raise PatternError(f"{why} ({SYNTAX})") from None
    except (TypeError, UnicodeEncodeError) as exc:  # a lone surrogate in the pattern
        raise PatternError(f"not text RE2 can read: {exc}") from None


def search(pattern: str, text: str) -> Found | None:
    """The first match of ``pattern`` in ``text``, in time linear in the text."""
    rx = compile_pattern(pattern)
    try:
        m = rx.search(text)
    except UnicodeEncodeError:  # a lone surrogate (a name decoded with surrogateescape)
        text = text.encode("utf-8", "replace").decode("utf-8")  # one "?" per surrogate
        m = rx.search(text)
    if m is None:
        return None
    return Found(m.start(), m.end(), text[m.start():m.end()])


def problem(pattern: str) -> str | None:
    """Why RE2 cannot take ``pattern``, or None when it can."""
    try:
        compile_pattern(pattern)
    except PatternError as exc:
        return str(exc)
    return None
