"""The LLM client: one litellm call, its usage normalized, its errors classified.

Every model call of aeval (the builtin executor loop, the grader, the assertion writer, the
suggester) goes through `complete()`, which:
- retries a transient failure (429, 408, 409, 5xx, overloaded, timeouts, connection resets)
  of THIS call, with exponential backoff and jitter, inside the `RetryBudget` the caller
  shares across its case; only when the budget is spent does `ModelTransientError` reach
  the attempt-level retry (a fresh workspace). `ask_json` (the evaluator calls) always has a
  budget. litellm's own retry path (which needs tenacity) is never used;
- gives up at once on a permanent failure (missing or invalid key, unknown model, context
  window exceeded, bad request): one attempt, one line saying which;
- bounds the model calls in flight across threads (`AEVAL_MODEL_CONCURRENCY`);
- normalizes usage so that `input_tokens` EXCLUDES cached tokens;
- finds a model endpoint (``api_base``) that cannot be reached at all (`endpoint_problem`:
  refused, no such host, TLS failed) once: a connection error of a call is checked with one
  request, and from then on every call to that endpoint fails at once, as a permanent error
  (no retry storm of every case against a closed port).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from aeval import bounded_json
from aeval.errors import (
    EnvironmentFailure,
    ModelPermanentError,
    ModelTransientError,
    RuntimeUnavailable,
)
from aeval.events import Usage
from aeval.runtime.model_keys import MODELS_INSTALL
from aeval.settings import Settings

# litellm fetches a model price list from the network at import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
TRANSIENT_STATUS = frozenset({408, 409, 429})
_slots: threading.BoundedSemaphore | None = None
_slots_lock = threading.Lock()
MODEL_LIMIT_VAR = "AEVAL_MODEL_LIMIT"
"""Names a Prefect global concurrency limit that bounds model calls instead of the in-process
semaphore: set where the calls of one run happen in several processes (Dask workers;
`aeval.tasks._engine.runners.use_global_model_limit`)."""


@contextlib.contextmanager
def model_slot() -> Iterator[None]:
    """One of the AEVAL_MODEL_CONCURRENCY model calls in flight: from this process's
    semaphore, or from the Prefect global concurrency limit named by AEVAL_MODEL_LIMIT."""
    global _slots
    name = os.environ.get(MODEL_LIMIT_VAR)
    if not name:
        with _slots_lock:  # made at the first call, not at import: a warm process's child
            if _slots is None:  # (aeval.deployments.servers.warm) has its settings only by then
                _slots = threading.BoundedSemaphore(Settings().model_concurrency)
        with _slots:
            yield
        return
    from prefect.concurrency.sync import concurrency

    with concurrency(name, occupy=1, strict=True):
        yield


M = TypeVar("M", bound=BaseModel)

PROBE_TIMEOUT_S = 10.0
_unreachable: dict[str, str] = {}
"""The endpoints found unreachable in this process (``api_base`` -> the line saying why)."""


def _connection_failed(error: ModelTransientError) -> bool:
    """No HTTP answer (litellm reports a refused connection as a 500 "Connection error")."""
    return error.status_code is None or "connection error" in str(error).lower()


def endpoint_problem(api_base: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Whether ``api_base`` can be reached at all, without asking it anything: a TCP
    connection to its host and port (or to the proxy the environment names for it, as the
    model client would use), and for https the TLS handshake. None when that succeeds, when
    it only timed out (a busy server is not a missing one), or when only the certificate is
    in question (the model client decides that, with its own CA bundle); else one line naming
    the endpoint and why (connection refused, no such host, TLS failed, not a URL),
    remembered for the rest of the process. No HTTP request is sent: a model API is never
    asked something only to learn that it is there."""
    import ssl
    import urllib.request
    from urllib.parse import urlsplit

    if api_base in _unreachable:
        return _unreachable[api_base]
    why: str | None = None
    try:
        url = urlsplit(api_base)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"{api_base!r} is not an http(s) URL")
        target = (url.hostname, url.port or (443 if url.scheme == "https" else 80))
        proxy = urllib.request.getproxies().get(url.scheme)
        if proxy and not urllib.request.proxy_bypass(url.hostname):
            p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            target, tls = (p.hostname or "", p.port or 80), False  # the proxy tunnels TLS
        else:
            tls = url.scheme == "https"
        with socket.create_connection(target, timeout=timeout_s) as sock:
            if tls:
                ctx = ssl.create_default_context()
                with ctx.wrap_socket(sock, server_hostname=url.hostname):
                    pass
    except ValueError as exc:
        why = f"not a URL ({exc})"
    except ssl.SSLCertVerificationError:
        return None
    except ssl.SSLError as exc:
        why = f"TLS failed ({exc})"
    except TimeoutError:
        return None
    except ConnectionRefusedError:
        why = "connection refused"
    except socket.gaierror as exc:
        why = f"no such host ({exc})"
    except OSError as exc:
        why = str(exc) or type(exc).__name__
    if why is None:
        return None
    line = _one_line(f"the model endpoint {api_base} is unreachable: {why} (--api-base or "
                     "AEVAL_API_BASE)")
    _unreachable[api_base] = line
    return line


def _status(exc: BaseException) -> int | None:
    for obj in (exc, getattr(exc, "response", None)):
        code = getattr(obj, "status_code", None)
        if isinstance(code, int):
            return code
    return None


_MISSING_KEY = re.compile(
    r"(?i)missing credentials|missing [\w ]{0,40}api[ _-]?key|no api[ _-]?key|"
    r"api[ _-]?key[^.\n]{0,40}"
    r"(?:must be set|not set|is missing|required)|invalid[ _-](?:x-)?api[ _-]?key|"
    r"incorrect api key|invalid authentication|authentication_error|unauthori[sz]ed")
_CONTEXT = re.compile(r"(?i)context[ _-]?(?:window|length)|maximum context|too many tokens|"
                      r"prompt is too long")
_UNKNOWN_MODEL = re.compile(r"(?i)model[^\n]{0,60}(?:not found|does not exist|not_found)|"
                            r"unknown model|llm provider not provided|invalid model")
_PERMANENT_CLASSES = {
    "AuthenticationError": "missing or invalid API key",
    "PermissionDeniedError": "API key not allowed to use this model",
    "ContextWindowExceededError": "context window exceeded",
    "NotFoundError": "unknown model or endpoint",
    "LiteLLMUnknownProvider": "unknown model provider",
}


def _one_line(text: str, cap: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= cap else line[: cap - 1] + "…"


def classify(exc: BaseException, model: str | None = None) -> EnvironmentFailure:
    """Map an SDK exception (litellm, openai, anthropic, httpx) to the error tree.

    Transient: 408 / 409 / 429 / 5xx (529 overloaded included), connection errors, timeouts.
    Permanent: authentication (a missing key too, whatever status litellm wraps it in),
    permission, bad request, context window, not found. A permanent error's message is one
    line: what is wrong, for which model, and the provider's words.
    """
    if isinstance(exc, EnvironmentFailure):
        return exc
    status = _status(exc)
    name = type(exc).__name__
    text = f"{name}: {exc}".strip()[:1000]
    names = {c.__name__ for c in type(exc).__mro__}
    what = next((label for cls, label in _PERMANENT_CLASSES.items() if cls in names), None)
    if what is None and _MISSING_KEY.search(text):
        what = "missing or invalid API key"
    if what is None and _CONTEXT.search(text) and status in (None, 400, 413):
        what = "context window exceeded"
    if what is None and _UNKNOWN_MODEL.search(text) and status in (None, 400, 404):
        what = "unknown model"
    if what is not None:
        return ModelPermanentError(
            _one_line(f"{what}{f' for {model}' if model else ''}: {exc}"))
    connection = any(k in name for k in ("Connection", "Timeout", "ConnectError", "ReadError",
                                         "RemoteProtocolError"))
    if connection or status in TRANSIENT_STATUS or (status is not None and status >= 500) \
            or "overloaded" in text.lower():
        return ModelTransientError(text, status)
    return ModelPermanentError(_one_line(text))


@dataclass
class RetryBudget:
    """How much retrying of transient model-API failures one case may do, call by call.

    Shared by every model call of a case (thread-safe): each retry takes one of
    ``max_retries`` and its delay counts against ``max_wait_s``. The delay before retry n is
    drawn from [d/2, d] with d = min(max_delay_s, base_delay_s * 2**n) (backoff with jitter,
    so concurrent cases do not retry in lockstep). When the budget is spent, the transient
    error propagates and the attempt-level retry takes over.
    """

    max_retries: int = 8
    max_wait_s: float = 120.0
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    retries: int = 0
    waited_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def take(self, n: int) -> float | None:
        """Reserve retry number ``n`` (0-based) of one call: its delay, or None when spent."""
        with self._lock:
            if self.retries >= self.max_retries:
                return None
            cap = min(self.max_delay_s, self.base_delay_s * 2 ** n)
            delay = random.uniform(cap / 2, cap)
            if self.waited_s + delay > self.max_wait_s:
                return None
            self.retries += 1
            self.waited_s += delay
            return delay


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


def case_retry_budget() -> RetryBudget:
    """The per-call retry budget of one case, from the settings (AEVAL_MODEL_RETRIES,
    AEVAL_MODEL_RETRY_WAIT_S; the first delay is a quarter of AEVAL_RETRY_DELAY_S, at most
    0.5 s). When it is spent, the attempt-level retry (a fresh workspace) takes over."""
    s = Settings()
    return RetryBudget(max_retries=s.model_retries, max_wait_s=s.model_retry_wait_s,
                       base_delay_s=min(0.5, s.retry_delay_s / 4))


def client() -> Any:
    """The model client (litellm), imported at its first use: `--runtime literal` never pays
    for it, and an install without the ``models`` extra has none. Raises RuntimeUnavailable
    naming the extra to install when it is missing."""
    try:
        import litellm
    except ModuleNotFoundError as exc:
        if exc.name != "litellm":
            raise  # litellm is there, something it needs is not: its own message says what
        raise RuntimeUnavailable(f"the model client (litellm) is not installed: "
                                 f"{MODELS_INSTALL}") from None
    litellm.suppress_debug_info = True
    return litellm


def complete(model: str, messages: list[dict], tools: list[dict] | None = None,
             api_base: str | None = None, api_key: str | None = None, timeout: float = 600,
             max_tokens: int = 8192, retries: int | None = None,
             budget: RetryBudget | None = None, **extra: Any) -> Completion:
    """One model call, transient failures retried inside ``budget``.

    Raises ModelPermanentError at once (one attempt), ModelTransientError when the budget is
    spent. Without a budget, ``retries`` per-call retries are allowed (none by default: a
    caller that wants per-call retries passes its case's budget).
    """
    litellm = client()
    if budget is None:
        budget = RetryBudget(max_retries=retries or 0)
    kwargs: dict[str, Any] = dict(model=model, messages=messages, timeout=timeout,
                                  num_retries=0, max_retries=0, max_tokens=max_tokens,
                                  **extra)
    if tools:
        kwargs["tools"] = tools
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
    if api_base and api_base in _unreachable:  # found once: no request, no retry
        raise ModelPermanentError(_unreachable[api_base])
    n = 0
    while True:
        with model_slot():
            try:
                resp = litellm.completion(**kwargs)
                break
            except Exception as exc:
                error, cause = classify(exc, model), exc
        if not isinstance(error, ModelTransientError):
            raise error from cause
        if api_base and _connection_failed(error) and (gone := endpoint_problem(api_base)):
            raise ModelPermanentError(gone) from cause  # not a blip: nothing listens there
        delay = budget.take(n)
        if delay is None:
            raise ModelTransientError(
                f"{error} (gave up after {n + 1} tries; the case's retry budget is spent: "
                f"{budget.retries} retries, {budget.waited_s:.1f}s waited)",
                error.status_code) from cause
        n += 1
        time.sleep(delay)
    choice = resp.choices[0]
    msg = choice.message
    calls = []
    for tc in msg.tool_calls or []:
        raw = tc.function.arguments or "{}"
        try:
            args = bounded_json.loads(raw)
            if not isinstance(args, dict):
                args = {"_": args}
        except ValueError:
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


def warm_up() -> None:
    """Pay litellm's first-call cost now: the first completion of a process imports the
    provider's SDK and builds pydantic schemas (about a second of CPU under the import lock,
    which every case's first model call would wait on). One call to a loopback port that is
    bound but not listening: refused at once, nothing is sent anywhere, nothing is kept but
    what a real call would have built. Never raises."""
    import socket

    try:
        litellm = client()
    except RuntimeUnavailable:  # a literal-only install: nothing to warm
        return
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: a connection is refused
        base = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        with contextlib.suppress(Exception):
            litellm.completion(
                model="openai/warm-up", messages=[{"role": "user", "content": "-"}],
                api_base=base, api_key="warm-up", timeout=2, num_retries=0, max_retries=0,
                tools=[{"type": "function", "function": {
                    "name": "bash", "description": "-",
                    "parameters": {"type": "object", "properties": {}}}}])


@dataclass
class JsonAnswer:
    """A validated structured answer, or why there is none."""

    value: BaseModel | None
    attempts: int
    error: str | None
    usage: Usage
    texts: list[str]
    wall_s: float


# no ``\s*`` before the body: with the lazy body after it, an opened fence followed by a long
# run of blanks took quadratic time (the JSON reader skips leading blanks itself)
_FENCE = re.compile(r"```(?:json)?(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """The JSON object in a model's answer: bare, fenced, or the outermost {...}."""
    text = text.strip()
    for candidate in (text, *(m.group(1) for m in _FENCE.finditer(text))):
        try:
            return bounded_json.loads(candidate)
        except ValueError:
            pass
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        return bounded_json.loads(text[start:end + 1])
    raise ValueError("no JSON object in the answer")


def response_format(model: str, answer: type[BaseModel]) -> dict[str, Any] | None:
    """The provider's structured output for ``answer`` (a JSON schema generated from the
    pydantic model), or None when litellm does not know the model to support it."""
    try:
        litellm = client()
        if not litellm.supports_response_schema(model=model):
            return None
    except Exception:  # an unknown model simply gets text JSON
        return None
    return {"type": "json_schema",
            "json_schema": {"name": answer.__name__, "schema": answer.model_json_schema(),
                            "strict": False}}


def _refused_format(error: ModelPermanentError) -> bool:
    """A 400 / 422 to a structured request: the endpoint may not take ``response_format``."""
    return _status(error.__cause__) in (400, 422) if error.__cause__ else False


def ask_json(model: str, system: str, user: str, answer: type[M], *, api_base: str | None = None,
             attempts: int = 3, check: Any = None, timeout: float = 600,
             retries: int | None = None, budget: RetryBudget | None = None,
             structured: bool = True) -> JsonAnswer:
    """Ask for a JSON answer validated by ``answer`` (and ``check(value)``, which raises
    ValueError). An invalid answer is re-asked with the error, at most ``attempts`` times.

    Where the model supports it (and ``structured``), the answer is requested through the
    provider's structured output with ``answer``'s JSON schema; a 400 / 422 to that request
    falls back to text JSON once. Transient API failures are retried per call inside
    ``budget`` (one for all the calls of this question when None: the settings' per-case
    budget, AEVAL_MODEL_RETRIES and friends, or ``retries``); when it is spent, the
    ModelTransientError propagates."""
    if budget is None:
        budget = case_retry_budget() if retries is None else RetryBudget(max_retries=retries)
    fmt = response_format(model, answer) if structured else None
    start = time.monotonic()
    messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                      {"role": "user", "content": user}]
    usage, texts, error = Usage(), [], None
    for n in range(1, attempts + 1):
        extra = {"response_format": fmt} if fmt else {}
        try:
            comp = complete(model, messages, api_base=api_base, timeout=timeout, budget=budget,
                            **extra)
        except ModelPermanentError as exc:
            if not (fmt and _refused_format(exc)):
                raise
            fmt = None
            comp = complete(model, messages, api_base=api_base, timeout=timeout, budget=budget)
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
