"""OpenAI's two wire formats: Chat Completions and the Responses API (used by the Codex CLI).

Usage follows OpenAI's convention: prompt / input token totals INCLUDE cached tokens, which
are repeated in ``*_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import time
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

_SYSTEM_ROLES = ("system", "developer", "user")


def openai_error(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error body: ``{"error": {message, type, param, code}}``."""
    kind, code = {
        400: ("invalid_request_error", None),
        401: ("invalid_request_error", "invalid_api_key"),
        404: ("invalid_request_error", "not_found"),
        429: ("requests", "rate_limit_exceeded"),
        503: ("server_error", "service_unavailable"),
    }.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class ChatCompletions(WireFormat):
    """``POST /v1/chat/completions``: one choice, text then ``tool_calls``."""

    name = "chat"

    def problem(self, body: Any) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return "'messages' must be a list"
        return None

    def conversation_text(self, body: dict[str, Any]) -> str:
        return "\n".join(
            content_text(m.get("content"))
            for m in body["messages"]
            if isinstance(m, dict) and m.get("role") in _SYSTEM_ROLES
        )

    def assistant_turns(self, body: dict[str, Any]) -> int:
        messages = body["messages"]
        return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")

    def serialized(self, body: dict[str, Any]) -> str:
        return dumps(body["messages"])

    @staticmethod
    def _usage(answer: Answer) -> dict[str, Any]:
        t = answer.tokens
        return {
            "prompt_tokens": t.prompt,
            "completion_tokens": t.output,
            "total_tokens": t.prompt + t.output,
            "prompt_tokens_details": {"cached_tokens": t.cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": t.reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    @staticmethod
    def _finish(answer: Answer) -> str:
        return "tool_calls" if answer.tool_calls else "stop"

    def _envelope(self, answer: Answer, kind: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-aeval{answer.serial:06d}",
            "object": kind,
            "created": int(time.time()),
            "model": answer.model,
            "system_fingerprint": None,
        }

    def answer_json(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": answer.text if answer.text or not answer.tool_calls else None,
            "refusal": None,
        }
        if answer.tool_calls:
            message["tool_calls"] = [
                {
                    "id": answer.call_id("call", i),
                    "type": "function",
                    "function": {"name": c.name, "arguments": dumps(c.arguments)},
                }
                for i, c in enumerate(answer.tool_calls)
            ]
        return {
            **self._envelope(answer, "chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self._finish(answer),
                }
            ],
            "usage": self._usage(answer),
        }

    def answer_events(self, answer: Answer, body: dict[str, Any]) -> Iterator[bytes]:
        options = body.get("stream_options")
        with_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        head = self._envelope(answer, "chat.completion.chunk")
        extra: dict[str, Any] = {"usage": None} if with_usage else {}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse({**head, "choices": [choice], **extra})

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        if answer.text:
            for piece in text_pieces(answer.text):
                yield chunk({"content": piece})
        for i, call in enumerate(answer.tool_calls):
            opening = {
                "index": i,
                "id": answer.call_id("call", i),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            yield chunk({"tool_calls": [opening]})
            for piece in json_pieces(dumps(call.arguments)):
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        yield chunk({}, self._finish(answer))
        if with_usage:
            yield sse({**head, "choices": [], "usage": self._usage(answer)})
        yield sse("[DONE]")

    def error_json(self, status: int, message: str) -> dict[str, Any]:
        return openai_error(status, message)


def _is_assistant_item(item: Any) -> bool:
    """An input item the model produced: an assistant message, reasoning, or a ``*_call``."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind == "reasoning" or kind.endswith("_call")


class Responses(WireFormat):
    """``POST /v1/responses``: output items ``message`` then ``function_call``s."""

    name = "responses"

    def problem(self, body: Any) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("input"), str | list):
            return "'input' must be a string or a list of items"
        return None

    def conversation_text(self, body: dict[str, Any]) -> str:
        parts = [content_text(body.get("instructions"))]
        items = body["input"]
        if isinstance(items, str):
            parts.append(items)
        else:
            parts.extend(
                content_text(item.get("content"))
                for item in items
                if isinstance(item, dict)
                and item.get("type", "message") == "message"
                and item.get("role") in _SYSTEM_ROLES
            )
        return "\n".join(parts)

    def assistant_turns(self, body: dict[str, Any]) -> int:
        items = body["input"]
        if isinstance(items, str):
            return 0
        runs, inside = 0, False
        for item in items:
            mine = _is_assistant_item(item)
            runs += mine and not inside
            inside = mine
        return runs

    def serialized(self, body: dict[str, Any]) -> str:
        return dumps([body.get("instructions"), body["input"]])

    @staticmethod
    def _usage(answer: Answer) -> dict[str, Any]:
        t = answer.tokens
        return {
            "input_tokens": t.prompt,
            "input_tokens_details": {"cached_tokens": t.cached},
            "output_tokens": t.output,
            "output_tokens_details": {"reasoning_tokens": t.reasoning},
            "total_tokens": t.prompt + t.output,
        }

    @staticmethod
    def _items(answer: Answer, done: bool) -> list[dict[str, Any]]:
        status = "completed" if done else "in_progress"
        items: list[dict[str, Any]] = []
        if answer.text or not answer.tool_calls:
            text = answer.text or ""
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            items.append(
                {
                    "id": f"msg_{answer.stem}",
                    "type": "message",
                    "status": status,
                    "role": "assistant",
                    "content": [part] if done else [],
                }
            )
        for i, call in enumerate(answer.tool_calls):
            items.append(
                {
                    "id": answer.call_id("fc", i),
                    "type": "function_call",
                    "status": status,
                    "call_id": answer.call_id("call", i),
                    "name": call.name,
                    "arguments": dumps(call.arguments) if done else "",
                }
            )
        return items

    def _response(self, answer: Answer, body: dict[str, Any], done: bool) -> dict[str, Any]:
        return {
            "id": f"resp_aeval{answer.serial:06d}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed" if done else "in_progress",
            "background": False,
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "model": answer.model,
            "output": self._items(answer, done=True) if done else [],
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "store": body.get("store", True),
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": self._usage(answer) if done else None,
            "user": None,
            "metadata": {},
        }

    def answer_json(self, answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
        return self._response(answer, body, done=True)

    def answer_events(self, answer: Answer, body: dict[str, Any]) -> Iterator[bytes]:
        seq = 0

        def event(kind: str, /, **fields: Any) -> bytes:
            nonlocal seq
            seq += 1
            return sse({"type": kind, "sequence_number": seq - 1, **fields}, event=kind)

        yield event("response.created", response=self._response(answer, body, done=False))
        yield event("response.in_progress", response=self._response(answer, body, done=False))
        started = self._items(answer, done=False)
        finished = self._items(answer, done=True)
        for index, (item, final) in enumerate(zip(started, finished, strict=True)):
            where = {"item_id": item["id"], "output_index": index}
            yield event("response.output_item.added", output_index=index, item=item)
            if item["type"] == "message":
                part = final["content"][0]
                empty = {**part, "text": ""}
                yield event("response.content_part.added", **where, content_index=0, part=empty)
                for piece in text_pieces(part["text"]):
                    yield event(
                        "response.output_text.delta",
                        **where,
                        content_index=0,
                        delta=piece,
                        logprobs=[],
                    )
                yield event(
                    "response.output_text.done",
                    **where,
                    content_index=0,
                    text=part["text"],
                    logprobs=[],
                )
                yield event("response.content_part.done", **where, content_index=0, part=part)
            else:
                for piece in json_pieces(final["arguments"]):
                    yield event("response.function_call_arguments.delta", **where, delta=piece)
                yield event(
                    "response.function_call_arguments.done",
                    **where,
                    name=final["name"],
                    arguments=final["arguments"],
                )
            yield event("response.output_item.done", output_index=index, item=final)
        yield event("response.completed", response=self._response(answer, body, done=True))

    def error_json(self, status: int, message: str) -> dict[str, Any]:
        return openai_error(status, message)
