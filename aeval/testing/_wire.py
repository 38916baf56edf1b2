"""What every wire format shares: the answer to render, token counts, the format interface.

A wire format reads a provider request (which script, which turn, how long) and writes the
provider's answer, as one JSON body or as Server-Sent Events. One format per provider family
lives in its own module (`_openai.py`, `_anthropic.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from aeval.testing._script import ToolCall


@dataclass(frozen=True)
class Tokens:
    """Token counts of one answer, in aeval's convention: ``input`` EXCLUDES cached tokens.

    Each format converts: OpenAI totals include cached and cache-write tokens, Anthropic's
    ``input_tokens`` excludes both.
    """

    input: int
    cached: int = 0
    cache_write: int = 0
    output: int = 1
    reasoning: int = 0

    @property
    def prompt(self) -> int:
        """Every prompt token: uncached + cache reads + cache writes."""
        return self.input + self.cached + self.cache_write

    def as_dict(self) -> dict[str, int]:
        """The counts under the keys a `Turn.usage` takes."""
        return {
            "input_tokens": self.input,
            "cached_input_tokens": self.cached,
            "cache_write_tokens": self.cache_write,
            "output_tokens": self.output,
            "reasoning_tokens": self.reasoning,
        }


@dataclass(frozen=True)
class Answer:
    """One assistant answer, ready to be written in any format.

    ``stem`` makes every id in the answer deterministic (script, turn) and ``serial`` numbers
    the request, for the ids that must differ between requests (response and message ids).
    """

    text: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tokens: Tokens = field(default_factory=lambda: Tokens(input=1))
    model: str = "scripted"
    stem: str = "default_0"
    serial: int = 0

    def call_id(self, prefix: str, position: int) -> str:
        """Deterministic, unique id of the tool call at ``position``, e.g. ``call_s_1_0``."""
        return f"{prefix}_{self.stem}_{position}"


class WireFormat:
    """A provider's request and answer shapes. Subclasses fill in every method."""

    name: ClassVar[str]

    def problem(self, body: Any) -> str | None:
        """Why ``body`` is not a valid request (answered 400), or None."""
        raise NotImplementedError

    def conversation_text(self, body: dict[str, Any]) -> str:
        """System prompt + every user message's text: what script regexes search."""
        raise NotImplementedError

    def assistant_turns(self, body: dict[str, Any]) -> int:
        """How many assistant turns the history holds: the index of the turn to answer."""
        raise NotImplementedError

    def serialized(self, body: dict[str, Any]) -> str:
        """The conversation as one string (system first): sized for tokens, compared for
        the simulated prompt cache."""
        raise NotImplementedError

    def answer_json(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
        """The non-streaming answer body."""
        raise NotImplementedError

    def answer_events(self, answer: Answer, body: dict[str, Any]) -> Iterator[bytes]:
        """The streaming answer, as encoded SSE events."""
        raise NotImplementedError

    def error_json(self, status: int, message: str) -> dict[str, Any]:
        """The provider's error body for ``status``."""
        raise NotImplementedError


def offered_tools(body: Any) -> list[str]:
    """The names of the tools a request offers the model (any wire format: ``name``, or
    ``function.name`` for chat completions); [] when it offers none."""
    tools = body.get("tools") if isinstance(body, dict) else None
    names = []
    for t in tools if isinstance(tools, list) else []:
        if not isinstance(t, dict):
            continue
        fn = t.get("function")
        name = fn.get("name") if isinstance(fn, dict) else t.get("name")
        if isinstance(name, str) and name:
            names.append(name)
    return names


def dumps(value: Any) -> str:
    """Compact JSON, the way the providers send it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One Server-Sent Event (``event:`` line only when named)."""
    payload = data if isinstance(data, str) else dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type", "text") in ("text", "input_text", "output_text")
            and isinstance(part.get("text"), str)
        )
    return ""


def text_pieces(text: str, words: int = 3) -> list[str]:
    """``text`` cut into deltas of a few words each (whitespace kept), at least one."""
    tokens = re.findall(r"\s*\S+\s*|\s+", text)
    pieces = ["".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]
    return pieces or [""]


def json_pieces(arguments: str, size: int = 12) -> list[str]:
    """A JSON string cut into fixed-size deltas, the way providers stream arguments."""
    return [arguments[i : i + size] for i in range(0, len(arguments), size)] or [""]


def output_size(text: str | None, tool_calls: list[ToolCall]) -> int:
    """Characters the answer generates, for the derived output token count."""
    return len(text or "") + sum(len(c.name) + len(dumps(c.arguments)) for c in tool_calls)
