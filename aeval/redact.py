"""Secret redaction: declared credential values never reach an artifact, a log or a comment."""

from __future__ import annotations

import json

MIN_SECRET_LEN = 4  # shorter values would redact ordinary words


class Redactor:
    """Replaces each secret value with ``[REDACTED:NAME]`` in text and in JSON text.

    Values are matched as they are and as JSON escapes them (quotes, backslashes, unicode),
    so redacting serialized JSON catches them too. Longer secrets are replaced first.
    """

    def __init__(self, secrets: dict[str, str] | None = None):
        pairs: list[tuple[str, str]] = []
        for name, value in (secrets or {}).items():
            if not value or len(value) < MIN_SECRET_LEN:
                continue
            mark = f"[REDACTED:{name}]"
            pairs.append((value, mark))
            escaped = json.dumps(value)[1:-1]
            if escaped != value:
                pairs.append((escaped, mark))
        self._pairs = sorted(pairs, key=lambda p: -len(p[0]))

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def text(self, text: str) -> str:
        for value, mark in self._pairs:
            if value in text:
                text = text.replace(value, mark)
        return text

    def bytes(self, data: bytes) -> bytes:
        for value, mark in self._pairs:
            v = value.encode()
            if v in data:
                data = data.replace(v, mark.encode())
        return data
