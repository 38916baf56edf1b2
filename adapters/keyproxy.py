"""The key-holding proxy: model API keys stay in aeval's process, never in an agent CLI.

One proxy per process, started on first use in a daemon thread (uvicorn + starlette, httpx
for the upstream). It listens on ``127.0.0.1`` (a random port) and on a unix socket in a
private folder (for a sandbox without network: see `BRIDGE`). Per attempt, `grant` registers
the real upstream base URL and key and yields a `Grant`: a random token and a local base URL.
The CLI gets those two as its base URL and "API key"; the proxy

- accepts a request only with a live token, in ``x-api-key`` or ``Authorization: Bearer``;
  an unknown or revoked token answers 401 and the upstream is never contacted;
- replaces the token with the real key in the upstream's style (``anthropic``: ``x-api-key``;
  ``bearer``: ``Authorization: Bearer``), and forwards method, path, query and body to the
  upstream's origin (the path is kept: the local base URL has the upstream's path);
- streams the answer back as it arrives (raw bytes: a compressed answer stays compressed,
  with its ``content-encoding``), so SSE streams stay incremental.

Nothing of a request (headers, bodies) is ever logged. Limits: the token is visible to the
agent's tools for the attempt's lifetime (they can read the CLI's environment or memory) and
usable only through this proxy, only towards the upstream the attempt was given, and only
until the attempt ends (`grant` revokes it on exit).
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
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from aeval.tree import write_private

AuthStyle = Literal["anthropic", "bearer"]
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host",
                        "content-length"})
CREDENTIAL_HEADERS = frozenset({"x-api-key", "authorization", "api-key"})
READ_TIMEOUT_S = 900.0
"""Longest silence from the upstream inside one answer (a slow model turn)."""


@dataclass(frozen=True)
class Upstream:
    origin: str  # scheme://host[:port]
    key: str
    style: AuthStyle
    loopback: bool  # reached directly, never through the HTTP(S)_PROXY of aeval's environment


@dataclass(frozen=True)
class Grant:
    """What a CLI gets instead of the key: a token and where to send it."""

    token: str
    base_url: str  # the upstream base URL with the proxy's origin
    socket_path: str  # the proxy's unix socket (for a sandbox without network)
    port: int


def _json_error(status: int, message: str) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"type": "error", "error": {"type": "authentication_error"
                         if status == 401 else "api_error", "message": message}},
                        status_code=status)


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
        self._lock = threading.Lock()
        self._clients: dict[bool, Any] = {}  # by Upstream.loopback
        self._dir = Path(tempfile.mkdtemp(prefix="aeval-keyproxy-"))
        os.chmod(self._dir, 0o700)
        atexit.register(shutil.rmtree, self._dir, True)
        self.socket_path = str(self._dir / "proxy.sock")
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", 0))
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind(self.socket_path)
        self.port = tcp.getsockname()[1]
        self._sockets = [tcp, unix]
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="aeval-keyproxy", daemon=True)
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("the key proxy did not start within 30 s")

    # ---- grants ----------------------------------------------------------------------------

    def register(self, upstream_base: str, key: str, style: AuthStyle) -> Grant:
        """A fresh token for ``upstream_base`` with ``key``; call `revoke` when done."""
        parts = urlsplit(upstream_base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) base URL: {upstream_base!r}")
        token = "aeval-proxy-" + secrets.token_urlsafe(32)
        with self._lock:
            self._grants[token] = Upstream(f"{parts.scheme}://{parts.netloc}", key, style,
                                           _is_loopback(parts.hostname))
        base = f"http://127.0.0.1:{self.port}{parts.path.rstrip('/')}"
        return Grant(token=token, base_url=base, socket_path=self.socket_path, port=self.port)

    def revoke(self, token: str) -> None:
        with self._lock:
            self._grants.pop(token, None)

    def _lookup(self, token: str | None) -> Upstream | None:
        if not token:
            return None
        with self._lock:
            return self._grants.get(token)

    # ---- serving ---------------------------------------------------------------------------

    def _serve(self) -> None:
        import uvicorn
        from starlette.applications import Starlette
        from starlette.routing import Route

        app = Starlette(routes=[Route("/{path:path}", self._forward,
                                      methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off",
                                log_level="critical", timeout_keep_alive=30)
        server = uvicorn.Server(config)

        async def main() -> None:
            import httpx

            timeout = httpx.Timeout(60.0, read=READ_TIMEOUT_S)
            self._clients = {loop: httpx.AsyncClient(timeout=timeout, trust_env=not loop)
                             for loop in (True, False)}
            serving = asyncio.create_task(server.serve(sockets=self._sockets))
            while not server.started and not serving.done():
                await asyncio.sleep(0.01)
            self._started.set()
            await serving

        try:
            asyncio.run(main())
        except BaseException as exc:  # pragma: no cover - the proxy thread must not vanish
            print(f"aeval key proxy stopped: {type(exc).__name__}: {exc}", file=sys.stderr)

    async def _forward(self, request: Any) -> Any:
        from starlette.responses import StreamingResponse

        upstream = self._lookup(_token_of(request.headers))
        if upstream is None:
            return _json_error(401, "aeval key proxy: unknown or expired token")
        headers = [(k, v) for k, v in request.headers.items()
                   if k.lower() not in HOP_BY_HOP and k.lower() not in CREDENTIAL_HEADERS]
        if "accept-encoding" not in request.headers:  # else httpx would ask for compression
            headers.append(("accept-encoding", "identity"))
        if upstream.style == "anthropic":
            headers.append(("x-api-key", upstream.key))
        else:
            headers.append(("authorization", f"Bearer {upstream.key}"))
        body = await request.body()
        url = upstream.origin + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        client = self._clients[upstream.loopback]
        req = client.build_request(request.method, url, headers=headers, content=body)
        try:
            answer = await client.send(req, stream=True)
        except Exception as exc:  # the upstream is down: the CLI sees a 502 (transient)
            return _json_error(502, f"aeval key proxy: upstream unreachable "
                                    f"({type(exc).__name__})")
        out = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP}

        async def body() -> AsyncIterator[bytes]:
            try:  # raw bytes: the content-encoding header stays true
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:  # also when the CLI goes away mid-stream
                await answer.aclose()

        return StreamingResponse(body(), status_code=answer.status_code, headers=out)


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
def grant(upstream_base: str, key: str, style: AuthStyle) -> Iterator[Grant]:
    """A token for one attempt, revoked when the block ends."""
    proxy = key_proxy()
    g = proxy.register(upstream_base, key, style)
    try:
        yield g
    finally:
        proxy.revoke(g.token)


BRIDGE = '''\
"""aeval's bridge for a sandbox without network: listen on 127.0.0.1:PORT inside the
sandbox's own network namespace, forward every connection to the key proxy's unix socket,
and exec the command. Usage: bridge.py SOCKET PORT COMMAND..."""
import os
import socket
import sys
import threading

sock_path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(64)


def pump(src, dst):
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve():
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(sock_path)
        except OSError:
            client.close()
            continue
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


if os.fork() == 0:  # the child serves until the sandbox ends; the parent becomes the command
    serve()
    os._exit(0)
listener.close()
os.execvp(argv[0], argv)
'''


def bridged(argv: list[str], g: Grant, script: Path, trusted: Path | None = None
            ) -> list[str]:
    """``argv`` started behind the bridge (the script written to ``script``, beneath
    ``trusted`` without following a symlink: `aeval.tree`): for a sandbox that unshares the
    network, where the proxy's loopback port is not reachable."""
    write_private(script, BRIDGE, trusted or script.parent)
    python = "/usr/bin/python3" if Path("/usr/bin/python3").is_file() else sys.executable
    return [python, "-I", str(script), g.socket_path, str(g.port), *argv]
