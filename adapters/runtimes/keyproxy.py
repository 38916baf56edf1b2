"""The key-holding proxy: model API keys stay in aeval's process, never in an agent CLI.

One proxy per process, started on first use in a daemon thread (uvicorn + starlette, httpx
for the upstream). It listens on no TCP port: per attempt, `grant` registers the real
upstream base URL, key, the model endpoints and the models the attempt may use, and opens a
unix socket of that grant's own in a private folder (0700). The attempt reaches it only
through its bridge (`bridged`): a small listener on ``127.0.0.1:PORT`` started with the CLI
(inside the sandbox, in the sandbox's own network namespace when the case has no network),
which forwards each connection to the grant's socket, bound into that sandbox alone. The
CLI gets a random token and the bridge's base URL as its base URL and "API key"; the proxy

- accepts a request only on the grant's own socket with the grant's live token, in
  ``x-api-key`` or ``Authorization: Bearer``; an unknown or revoked token answers 401 and
  the upstream is never contacted;
- forwards only the grant's model endpoints (POST to the base URL's ``/chat/completions``,
  ``/responses``, ``/messages`` and what a CLI needs beside them, such as Anthropic's
  ``/messages/count_tokens``), and only for the grant's models (the JSON body's ``model``):
  any other method, path or model answers 403, the upstream never contacted. No file
  deletion, batch job or model the run did not name goes out with the real key;
- replaces the token with the real key in the upstream's style (``anthropic``: ``x-api-key``;
  ``bearer``: ``Authorization: Bearer``), and forwards method, path, query and body to the
  upstream's origin (the path is kept: the local base URL has the upstream's path);
- streams the answer back as it arrives (raw bytes: a compressed answer stays compressed,
  with its ``content-encoding``), so SSE streams stay incremental.

Nothing of a request (headers, bodies) is ever logged. Limits: the token is visible to the
agent's tools for the attempt's lifetime (they can read the CLI's environment or memory) and
usable only through this attempt's bridge, only for its model endpoints and models, and only
until the attempt ends (`grant` revokes it and removes its socket on exit).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ipaddress
import os
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import zlib
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from aeval import bounded_json
from aeval.adapters.sandbox._bridge import BRIDGE

AuthStyle = Literal["anthropic", "bearer"]
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host",
                        "content-length"})
CREDENTIAL_HEADERS = frozenset({"x-api-key", "authorization", "api-key"})
READ_TIMEOUT_S = 900.0
"""Longest silence from the upstream inside one answer (a slow model turn)."""
MODEL_ENDPOINTS: dict[AuthStyle, tuple[str, ...]] = {
    "anthropic": ("/messages", "/messages/count_tokens"),
    "bearer": ("/chat/completions", "/responses"),
}
"""The model endpoints of each upstream style, relative to the upstream base URL (one that
ends in ``/v1``); a caller whose base URL has no version path names its own."""
MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request body the proxy reads to check its model (a long conversation with images)."""


@dataclass(frozen=True)
class Upstream:
    origin: str  # scheme://host[:port]
    key: str
    style: AuthStyle
    loopback: bool  # reached directly, never through the HTTP(S)_PROXY of aeval's environment
    paths: frozenset[str]  # the full request paths of the model endpoints it may use
    models: frozenset[str]  # the ``model`` values it may send


@dataclass(frozen=True)
class Grant:
    """What a CLI gets instead of the key: a token and where to send it."""

    token: str
    base_url: str  # the upstream base URL with the bridge's origin (127.0.0.1:port)
    socket_path: str  # the grant's own unix socket, which the bridge forwards to
    port: int  # the bridge's loopback port


def _json_error(status: int, message: str) -> Any:
    from starlette.responses import JSONResponse

    kind = {401: "authentication_error", 403: "permission_error"}.get(status, "api_error")
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message}},
                        status_code=status)


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _TooLarge(ValueError):
    """A compressed request body that decompresses to more than `MAX_BODY_BYTES`."""


def _decompressed(body: bytes, wbits: int) -> bytes:
    """``body`` inflated, at most `MAX_BODY_BYTES` of it: a few kilobytes that inflate to
    gigabytes (a decompression bomb from inside the sandbox) stop at the cap, in aeval's
    memory, and raise `_TooLarge`."""
    inflater = zlib.decompressobj(wbits)
    out = inflater.decompress(body, MAX_BODY_BYTES + 1)
    if len(out) <= MAX_BODY_BYTES and not inflater.unconsumed_tail:
        out += inflater.flush()  # all input consumed: nothing of size is left to come
    if len(out) > MAX_BODY_BYTES or inflater.unconsumed_tail:
        raise _TooLarge(f"over {MAX_BODY_BYTES} bytes once decompressed")
    return out


def _body_model(body: bytes, encoding: str) -> str | None:
    """The ``model`` of a JSON request body (decompressed for the check), or None.
    `_TooLarge` when it decompresses past the cap."""
    try:
        if encoding == "gzip":
            body = _decompressed(body, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            body = _decompressed(body, zlib.MAX_WBITS)
        elif encoding not in ("", "identity"):
            return None
        doc = bounded_json.loads(body)
    except _TooLarge:
        raise
    except (ValueError, zlib.error):
        return None
    model = doc.get("model") if isinstance(doc, dict) else None
    return model if isinstance(model, str) else None


def _is_loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _token_of(headers: Any) -> str | None:
    key = headers.get("x-api-key") or headers.get("api-key")
    if key:
        return key.strip()
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


class KeyProxy:
    """The process's proxy (see the module docstring). Use `key_proxy()` to get it."""

    def __init__(self) -> None:
        self._grants: dict[str, Upstream] = {}
        self._servers: dict[str, Any] = {}  # token -> the uvicorn server of its socket
        self._lock = threading.Lock()
        self._clients: dict[bool, Any] = {}  # by Upstream.loopback
        self._dir = Path(tempfile.mkdtemp(prefix="aeval-keyproxy-"))
        os.chmod(self._dir, 0o700)
        atexit.register(shutil.rmtree, self._dir, True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run_loop, name="aeval-keyproxy",
                                        daemon=True)
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("the key proxy did not start within 30 s")

    # ---- grants ----------------------------------------------------------------------------

    def register(self, upstream_base: str, key: str, style: AuthStyle, models: Iterable[str],
                 endpoints: Iterable[str] | None = None) -> Grant:
        """A fresh token and socket for ``upstream_base`` with ``key``, for ``models`` on
        ``endpoints`` (paths relative to the base URL; default: the style's
        `MODEL_ENDPOINTS`); call `revoke` when done."""
        parts = urlsplit(upstream_base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) base URL: {upstream_base!r}")
        allowed = frozenset(m for m in models if m)
        if not allowed:
            raise ValueError("a key proxy grant needs the model(s) the attempt may use")
        base_path = parts.path.rstrip("/")
        paths = frozenset(base_path + e for e in (endpoints or MODEL_ENDPOINTS[style]))
        token = "aeval-proxy-" + secrets.token_urlsafe(32)
        upstream = Upstream(f"{parts.scheme}://{parts.netloc}", key, style,
                            _is_loopback(parts.hostname), paths, allowed)
        # a folder per grant: a sandbox that binds the socket's folder sees no other grant's
        folder = self._dir / secrets.token_hex(8)
        folder.mkdir(mode=0o700)
        path = str(folder / "proxy.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        with self._lock:
            self._grants[token] = upstream
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self._open(token, sock), self._loop).result(30)
        port = _free_port()
        return Grant(token=token, base_url=f"http://127.0.0.1:{port}{base_path}",
                     socket_path=path, port=port)

    def revoke(self, grant: Grant | str) -> None:
        """End a grant: its token is refused from now on and its socket goes away."""
        token = grant if isinstance(grant, str) else grant.token
        with self._lock:
            self._grants.pop(token, None)
            server = self._servers.pop(token, None)
        if server is not None:
            server.should_exit = True
        if isinstance(grant, Grant):
            shutil.rmtree(Path(grant.socket_path).parent, ignore_errors=True)

    def _lookup(self, token: str | None, own: str) -> Upstream | None:
        if not token or not secrets.compare_digest(token, own):
            return None
        with self._lock:
            return self._grants.get(token)

    # ---- serving ---------------------------------------------------------------------------

    def _run_loop(self) -> None:
        async def main() -> None:
            import httpx

            timeout = httpx.Timeout(60.0, read=READ_TIMEOUT_S)
            self._clients = {loop: httpx.AsyncClient(timeout=timeout, trust_env=not loop)
                             for loop in (True, False)}
            self._loop = asyncio.get_running_loop()
            self._started.set()
            await asyncio.Event().wait()  # serve grants until the process ends

        try:
            asyncio.run(main())
        except BaseException as exc:  # pragma: no cover - the proxy thread must not vanish
            print(f"aeval key proxy stopped: {type(exc).__name__}: {exc}", file=sys.stderr)

    async def _open(self, token: str, sock: socket.socket) -> None:
        """Serve one grant's socket (on the proxy's loop) until `revoke` stops it."""
        import uvicorn
        from starlette.applications import Starlette
        from starlette.routing import Route

        async def forward(request: Any) -> Any:
            return await self._forward(request, token)

        app = Starlette(routes=[Route("/{path:path}", forward, methods=[
            "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])])
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off",
                                log_level="critical", timeout_keep_alive=30,
                                timeout_graceful_shutdown=1)
        server = uvicorn.Server(config)
        with self._lock:
            self._servers[token] = server
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.005)

    async def _forward(self, request: Any, own: str) -> Any:
        from starlette.responses import StreamingResponse

        upstream = self._lookup(_token_of(request.headers), own)
        if upstream is None:
            return _json_error(401, "aeval key proxy: unknown or expired token")
        path = request.url.path
        if request.method != "POST" or path not in upstream.paths:
            return _json_error(403, f"aeval key proxy: {request.method} {path} is not a model "
                                    "endpoint this attempt may use")
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return _json_error(413, "aeval key proxy: request body too large")
        try:
            model = _body_model(body, request.headers.get("content-encoding", "").lower())
        except _TooLarge as exc:
            return _json_error(413, f"aeval key proxy: request body {exc}")
        if model not in upstream.models:
            return _json_error(403, f"aeval key proxy: model {model!r} is not one this run "
                                    "uses")
        headers = [(k, v) for k, v in request.headers.items()
                   if k.lower() not in HOP_BY_HOP and k.lower() not in CREDENTIAL_HEADERS]
        if "accept-encoding" not in request.headers:  # else httpx would ask for compression
            headers.append(("accept-encoding", "identity"))
        if upstream.style == "anthropic":
            headers.append(("x-api-key", upstream.key))
        else:
            headers.append(("authorization", f"Bearer {upstream.key}"))
        url = upstream.origin + path
        if request.url.query:
            url += "?" + request.url.query
        client = self._clients[upstream.loopback]
        req = client.build_request("POST", url, headers=headers, content=body)
        try:
            answer = await client.send(req, stream=True)
        except Exception as exc:  # the upstream is down: the CLI sees a 502 (transient)
            return _json_error(502, f"aeval key proxy: upstream unreachable "
                                    f"({type(exc).__name__})")
        out = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP}

        async def stream() -> AsyncIterator[bytes]:
            try:  # raw bytes: the content-encoding header stays true
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:  # also when the CLI goes away mid-stream
                await answer.aclose()

        return StreamingResponse(stream(), status_code=answer.status_code, headers=out)


_proxy: KeyProxy | None = None
_proxy_lock = threading.Lock()


def key_proxy() -> KeyProxy:
    """The process's proxy, started on first use."""
    global _proxy
    with _proxy_lock:
        if _proxy is None:
            _proxy = KeyProxy()
        return _proxy


@contextlib.contextmanager
def grant(upstream_base: str, key: str, style: AuthStyle, models: Iterable[str],
          endpoints: Iterable[str] | None = None) -> Iterator[Grant]:
    """A token and socket for one attempt, for ``models`` on ``endpoints`` (see
    `KeyProxy.register`), revoked when the block ends."""
    proxy = key_proxy()
    g = proxy.register(upstream_base, key, style, models, endpoints)
    try:
        yield g
    finally:
        proxy.revoke(g)




def bridged(argv: list[str], g: Grant) -> list[str]:
    """``argv`` started behind the grant's bridge, the one way to the key proxy: a listener
    on the grant's loopback port (in the network namespace the command runs in) that forwards
    to the grant's unix socket, and ends with the command. Started by absolute path, with the
    script on its command line (nothing written where the attempt could change it)."""
    python = "/usr/bin/python3" if Path("/usr/bin/python3").is_file() else sys.executable
    return [python, "-I", "-c", BRIDGE, g.socket_path, str(g.port), *argv]
