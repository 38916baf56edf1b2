"""One reader for JSON a case produced: bounded in size, nesting depth and number digits.

A CLI runtime's output lines, a model's tool arguments, a request body from inside the
sandbox, a document a ``json_path`` check reads: all of it is written by the case, so the
worst it may do is fail its own line or record. ``json.loads`` alone raises RecursionError on
a 100k-deep ``[[[...`` (no ValueError handler catches it), builds objects that aeval's later
readers cannot take (pydantic reads at most ~200 levels; ``json.dumps`` recurses), and parses
an integer of a million digits in quadratic time where Python's digit limit is lifted.
`loads` refuses each of these with `UnreadableJson`, a ValueError, so the callers' existing
"not JSON: skip it" handling covers it.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100
"""Nesting a record may have: far beyond any runtime's or tool's own, well inside what
events.jsonl's reader (pydantic) and ``json.dumps`` take."""
MAX_DIGITS = 1000
"""Digits of one integer."""
MAX_BYTES = 64_000_000
"""Size of one document, unless the caller says less."""


class UnreadableJson(ValueError):
    """Not JSON, or JSON over a bound: the message says which, in one line."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise UnreadableJson(f"an integer of {len(text)} digits (at most {MAX_DIGITS})")
    return int(text)


def _constant(name: str) -> Any:
    raise UnreadableJson(f"{name} is not a JSON number")


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of ``value`` (lists and dicts), counted iteratively and no further than
    ``limit + 1``."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if not isinstance(item, (list, dict)):
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        children = item.values() if isinstance(item, dict) else item
        stack.extend((v, level + 1) for v in children if isinstance(v, (list, dict)))
    return deepest


def loads(data: str | bytes, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` within the bounds; `UnreadableJson` (a ValueError) for anything else."""
    if len(data) > max_bytes:
        raise UnreadableJson(f"{len(data)} bytes, over the {max_bytes} read")
    try:
        value = json.loads(data, parse_int=_int, parse_constant=_constant)
    except RecursionError:
        raise UnreadableJson(f"nested deeper than {max_depth} levels") from None
    except UnreadableJson:
        raise
    except ValueError as exc:  # syntax, encoding
        raise UnreadableJson(str(exc)[:200]) from None
    opens = data.count("[") + data.count("{") if isinstance(data, str) else \
        data.count(b"[") + data.count(b"{")
    if opens > max_depth and depth(value, max_depth) > max_depth:
        raise UnreadableJson(f"nested deeper than {max_depth} levels")
    return value


def clip(value: Any, max_depth: int = MAX_DEPTH, cut: str = "[nested deeper: cut]") -> Any:
    """``value`` with every list or dict nested deeper than ``max_depth`` replaced by ``cut``
    (what a recorder keeps of a tool input a model nested hundreds of levels deep); values
    within the bound are returned as they are. Recurses at most ``max_depth`` levels."""
    if depth(value, max_depth) <= max_depth:
        return value

    def walk(item: Any, level: int) -> Any:
        if not isinstance(item, (list, dict)):
            return item
        if level > max_depth:
            return cut
        if isinstance(item, dict):
            return {k: walk(v, level + 1) for k, v in item.items()}
        return [walk(v, level + 1) for v in item]

    return walk(value, 1)
