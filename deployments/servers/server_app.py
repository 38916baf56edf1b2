"""The ASGI app of aeval's own Prefect servers (the embedded one and the reused local one):
Prefect's API app, with a ``Retry-After`` on every 503 it answers.

Prefect's server answers 503 when SQLite reports the database busy: typically a transaction
that read, then tried to write after another connection had committed
(``SQLITE_BUSY_SNAPSHOT``, reported at once, whatever the busy timeout). That conflict is
over as soon as it is reported, but Prefect's client waits ``2 ** attempt`` seconds before
it asks again unless the response says otherwise: 2 s for the first retry.
On a busy run it hit the one request every case chain waits for before it starts (the tag
concurrency slot of ``runtime:<name>``, a read then a write): all 20 chains of the latency
workload started 2 s late in about one run of three (benchmarks/README). With ``Retry-After``
the client retries after that many seconds (with its jitter on top), so the first retry
comes after 0.1 s; when 503s come one after another the delay doubles with every 503 of the
last 10 s, up to Prefect's own 2 s, so a server that keeps refusing is not asked harder.
(The case chains carry no tag and ask for no slot: ``tasks/_engine/limits.py``; the
503s left are those of the artifacts, logs and flow run states. Prefect's client gives up
after ``PREFECT_CLIENT_MAX_RETRIES`` tries, ~3 s of these delays: the case, or the run,
then ends `error`, exit 3.)

Only 503s without a ``Retry-After`` of their own are touched; nothing else passes through
here but the response's headers.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

BASE_S = 0.1
"""The delay the first 503 asks for."""
CAP_S = 2.0
"""The longest delay asked for: what Prefect's client waits on its own before its first retry."""
WINDOW_S = 10.0
"""How far back 503s count towards the next one's delay."""


class RetrySoon:
    """ASGI middleware: a ``Retry-After`` header on 503 responses (see the module)."""

    def __init__(self, app: Any, base_s: float = BASE_S, cap_s: float = CAP_S,
                 window_s: float = WINDOW_S, clock=time.monotonic):
        self.app = app
        self.base_s, self.cap_s, self.window_s, self.clock = base_s, cap_s, window_s, clock
        self._recent: collections.deque[float] = collections.deque()
        self._lock = threading.Lock()

    def delay(self) -> float:
        """The seconds the next 503 asks for: ``base_s`` doubled for every 503 of the last
        ``window_s``, at most ``cap_s``. Records this one."""
        now = self.clock()
        with self._lock:
            while self._recent and now - self._recent[0] > self.window_s:
                self._recent.popleft()
            n = len(self._recent)
            self._recent.append(now)
        return min(self.cap_s, self.base_s * 2 ** min(n, 16))

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_retry_after(message) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 503:
                headers = list(message.get("headers") or [])
                if not any(k.lower() == b"retry-after" for k, _ in headers):
                    headers.append((b"retry-after", f"{self.delay():.3f}".encode()))
                    message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_retry_after)


def create_app() -> RetrySoon:
    """uvicorn's factory (``aeval.deployments.servers.server_app:create_app``): Prefect's API app,
    wrapped."""
    from prefect.server.api.server import create_app as prefect_app

    return RetrySoon(prefect_app())
