"""The HTTP layer of the scripted model server: a threading server that can drop every open
connection on stop, and a handler that reads bodies (chunked, gzip) and writes JSON or
chunked SSE. What to answer is decided by the owner (`ScriptedModelServer._serve`)."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import socket
import sys
import threading
import traceback
import zlib
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from aeval.testing._wire import dumps


class Owner(Protocol):
    """What the HTTP layer needs from the server object that owns it."""

    def _serve(self, handler: Handler) -> None: ...


MODELS = ("scripted", "claude-scripted", "gpt-scripted")
"""Model ids listed by ``GET /v1/models`` (any model id is accepted in requests)."""

SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "proxy-authorization")
"""Headers whose values are redacted in the recording (the scheme word is kept)."""


class HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that never blocks on close and can drop every open connection."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], owner: Owner) -> None:
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._open_lock:
            open_now = list(self._open)
        for sock in open_now:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # a client going away is not an error
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """Reads one request, hands it to the owner, writes what the owner decides."""

    protocol_version = "HTTP/1.1"
    server_version = "aeval-scripted-model/1"
    timeout = 300
    disable_nagle_algorithm = True  # SSE events go out one small write at a time
    server: HTTPServer
    started = False  # True once a status line went out: a bug after that cannot answer 500

    def do_GET(self) -> None:
        self.started = False
        try:
            self.server.owner._serve(self)
        except OSError:
            raise
        except Exception as exc:  # a bug here must still answer something readable
            traceback.print_exc()
            self.close_connection = True
            if not self.started:
                self.send_json(500, error_body("api_error", f"scripted model server bug: {exc!r}"))

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def read_body(self) -> bytes:
        """The request body, de-chunked and decompressed (gzip, deflate)."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            raw = bytearray()
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                raw += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            data = bytes(raw)
        else:
            data = self.rfile.read(int(self.headers.get("content-length") or 0))
        encoding = self.headers.get("content-encoding", "").lower()
        if encoding == "gzip":
            return gzip.decompress(data)
        if encoding == "deflate":
            return zlib.decompress(data)
        if encoding not in ("", "identity"):
            raise ValueError(f"unsupported content-encoding {encoding!r}")
        return data

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        """Answer one JSON body (keeps the connection alive)."""
        data = dumps(payload).encode()
        self.started = True
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def send_stream(self, events: Iterable[bytes]) -> None:
        """Answer 200 with SSE events, one HTTP chunk each, flushed as they come."""
        self.started = True
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for data in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def drop(self) -> None:
        """Close the connection without a response."""
        self.close_connection = True


def record_headers(handler: Handler) -> dict[str, str]:
    """The request's headers with lower-case keys, repeated ones joined, secrets redacted."""
    headers: dict[str, str] = {}
    for key, value in handler.headers.items():
        key = key.lower()
        if key in SECRET_HEADERS:
            scheme = value.split(" ", 1)[0] if " " in value else ""
            value = f"{scheme} ***".strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


def credential_hash(handler: Handler) -> str | None:
    """sha256 (hex) of the request's credential, or None when it sent none."""
    h = handler.headers
    value = h.get("x-api-key") or h.get("api-key")
    if not value:
        scheme, _, token = (h.get("authorization") or "").partition(" ")
        value = token.strip() if scheme.lower() == "bearer" else ""
    return hashlib.sha256(value.encode()).hexdigest() if value else None


def models_list() -> dict[str, Any]:
    """``GET /v1/models``: a list page both SDK families read."""
    data = [model_entry(m) for m in MODELS]
    return {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": MODELS[0],
        "last_id": MODELS[-1],
    }


def model_entry(model_id: str) -> dict[str, Any]:
    """A model entry both SDKs can read (OpenAI and Anthropic field names together)."""
    return {
        "id": model_id,
        "object": "model",
        "type": "model",
        "created": 0,
        "created_at": "2025-01-01T00:00:00Z",
        "owned_by": "aeval",
        "display_name": model_id,
    }


def error_body(kind: str, message: str) -> dict[str, Any]:
    """An error body both SDK families read (Anthropic's shape with OpenAI's fields)."""
    return {
        "type": "error",
        "error": {"type": kind, "message": message, "param": None, "code": None},
    }
