"""A loopback HTTP/1.1 proxy in front of a Prefect server: it counts the API requests by
method and path (ids replaced by ``{id}``), and can refuse some of them with 503 or reset
the connection before the request reaches the server (never after: the server never saw a
request the client is told failed, so a retry cannot do anything twice).

Used by benchmarks/api_requests.py (the count per case run) and
tests/integration/test_busy_server.py (the faults). A websocket upgrade (Prefect's events)
is forwarded and then piped both ways untouched; it is counted once.

    proxy = ApiProxy("127.0.0.1", server_port, faults=Faults(share_503=0.1, seed=1))
    with proxy.running():
        ...  # clients use proxy.api_url
    proxy.counts  # Counter of "POST /api/task_runs/{id}/set_state" -> n
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
import re
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024


def path_class(path: str) -> str:
    """``/api/task_runs/3fa8...-.../set_state?x=1`` -> ``/api/task_runs/{id}/set_state``."""
    return ID.sub("{id}", path.split("?", 1)[0])


@dataclass
class Request:
    """One request as the proxy read it: method, path, headers (lower-case names), body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def key(self) -> str:
        return f"{self.method} {path_class(self.path)}"


@dataclass
class Faults:
    """Which requests fail: a share refused with 503 (``Retry-After: retry_after_s``), a share
    whose connection is reset, and ``refuse(request)``: True refuses that one with 503
    whatever the shares say. Seeded, so a run's faults are one draw, not the clock's."""

    share_503: float = 0.0
    share_reset: float = 0.0
    retry_after_s: float = 0.05
    seed: int = 0
    refuse: Callable[[Request], bool] | None = None
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def decide(self, request: Request) -> str:
        """``pass``, ``503`` or ``reset``."""
        if self.refuse is not None and self.refuse(request):
            return "503"
        if request.headers.get("upgrade", "").lower() == "websocket":
            return "pass"
        draw = self._rng.random()
        if draw < self.share_503:
            return "503"
        if draw < self.share_503 + self.share_reset:
            return "reset"
        return "pass"


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    except asyncio.LimitOverrunError as exc:
        raise ValueError("head too long") from exc
    return head


def _headers(head: bytes) -> tuple[str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    out: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip().lower()] = v.strip()
    return lines[0], out


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    """A message body by Content-Length or chunked framing (returned raw, as framed)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        total = 0
        while True:
            line = await reader.readuntil(b"\r\n")
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            total += size
            if total > MAX_BODY:
                raise ValueError("body too long")
            if size == 0:  # the last chunk, then trailers up to an empty line
                parts.append(line)
                while (trailer := await reader.readuntil(b"\r\n")) != b"\r\n":
                    parts.append(trailer)
                parts.append(b"\r\n")
                return b"".join(parts)
            parts.append(line + await reader.readexactly(size + 2))
    n = int(headers.get("content-length") or 0)
    if n > MAX_BODY:
        raise ValueError("body too long")
    return await reader.readexactly(n) if n else b""


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0): the client sees a connection reset."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class ApiProxy:
    """The proxy (see the module). ``counts``: requests that reached the server, by key;
    ``refused``: requests answered 503 or reset by the proxy, by key (a request the client
    retries is counted once per try)."""

    def __init__(self, host: str, port: int, faults: Faults | None = None):
        self.upstream = (host, port)
        self.faults = faults or Faults()
        self.counts: collections.Counter[str] = collections.Counter()
        self.refused: collections.Counter[str] = collections.Counter()
        self.busy: collections.Counter[str] = collections.Counter()
        """Requests the server itself answered 503 (SQLite busy), by key."""
        self.responses: list[tuple[Request, bytes]] = []
        """(request, response body) of the requests ``keep`` selects."""
        self.keep: Callable[[Request], bool] = lambda r: False
        self.port = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def reset_counts(self) -> None:
        with self._lock:
            self.counts.clear()
            self.refused.clear()
            self.busy.clear()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _client(self, creader: asyncio.StreamReader,
                      cwriter: asyncio.StreamWriter) -> None:
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while (head := await _read_head(creader)) is not None:
                line, headers = _headers(head)
                method, path = line.split(" ", 2)[:2]
                body = await _read_body(creader, headers)
                request = Request(method, path, headers, body)
                with self._lock:
                    verdict = self.faults.decide(request)
                    (self.counts if verdict == "pass" else self.refused)[request.key] += 1
                if verdict == "reset":
                    _reset(cwriter)
                    return
                if verdict == "503":
                    retry = f"{self.faults.retry_after_s:.3f}".encode()
                    cwriter.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n"
                                  b"retry-after: " + retry + b"\r\n\r\n")
                    await cwriter.drain()
                    continue
                if upstream is None:
                    upstream = await asyncio.open_connection(*self.upstream)
                ureader, uwriter = upstream
                uwriter.write(head + body)
                await uwriter.drain()
                if headers.get("upgrade", "").lower() == "websocket":
                    await asyncio.gather(self._pipe(creader, uwriter),
                                         self._pipe(ureader, cwriter))
                    return
                rhead = await _read_head(ureader)
                if rhead is None:
                    _reset(cwriter)
                    return
                status_line, rheaders = _headers(rhead)
                status = int(status_line.split(" ", 2)[1])
                no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
                if no_body:
                    rbody = b""
                elif "content-length" in rheaders or "chunked" in rheaders.get(
                        "transfer-encoding", "").lower():
                    rbody = await _read_body(ureader, rheaders)
                else:  # until the server closes
                    rbody = await ureader.read(MAX_BODY)
                    upstream = None
                with self._lock:
                    if status == 503:
                        self.busy[request.key] += 1
                    if self.keep(request):
                        self.responses.append((request, rbody))
                cwriter.write(rhead + rbody)
                await cwriter.drain()
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            _reset(cwriter)
        finally:
            if upstream is not None:
                with contextlib.suppress(OSError):
                    upstream[1].close()
            with contextlib.suppress(OSError):
                cwriter.close()

    @contextlib.contextmanager
    def running(self) -> Iterator[ApiProxy]:
        """Serve on a free loopback port in a thread of its own until the block ends."""
        started = threading.Event()
        stop: list[asyncio.Event] = []

        async def main() -> None:
            server = await asyncio.start_server(self._client, "127.0.0.1", 0,
                                                limit=MAX_HEAD)
            self.port = server.sockets[0].getsockname()[1]
            stop.append(asyncio.Event())
            started.set()
            async with server:
                await stop[0].wait()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(main())
            finally:
                loop.close()

        thread = threading.Thread(target=run, name="api-proxy", daemon=True)
        thread.start()
        if not started.wait(10):
            raise RuntimeError("the API proxy did not start")
        try:
            yield self
        finally:
            assert self._loop is not None
            self._loop.call_soon_threadsafe(stop[0].set)
            thread.join(10)


SKILL_MD = """---
name: {name}
description: Mark a folder as checked by writing a status file. Use when asked to mark,
  stamp or sign off a folder.
---

# Mark checked

```bash
sh $SKILL_DIR/scripts/mark.sh --status ok > out.txt
```

Prints the status given (`ok` by default), which the block writes to `out.txt`.
"""

MARK_SH = """#!/bin/sh
# Print the status to record for a folder: --status WORD (default: ok).
set -e
status=ok
while [ $# -gt 0 ]; do
  case "$1" in
    --status) status="$2"; shift 2 ;;
    -h|--help) echo "usage: mark.sh [--status WORD]"; exit 0 ;;
    *) echo "mark.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done
echo "$status"
"""


def write_marketplace(root, skills: int, cases: int) -> None:
    """``skills`` skills of ``cases`` literal cases each (one step, the skill's script writing
    ``out.txt``; one ``file_contains`` assertion): the marketplace of issue 29. Each skill
    also gets aeval's SKILL.md doc-test case (``skill-md``)."""
    import json
    from pathlib import Path

    for s in range(skills):
        name = f"mark-checked-{s:03d}"
        d = Path(root) / name
        (d / "scripts").mkdir(parents=True)
        (d / "SKILL.md").write_text(SKILL_MD.format(name=name))
        (d / "scripts" / "mark.sh").write_text(MARK_SH)
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": f"mark-{c}", "prompt": f"Mark this folder as checked (variant {c}).",
            "expected_outcome": "out.txt says ok.",
            "steps": ["sh $SKILL_DIR/scripts/mark.sh --status ok > out.txt"],
            "assertions": [{"type": "file_contains", "path": "out.txt", "pattern": "ok"}],
            "timeout_s": 60} for c in range(cases)]}, indent=2))


@contextlib.contextmanager
def prefect_server(home, timeout_s: float = 180) -> Iterator[tuple[int, dict[str, str]]]:
    """aeval's own server app (Prefect's API under uvicorn, `aeval.deployments.servers.server_app`)
    on a free loopback port with its own PREFECT_HOME ``home``; yields the port and the
    environment its clients start from (no PREFECT_API_URL yet). Stopped, bounded, at the end."""
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_LOGGING_LEVEL="WARNING")
    log = (home / "server.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory",
         "aeval.deployments.servers.server_app:create_app",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
         "--lifespan", "on"], env=env, stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited {proc.returncode}: see {log.name}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health",
                                            timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer in {timeout_s:.0f} s")
            time.sleep(0.2)
        yield port, env
    finally:
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            if proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait)
        log.close()
