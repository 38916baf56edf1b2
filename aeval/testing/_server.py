"""The scripted model server itself: routing, script and turn selection, faults, simulated
prompt caching and the request recording. The public face is `aeval.testing.model_server`."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from aeval.testing._anthropic import Messages
from aeval.testing._http import (
    Handler,
    HTTPServer,
    credential_hash,
    error_body,
    model_entry,
    models_list,
    record_headers,
)
from aeval.testing._openai import ChatCompletions, Responses
from aeval.testing._script import Script, ScriptFile, Turn, load_script_file, select_script
from aeval.testing._wire import Answer, Tokens, WireFormat, offered_tools, output_size

WIRES: dict[str, WireFormat] = {
    "/v1/chat/completions": ChatCompletions(),
    "/v1/responses": Responses(),
    "/v1/messages": Messages(),
}
"""Generation endpoints (POST) and the wire format each speaks."""

WIRE_NAMES = frozenset(w.name for w in WIRES.values())

TIMEOUT_FAULT_S = 30.0
"""How long a ``timeout`` fault hangs when its turn has no ``delay_s``."""


class RecordedRequest(BaseModel):
    """One request the server received, as recorded before it was answered."""

    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=0, description="Arrival order, from 0 (reset by `clear()`).")
    t: float = Field(description="time.monotonic() at arrival.")
    method: str = Field(description="HTTP method.")
    path: str = Field(description="URL path, without the query string.")
    headers: dict[str, str] = Field(
        description="Headers with lower-case keys; credentials redacted to '***'."
    )
    credential_sha256: str | None = Field(
        None, description="sha256 (hex) of the credential sent (``x-api-key``, ``api-key`` or "
                          "the bearer token): which key arrived, without recording it."
    )
    body: Any = Field(None, description="The parsed JSON body, or None when empty or invalid.")
    body_bytes: int = Field(0, ge=0, description="Length of the raw body as sent.")
    wire: str | None = Field(
        None, description="chat, responses, anthropic, count_tokens, models, or None."
    )
    stream: bool = Field(False, description="Whether the client asked for a stream.")
    script: str | None = Field(None, description="The script that answered; None: default.")
    turn: int | None = Field(
        None, description="Assistant turns in the request's history = the turn index answered."
    )
    fault: bool = Field(False, description="True when a fault was injected.")
    fault_kind: int | str | None = Field(
        None, description="The fault injected: an HTTP status, 'timeout' or 'disconnect'."
    )
    usage: dict[str, int] | None = Field(
        None, description="Tokens reported, in aeval's convention (input EXCLUDES cached)."
    )
    unknown_tools: list[str] = Field(
        default_factory=list,
        description="Tools the scripted answer called that the request did not offer: the "
        "script was written for another client (each runtime names its tools its own way).",
    )


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings."""
    return len(os.path.commonprefix([a, b]))  # noqa: RUF071 (characters, not paths, on purpose)


def _slug(name: str | None) -> str:
    """A script name made safe for tool-call ids (letters, digits, underscores)."""
    return "".join(c if c.isalnum() else "_" for c in name)[:40] if name else "default"


class ScriptedModelServer:
    """The server. Start it with ``with`` (or `start()` / `stop()`), point clients at
    `base_url_openai` (``.../v1``) or `base_url_anthropic`, then read `requests`."""

    def __init__(
        self,
        scripts: list[Script],
        default: Turn | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        verbose: bool = False,
    ) -> None:
        """``default`` answers requests no script matches (``Turn(text="OK")`` when None);
        ``port`` 0 picks a free port; ``verbose`` logs one line per request to stderr."""
        checked = ScriptFile(scripts=scripts, default=default or Turn(text="OK"))
        self.scripts: list[Script] = checked.scripts
        self.default: Turn = checked.default
        self.host = host
        self._port = port
        self.verbose = verbose
        self._lock = threading.Lock()
        self._records: list[RecordedRequest] = []
        self._faults: Counter[tuple[str | None, int]] = Counter()
        self._last_prompt: dict[str | None, str] = {}
        self._serial = 0
        self._stopping = threading.Event()
        self._httpd: HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def from_file(cls, path: str | Path, *more: str | Path, **kwargs: Any
                  ) -> ScriptedModelServer:
        """A server for one or more JSON or YAML script files (see `ScriptFile`): their
        scripts in the order given (names must differ), the first file's default answer."""
        files = [load_script_file(p) for p in (path, *more)]
        return cls([s for f in files for s in f.scripts], default=files[0].default, **kwargs)

    # ---- lifecycle ------------------------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        """Bind and serve in a background thread. Returns self."""
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = HTTPServer((self.host, self._port), self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"aeval-model-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake delayed answers and close every connection. Never hangs."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.drop_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the one picked when constructed with 0)."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://HOST:PORT``."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url_openai(self) -> str:
        """Base URL for OpenAI clients (``OPENAI_BASE_URL``): ``url + "/v1"``."""
        return self.url + "/v1"

    @property
    def base_url_anthropic(self) -> str:
        """Base URL for Anthropic clients (``ANTHROPIC_BASE_URL``): the bare ``url``."""
        return self.url

    # ---- recording ------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._records)

    def requests_for(self, script_name: str | None) -> list[RecordedRequest]:
        """The generation requests a script answered (None: those the default answered);
        ``count_tokens`` and model-list requests are left out."""
        return [r for r in self.requests if r.script == script_name and r.wire in WIRE_NAMES]

    def clear(self) -> None:
        """Forget the recorded requests, the fault counters and the prompt-cache state."""
        with self._lock:
            self._records.clear()
            self._faults.clear()
            self._last_prompt.clear()

    def _record(self, handler: Handler, t: float, raw: int, body: Any, **fields: Any) -> None:
        with self._lock:
            rec = RecordedRequest(
                seq=len(self._records),
                t=t,
                method=handler.command,
                path=urlsplit(handler.path).path,
                headers=record_headers(handler),
                credential_sha256=credential_hash(handler),
                body=body,
                body_bytes=raw,
                **fields,
            )
            self._records.append(rec)
        if self.verbose:
            print(
                f"[aeval-model-server] {rec.method} {rec.path} script={rec.script} "
                f"turn={rec.turn} fault={rec.fault_kind}",
                file=sys.stderr,
                flush=True,
            )

    # ---- serving --------------------------------------------------------------------------

    def _serve(self, handler: Handler) -> None:
        """Answer one request (called by the HTTP layer, one thread per connection)."""
        t = time.monotonic()
        method, path = handler.command, urlsplit(handler.path).path
        try:
            raw = handler.read_body()
            body = json.loads(raw) if raw.strip() else None
        except (ValueError, OSError) as exc:
            self._record(handler, t, 0, None)
            handler.send_json(400, error_body("invalid_request_error", f"unreadable body: {exc}"))
            handler.drop()
            return
        if method == "GET" and path == "/_aeval/requests":
            handler.send_json(200, [r.model_dump(mode="json") for r in self.requests])
            return
        stream = isinstance(body, dict) and body.get("stream") is True
        if method == "POST" and path in WIRES:
            self._generate(WIRES[path], handler, t, len(raw), body, stream)
        elif method == "POST" and path == "/v1/messages/count_tokens":
            self._count_tokens(handler, t, len(raw), body)
        elif method == "GET" and path == "/v1/models":
            self._record(handler, t, len(raw), body, wire="models")
            handler.send_json(200, models_list())
        elif method == "GET" and path.startswith("/v1/models/"):
            self._record(handler, t, len(raw), body, wire="models")
            handler.send_json(200, model_entry(path.removeprefix("/v1/models/")))
        else:
            self._record(handler, t, len(raw), body)
            message = f"Invalid URL ({method} {path}): the scripted model server does not serve it."
            handler.send_json(404, error_body("not_found_error", message))

    def _count_tokens(self, handler: Handler, t: float, raw: int, body: Any) -> None:
        wire = WIRES["/v1/messages"]
        assert isinstance(wire, Messages)
        problem = wire.problem(body)
        script = None if problem else select_script(
            self.scripts, wire.conversation_text(body), str(body.get("model") or ""))
        self._record(
            handler, t, raw, body, wire="count_tokens", script=script.name if script else None
        )
        if problem:
            handler.send_json(400, wire.error_json(400, problem))
        else:
            handler.send_json(200, wire.count_tokens(body))

    def _generate(
        self, wire: WireFormat, handler: Handler, t: float, raw: int, body: Any, stream: bool
    ) -> None:
        problem = wire.problem(body)
        if problem:
            self._record(handler, t, raw, body, wire=wire.name, stream=stream)
            handler.send_json(400, wire.error_json(400, problem))
            return
        script = select_script(
            self.scripts, wire.conversation_text(body), str(body.get("model") or ""))
        index = wire.assistant_turns(body)
        turn = script.turn(index) if script else self.default
        name = script.name if script else None
        key = (name, index if script else -1)
        offered = offered_tools(body)
        unknown = [c.name for c in turn.tool_calls if offered and c.name not in offered]
        with self._lock:
            fault = None
            if turn.fault is not None and self._faults[key] < turn.fault_times:
                self._faults[key] += 1
                fault = turn.fault
            tokens = None if fault is not None else self._tokens(turn, name, wire, body)
            self._serial += 1
            serial = self._serial
        self._record(
            handler,
            t,
            raw,
            body,
            wire=wire.name,
            stream=stream,
            script=name,
            turn=index,
            fault=fault is not None,
            fault_kind=fault,
            usage=tokens.as_dict() if tokens else None,
            unknown_tools=unknown,
        )
        if unknown:  # always said, --quiet or not: the run is about to measure the script
            print(
                f"[aeval-model-server] WARNING: script {name!r} turn {index} calls "
                f"{', '.join(unknown)}, which this client does not offer (it offers: "
                f"{', '.join(offered[:12])}{' ...' if len(offered) > 12 else ''}): is the "
                "script written for another runtime? Give each runtime its own script "
                "(`model` regex, `--runtime NAME=MODEL`).",
                file=sys.stderr,
                flush=True,
            )
        delay = turn.delay_s or (TIMEOUT_FAULT_S if fault == "timeout" else 0)
        if delay and self._stopping.wait(delay):
            handler.drop()
            return
        if fault in ("timeout", "disconnect"):
            handler.drop()
            return
        if isinstance(fault, int):
            message = f"Scripted fault {fault} (script {name!r}, turn {index})."
            handler.send_json(
                fault, wire.error_json(fault, message), {"retry-after": "0", "retry-after-ms": "1"}
            )
            return
        assert tokens is not None
        answer = Answer(
            text=turn.text,
            tool_calls=turn.tool_calls,
            tokens=tokens,
            model=str(body.get("model") or "scripted"),
            stem=f"{_slug(name)}_{index}",
            serial=serial,
        )
        if stream:
            handler.send_stream(wire.answer_events(answer, body))
        else:
            handler.send_json(200, wire.answer_json(answer, body))

    def _tokens(self, turn: Turn, name: str | None, wire: WireFormat, body: Any) -> Tokens:
        """The turn's usage, or the derived one (call with the lock held: it updates the
        simulated prompt cache)."""
        prompt = wire.serialized(body)
        previous = self._last_prompt.get(name, "")
        self._last_prompt[name] = prompt
        if turn.usage is not None:
            u = turn.usage
            return Tokens(
                input=u.get("input_tokens", 0),
                cached=u.get("cached_input_tokens", 0),
                cache_write=u.get("cache_write_tokens", 0),
                output=u.get("output_tokens", 0),
                reasoning=u.get("reasoning_tokens", 0),
            )
        total = max(1, len(prompt) // 4)
        cached = min(total, _common_prefix(prompt, previous) // 4)
        return Tokens(
            input=total - cached,
            cached=cached,
            output=max(1, output_size(turn.text, turn.tool_calls) // 4),
        )
