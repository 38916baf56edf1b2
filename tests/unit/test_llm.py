"""Model-API error classification and usage normalization, on the SDKs' own exception and
usage classes (transient errors are retried; permanent ones end the case as `error`)."""

from __future__ import annotations

import anthropic
import httpx
import litellm
import openai
import pytest

from aeval.adapters.llm import classify, extract_json, normalize_usage
from aeval.errors import ModelPermanentError, ModelTransientError

REQ = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def response(status: int) -> httpx.Response:
    return httpx.Response(status, request=REQ, json={"error": {"message": "x"}})


@pytest.mark.parametrize("exc", [
    openai.RateLimitError("slow down", response=response(429), body=None),
    openai.InternalServerError("boom", response=response(500), body=None),
    openai.APIStatusError("conflict", response=response(409), body=None),
    openai.APIStatusError("timeout", response=response(408), body=None),
    openai.APIConnectionError(request=REQ),
    openai.APITimeoutError(request=REQ),
    anthropic.RateLimitError("slow", response=response(429), body=None),
    anthropic.APIStatusError("overloaded", response=response(529), body=None),
    anthropic.APIConnectionError(request=REQ),
    litellm.RateLimitError("rl", llm_provider="openai", model="x"),
    litellm.ServiceUnavailableError("503", llm_provider="openai", model="x"),
    litellm.Timeout("t", model="x", llm_provider="openai"),
])
def test_transient(exc):
    out = classify(exc)
    assert isinstance(out, ModelTransientError), out


@pytest.mark.parametrize("exc", [
    openai.AuthenticationError("bad key", response=response(401), body=None),
    openai.BadRequestError("bad", response=response(400), body=None),
    openai.PermissionDeniedError("no", response=response(403), body=None),
    openai.NotFoundError("no model", response=response(404), body=None),
    anthropic.AuthenticationError("bad key", response=response(401), body=None),
    litellm.ContextWindowExceededError("too long", model="x", llm_provider="openai"),
    litellm.AuthenticationError("bad key", llm_provider="openai", model="x"),
    # litellm wraps the OpenAI client's missing-key error as a 500
    litellm.InternalServerError("OpenAIException - Missing credentials. Please pass an "
                                "`api_key`", llm_provider="openai", model="x"),
])
def test_permanent(exc):
    out = classify(exc)
    assert isinstance(out, ModelPermanentError) and not isinstance(out, ModelTransientError)


def test_usage_input_excludes_cache_reads_and_writes():
    u = normalize_usage({"prompt_tokens": 1000, "completion_tokens": 50,
                         "prompt_tokens_details": {"cached_tokens": 800},
                         "cache_creation_input_tokens": 150})
    assert (u.input_tokens, u.cached_input_tokens, u.cache_write_tokens, u.output_tokens,
            u.requests) == (50, 800, 150, 50, 1)
    assert u.prompt_tokens == 1000
    assert normalize_usage(None).requests == 1


@pytest.mark.parametrize("text", ['{"a": 1}', 'Here:\n```json\n{"a": 1}\n```', 'x {"a": 1} y'])
def test_extract_json(text):
    assert extract_json(text) == {"a": 1}


def test_extract_json_without_an_object():
    with pytest.raises(ValueError):
        extract_json("no json here")
