"""The LLM client: one litellm call, its usage normalized, its errors classified.

Every model call of aeval (the builtin executor loop, the grader, the assertion writer, the
suggester) goes through `complete()`, which:
- never retries by itself: a transient failure raises `ModelTransientError`, and the case is
  retried by Prefect from a fresh workspace (grader calls retry in their own task);
- bounds the model calls in flight across threads (`AEVAL_MODEL_CONCURRENCY`);
- normalizes usage so that `input_tokens` EXCLUDES cached tokens.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from aeval.errors import EnvironmentFailure, ModelPermanentError, ModelTransientError
from aeval.events import Usage
from aeval.settings import Settings

# litellm fetches a model price list from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
TRANSIENT_STATUS = frozenset({408, 409, 429})
_slots = threading.BoundedSemaphore(Settings().model_concurrency)


M = TypeVar("M", bound=BaseModel)


def _status(exc: BaseException) -> int | None:
    for obj in (exc, getattr(exc, "response", None)):
        code = getattr(obj, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def classify(exc: BaseException) -> EnvironmentFailure:
    """Map an SDK exception (litellm, openai, anthropic, httpx) to the error tree.

    Transient: 408 / 409 / 429 / 5xx (529 overloaded included), connection errors, timeouts.
    Permanent: authentication, permission, bad request, context window, not found.
    """
    if isinstance(exc, EnvironmentFailure):
        return exc
    status = _status(exc)
    name = type(exc).__name__
    text = f"{name}: {exc}".strip()[:1000]
    connection = any(k in name for k in ("Connection", "Timeout", "ConnectError", "ReadError",
                                         "RemoteProtocolError"))
    if connection or status in TRANSIENT_STATUS or (status is not None and status >= 500) \
            or "overloaded" in text.lower():
        return ModelTransientError(text, status)
    return ModelPermanentError(text)


def normalize_usage(usage: Any) -> Usage:
    """litellm / OpenAI-style usage -> aeval Usage (input EXCLUDES cache reads and writes)."""
    if usage is None:
        return Usage(requests=1)

    def get(obj: Any, key: str) -> int:
        if obj is None:
            return 0
        value = obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)
        return value if isinstance(value, int) else 0

    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else getattr(
        usage, "prompt_tokens_details", None)
    cached = get(details, "cached_tokens") or get(usage, "cache_read_input_tokens")
    written = get(usage, "cache_creation_input_tokens")
    prompt = get(usage, "prompt_tokens")
    return Usage(input_tokens=max(0, prompt - cached - written), cached_input_tokens=cached,
                 cache_write_tokens=written, output_tokens=get(usage, "completion_tokens"),
                 requests=1)


@dataclass
class ToolCallRequest:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCallRequest]
    usage: Usage
    finish_reason: str | None
    message: dict[str, Any]  # the assistant message, as it goes back into the conversation
    raw: dict[str, Any] = field(default_factory=dict)


def is_anthropic(model: str) -> bool:
    return model.startswith(("anthropic/", "claude", "bedrock/anthropic", "vertex_ai/claude"))


def complete(model: str, messages: list[dict], tools: list[dict] | None = None,
             api_base: str | None = None, api_key: str | None = None, timeout: float = 600,
             max_tokens: int = 8192, retries: int = 0, **extra: Any) -> Completion:
    """One model call. Raises ModelTransientError / ModelPermanentError.

    ``retries`` > 0 lets litellm retry transient failures itself (evaluator calls: nothing to
    refresh); the executor loop passes 0 so its case is retried from a fresh workspace.
    """
    import litellm

    litellm.suppress_debug_info = True
    kwargs: dict[str, Any] = dict(model=model, messages=messages, timeout=timeout,
                                  num_retries=retries, max_retries=0, max_tokens=max_tokens,
                                  **extra)
    if tools:
        kwargs["tools"] = tools
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
    with _slots:
        try:
            resp = litellm.completion(**kwargs)
        except Exception as exc:
            raise classify(exc) from exc
    choice = resp.choices[0]
    msg = choice.message
    calls = []
    for tc in msg.tool_calls or []:
        raw = tc.function.arguments or "{}"
        try:
            args = json.loads(raw)
            if not isinstance(args, dict):
                args = {"_": args}
        except json.JSONDecodeError:
            args = {"_unparsed": raw}
        calls.append(ToolCallRequest(id=tc.id, name=tc.function.name, arguments=args,
                                     raw_arguments=raw))
    assistant: dict[str, Any] = {"role": "assistant", "content": msg.content or ""}
    if calls:
        assistant["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.raw_arguments}} for c in calls]
    return Completion(text=msg.content or "", tool_calls=calls,
                      usage=normalize_usage(getattr(resp, "usage", None)),
                      finish_reason=choice.finish_reason, message=assistant,
                      raw=resp.model_dump() if hasattr(resp, "model_dump") else {})


@dataclass
class JsonAnswer:
    """A validated structured answer, or why there is none."""

    value: BaseModel | None
    attempts: int
    error: str | None
    usage: Usage
    texts: list[str]
    wall_s: float


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """The JSON object in a model's answer: bare, fenced, or the outermost {...}."""
    text = text.strip()
    for candidate in (text, *(m.group(1) for m in _FENCE.finditer(text))):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        return json.loads(text[start:end + 1])
    raise ValueError("no JSON object in the answer")


def ask_json(model: str, system: str, user: str, answer: type[M], *, api_base: str | None = None,
             attempts: int = 3, check: Any = None, timeout: float = 600,
             retries: int = 3) -> JsonAnswer:
    """Ask for a JSON answer validated by ``answer`` (and ``check(value)``, which raises
    ValueError). An invalid answer is re-asked with the error, at most ``attempts`` times.
    Transient API failures are retried by litellm (``retries``); when they persist, the
    ModelTransientError propagates."""
    import time

    start = time.monotonic()
    messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                      {"role": "user", "content": user}]
    usage, texts, error = Usage(), [], None
    for n in range(1, attempts + 1):
        comp = complete(model, messages, api_base=api_base, timeout=timeout, retries=retries)
        usage = usage + comp.usage
        texts.append(comp.text)
        try:
            value = answer.model_validate(extract_json(comp.text))
            if check is not None:
                check(value)
            return JsonAnswer(value, n, None, usage, texts, time.monotonic() - start)
        except (ValueError, ValidationError) as exc:
            error = f"{type(exc).__name__}: {exc}"[:2000]
            messages += [{"role": "assistant", "content": comp.text},
                         {"role": "user", "content": "Your answer was not valid: " + error +
                          "\nAnswer again with JSON only, in exactly the required shape."}]
    return JsonAnswer(None, attempts, error, usage, texts, time.monotonic() - start)
