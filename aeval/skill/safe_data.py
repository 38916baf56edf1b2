"""Bounded parsing of untrusted JSON and YAML (eval.config, SKILL.md frontmatter).

A contract is written by whoever opens the merge request, so its parser must not be a way to
crash or stall the whole run: the text size and the nesting depth are capped *before* a
recursive parser sees them (a 100k-deep ``[[[...`` makes ``json.loads`` raise RecursionError),
YAML aliases are refused (an alias bomb of a few hundred bytes expands to gigabytes), and
non-finite numbers (``Infinity``, ``NaN``) and NUL bytes are refused because every later
consumer (timeouts, subprocess arguments, JSON artifacts) breaks on them.

Every function raises `UnsafeData` with one short message; callers turn it into a `Problem`.
"""

from __future__ import annotations

import json
import math
from typing import Any

import yaml

MAX_BYTES = 1_000_000
MAX_DEPTH = 64


class UnsafeData(ValueError):
    """The text is too big, too deep, uses YAML aliases, or holds a value aeval cannot run.

    ``field`` is where (``evals[0].steps[1]``), empty when the whole text is at fault.
    """

    def __init__(self, message: str, field: str = ""):
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and caps nesting while composing (before any expansion)."""

    def __init__(self, stream: str, line_offset: int = 0):
        super().__init__(stream)
        self._depth = 0
        self._line_offset = line_offset

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            line = event.start_mark.line + 1 + self._line_offset if event.start_mark else "?"
            raise UnsafeData(f"line {line}: YAML aliases (*{event.anchor}) are not allowed")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise UnsafeData(f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def check_size(text: str) -> None:
    if len(text) > MAX_BYTES:
        raise UnsafeData(f"{len(text)} characters, at most {MAX_BYTES}")


def bracket_depth(text: str) -> int:
    """Deepest ``[``/``{`` nesting outside double-quoted strings (a cheap, non-recursive scan)."""
    depth = deepest = 0
    in_str = escaped = False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _no_constant(name: str) -> Any:
    raise UnsafeData(f"{name} is not a finite number")


def load_json(text: str) -> Any:
    """``json.loads`` with the size and depth caps; NaN / Infinity refused.

    Raises json.JSONDecodeError for syntax errors (so callers can fall back to YAML) and
    UnsafeData for everything bounded here.
    """
    check_size(text)
    if bracket_depth(text) > MAX_DEPTH:
        raise UnsafeData(f"nested deeper than {MAX_DEPTH} levels")
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except RecursionError:  # pragma: no cover - the depth scan comes first
        raise UnsafeData(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError:
        raise
    except UnsafeData:
        raise
    except ValueError as exc:  # an integer of more than 4300 digits
        raise UnsafeData(f"a value cannot be read: {str(exc)[:120]}") from None
    check_values(data)
    return data


def load_yaml(text: str, line_offset: int = 0) -> Any:
    """``yaml.safe_load`` with the size and depth caps; aliases, NaN and Infinity refused.

    ``line_offset``: lines of the file before ``text`` (frontmatter), for line numbers.

    Raises yaml.YAMLError for syntax errors and UnsafeData for everything bounded here.
    """
    check_size(text)
    loader = _BoundedLoader(text, line_offset)
    try:
        data = loader.get_single_data()
    except RecursionError:
        raise UnsafeData(f"nested deeper than {MAX_DEPTH} levels") from None
    except (UnsafeData, yaml.YAMLError):
        raise
    except (ValueError, OverflowError) as exc:  # an integer of more than 4300 digits
        raise UnsafeData(f"a value cannot be read: {str(exc)[:120]}") from None
    finally:
        loader.dispose()
    check_values(data)
    return data


def check_values(data: Any) -> None:
    """Refuse non-finite floats and NUL bytes anywhere (keys included), naming where.

    Iterative, so it cannot recurse out of stack whatever it is handed.
    """
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        where, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UnsafeData(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, float) and not math.isfinite(value):
            raise UnsafeData(f"{value} is not a finite number", where)
        if isinstance(value, str) and "\0" in value:
            raise UnsafeData("contains a NUL byte", where)
        if isinstance(value, dict):
            for k, v in value.items():
                key = str(k)
                if "\0" in key:
                    raise UnsafeData("a key contains a NUL byte", where)
                stack.append((f"{where}.{key}" if where else key, v, depth + 1))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                stack.append((f"{where}[{i}]", v, depth + 1))
