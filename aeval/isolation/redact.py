"""Secret redaction: declared credential values never reach an artifact, a log or a comment.

A tool that wants a secret out does not print it as is: it prints it reversed, in hex, in
base64 (possibly in the middle of a longer base64 stream), URL-encoded or JSON-escaped. Each
secret is therefore matched in all of these forms. Overlapping matches are merged, so what is
replaced is the union of every form found. Redaction must happen BEFORE any truncation: a cut
secret no longer matches, and its prefix would leak (see ``redact_head`` / ``redact_tail``).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import TypeVar
from urllib.parse import quote, quote_plus

MIN_SECRET_LEN = 4  # shorter values would redact ordinary words
MIN_FRAGMENT_LEN = 8  # shortest aligned base64 fragment we look for (shorter: random hits)

T = TypeVar("T", str, bytes)


def declared_values(names: Iterable[str], environ: Mapping[str, str] | None = None
                    ) -> dict[str, str]:
    """The values the credentials ``names`` have in the environment (those set, not empty).
    What a run redacts: every credential any of its cases declares, in every case's artifacts
    and the run's own. Names travel with the plans; values are read here, in the process that
    writes, and are never a parameter or a result of a task."""
    environ = os.environ if environ is None else environ
    return {n: environ[n] for n in sorted(set(names)) if environ.get(n)}


def _b64_fragments(data: bytes) -> set[str]:
    """Base64 text that encodes ``data`` wherever it sits in a longer stream.

    A byte string starting at offset k (mod 3) of a stream is encoded as characters whose 6
    bits partly depend on its neighbours; the characters fully inside it are the same
    whatever the neighbours are. For each of the 3 alignments keep exactly those.
    """
    out = set()
    full = base64.b64encode(data).decode()
    out |= {full, full.rstrip("=")}
    n = len(data)
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + data).decode()
        first = -(-8 * k // 6)  # ceil: first character made only of data bits
        last = (8 * (k + n)) // 6  # characters before this one end inside the data
        frag = enc[first:last]
        if len(frag) >= MIN_FRAGMENT_LEN:
            out.add(frag)
    return out


def _wrappable(value: str) -> set[str]:
    """The forms tools print wrapped over lines (``base64`` at 76 columns, ``xxd -p`` at 60):
    hex and base64."""
    raw = value.encode()
    b64 = _b64_fragments(raw)
    return {raw.hex(), raw.hex().upper()} | b64 | {
        f.translate(str.maketrans("+/", "-_")) for f in b64}


def encodings(value: str) -> set[str]:
    """Every form of ``value`` that is redacted: literal, JSON-escaped, reversed, hex (lower
    and upper), URL-encoded, base64 and base64url (padded, unpadded, the 3 alignments)."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
             value[::-1], quote(value, safe=""), quote(value), quote_plus(value)}
    forms |= _wrappable(value)
    return {f for f in forms if len(f) >= MIN_SECRET_LEN}


# A line break inside a wrapped form: raw, or as JSON escapes it (backslash n) in events.
_WRAP = r"(?:\r?\n|(?:\\r)?\\n)?"


def _wrapped_pattern(forms: list[str]) -> str:
    return "|".join(_WRAP.join(re.escape(c) for c in f) for f in sorted(forms, key=len,
                                                                          reverse=True))


class Redactor:
    """Replaces each secret, in every form of ``encodings``, with ``[REDACTED:NAME]``."""

    def __init__(self, secrets: dict[str, str] | None = None):
        needles: dict[str, str] = {}
        self._wrapped: list[tuple[re.Pattern[str], re.Pattern[bytes], str]] = []
        for name, value in sorted((secrets or {}).items()):
            if not value or len(value) < MIN_SECRET_LEN:
                continue
            mark = f"[REDACTED:{name}]"
            for form in encodings(value):
                needles.setdefault(form, mark)
            wrapped = [f for f in _wrappable(value) if len(f) >= MIN_FRAGMENT_LEN]
            if wrapped:
                pattern = _wrapped_pattern(wrapped)
                self._wrapped.append((re.compile(pattern), re.compile(pattern.encode()), mark))
        # Longest first: where two forms start at the same place the longer one wins.
        self._needles = sorted(needles.items(), key=lambda p: -len(p[0]))
        self._bneedles = [(v.encode(), m.encode()) for v, m in self._needles]

    def __bool__(self) -> bool:
        return bool(self._needles)

    @property
    def longest(self) -> int:
        """How far a match can reach across a cut point (0 without secrets): the longest form,
        doubled for the line breaks a wrapped form may hold."""
        return 2 * len(self._needles[0][0]) if self._needles else 0

    def spans(self, data: T) -> list[tuple[int, int, T]]:
        """(start, end, mark) of every region to replace: the union of all matches."""
        pairs = self._needles if isinstance(data, str) else self._bneedles
        hits = []
        for needle, mark in pairs:
            i = data.find(needle)
            while i >= 0:
                hits.append((i, i + len(needle), mark))
                i = data.find(needle, i + 1)
        text = isinstance(data, str)
        for rx, brx, mark in self._wrapped:
            for m in (rx if text else brx).finditer(data):
                hits.append((m.start(), m.end(), mark if text else mark.encode()))
        hits.sort(key=lambda h: (h[0], -h[1]))
        merged: list[tuple[int, int, T]] = []
        for start, end, mark in hits:
            if merged and start < merged[-1][1]:
                s, e, m = merged[-1]
                merged[-1] = (s, max(e, end), m)
            else:
                merged.append((start, end, mark))
        return merged

    def _apply(self, data: T, spans: list[tuple[int, int, T]]) -> T:
        if not spans:
            return data
        parts, pos = [], 0
        for start, end, mark in spans:
            parts += [data[pos:start], mark]
            pos = end
        parts.append(data[pos:])
        return data[:0].join(parts)

    def text(self, text: str) -> str:
        """``text`` with every form of every secret replaced."""
        return self._apply(text, self.spans(text)) if self._needles else text

    def bytes(self, data: bytes) -> bytes:
        """The same on raw bytes (output files, which may not be text)."""
        return self._apply(data, self.spans(data)) if self._needles else data

    def head(self, data: T, keep: int) -> T:
        """The redacted start of ``data`` cut at about ``keep`` (before redaction) so that no
        secret is cut: ``data`` must reach ``longest`` past ``keep`` for the guarantee. A
        match that crosses the cut is dropped whole, never kept in part."""
        spans = self.spans(data) if self._needles else []
        cut = keep
        for start, end, _ in spans:
            if start < cut < end:
                cut = start
        return self._apply(data[:cut], [s for s in spans if s[1] <= cut])

    def tail(self, data: T, keep: int) -> T:
        """The redacted end of ``data``, about ``keep`` long, no secret cut (see ``head``)."""
        spans = self.spans(data) if self._needles else []
        cut = max(len(data) - keep, 0)
        for start, end, _ in spans:
            if start < cut < end:
                cut = end
        return self._apply(data[cut:], [(s - cut, e - cut, m) for s, e, m in spans if s >= cut])



class RedactingFilter(logging.Filter):
    """A logging filter that redacts every record it passes: message, arguments and the text
    of an attached exception. Attach it to the handlers (the console's, Prefect's API log
    handler): a filter on a logger does not see what its child loggers log. Then nothing
    logged carries a secret, in any of its encodings, to the console or Prefect's database."""

    def __init__(self, redactor: Redactor):
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.redactor:
            return True
        record.msg = self.redactor.text(record.getMessage())
        record.args = None
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = self.redactor.text(text)
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self.redactor.text(record.stack_info)
        return True
