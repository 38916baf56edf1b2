"""Anthropic's Messages wire format (used by Claude Code and the anthropic SDK).

Usage follows Anthropic's convention: ``input_tokens`` EXCLUDES cache reads and cache writes,
which are reported as ``cache_read_input_tokens`` and ``cache_creation_input_tokens``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aeval.testing._wire import (
    Answer,
    WireFormat,
    content_text,
    dumps,
    json_pieces,
    sse,
    text_pieces,
)


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error body: ``{"type": "error", "error": {type, message}}``."""
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


class Messages(WireFormat):
    """``POST /v1/messages``: content blocks ``text`` then ``tool_use``."""

    name = "anthropic"

    def problem(self, body: Any) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return "messages: Field required (a list)"
        return None

    def conversation_text(self, body: dict[str, Any]) -> str:
        parts = [content_text(body.get("system"))]
        parts.extend(
            content_text(m.get("content"))
            for m in body["messages"]
            if isinstance(m, dict) and m.get("role") == "user"
        )
        return "\n".join(parts)

    def assistant_turns(self, body: dict[str, Any]) -> int:
        messages = body["messages"]
        return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")

    def serialized(self, body: dict[str, Any]) -> str:
        return dumps([body.get("system"), body["messages"]])

    @staticmethod
    def _usage(answer: Answer) -> dict[str, Any]:
        t = answer.tokens
        return {
            "input_tokens": t.input,
            "cache_creation_input_tokens": t.cache_write,
            "cache_read_input_tokens": t.cached,
            "output_tokens": t.output,
        }

    @staticmethod
    def _blocks(answer: Answer) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if answer.text or not answer.tool_calls:
            blocks.append({"type": "text", "text": answer.text or ""})
        blocks.extend(
            {
                "type": "tool_use",
                "id": answer.call_id("toolu", i),
                "name": c.name,
                "input": c.arguments,
            }
            for i, c in enumerate(answer.tool_calls)
        )
        return blocks

    def _message(self, answer: Answer, done: bool) -> dict[str, Any]:
        usage = self._usage(answer)
        return {
            "id": f"msg_aeval{answer.serial:06d}",
            "type": "message",
            "role": "assistant",
            "model": answer.model,
            "content": self._blocks(answer) if done else [],
            "stop_reason": ("tool_use" if answer.tool_calls else "end_turn") if done else None,
            "stop_sequence": None,
            "usage": usage if done else {**usage, "output_tokens": 1},
        }

    def answer_json(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
        return self._message(answer, done=True)

    def answer_events(self, answer: Answer, body: dict[str, Any]) -> Iterator[bytes]:
        def event(kind: str, /, **fields: Any) -> bytes:
            return sse({"type": kind, **fields}, event=kind)

        yield event("message_start", message=self._message(answer, done=False))
        yield event("ping")
        for index, block in enumerate(self._blocks(answer)):
            if block["type"] == "text":
                yield event(
                    "content_block_start", index=index, content_block={"type": "text", "text": ""}
                )
                for piece in text_pieces(block["text"]):
                    yield event(
                        "content_block_delta",
                        index=index,
                        delta={"type": "text_delta", "text": piece},
                    )
            else:
                yield event(
                    "content_block_start", index=index, content_block={**block, "input": {}}
                )
                for piece in json_pieces(dumps(block["input"])):
                    yield event(
                        "content_block_delta",
                        index=index,
                        delta={"type": "input_json_delta", "partial_json": piece},
                    )
            yield event("content_block_stop", index=index)
        final = self._message(answer, done=True)
        yield event(
            "message_delta",
            delta={"stop_reason": final["stop_reason"], "stop_sequence": None},
            usage=final["usage"],
        )
        yield event("message_stop")

    def error_json(self, status: int, message: str) -> dict[str, Any]:
        return anthropic_error(status, message)

    def count_tokens(self, body: dict[str, Any]) -> dict[str, int]:
        """``POST /v1/messages/count_tokens``: the derived prompt size, tools included."""
        return {"input_tokens": max(1, len(self.serialized(body) + dumps(body.get("tools"))) // 4)}
