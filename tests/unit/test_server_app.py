"""aeval's Prefect servers answer a 503 with a short Retry-After: Prefect's own client then
retries a refused SQLite write after ~0.1 s instead of its own 2 s
(aeval.deployments.servers.server_app)."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import httpx
import sqlalchemy.exc
from fastapi import FastAPI
from prefect.client.base import PrefectHttpxAsyncClient
from prefect.server.api.server import custom_internal_exception_handler

from aeval.deployments.servers.server_app import RetrySoon


def locked_once_app() -> tuple[FastAPI, list[float]]:
    """An API whose first write is refused as Prefect's server refuses it when another
    connection committed first (SQLite busy: Prefect's own handler answers 503)."""
    app = FastAPI()
    app.add_exception_handler(Exception, custom_internal_exception_handler)
    calls: list[float] = []

    @app.post("/api/v2/concurrency_limits/increment-with-lease")
    async def increment() -> dict:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise sqlalchemy.exc.OperationalError(
                "UPDATE concurrency_limit_v2 ...", {}, sqlite3.OperationalError(
                    "database is locked"))
        return {"lease_id": "00000000-0000-0000-0000-000000000000", "limits": []}

    return app, calls


async def post_through(app) -> tuple[int, float]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with PrefectHttpxAsyncClient(transport=transport, base_url="http://server") as c:
        start = time.monotonic()
        r = await c.post("/api/v2/concurrency_limits/increment-with-lease", json={})
        return r.status_code, time.monotonic() - start


def test_prefects_client_retries_a_refused_write_after_a_tenth_of_a_second():
    app, calls = locked_once_app()
    status, took = asyncio.run(post_through(RetrySoon(app)))
    assert status == 200 and len(calls) == 2
    assert took < 1.0, f"the retry waited {took:.2f} s"


def test_without_it_prefects_client_waits_two_seconds():
    """Why the wrapper exists: Prefect's client alone backs off 2 s (jittered) on a 503."""
    app, calls = locked_once_app()
    status, took = asyncio.run(post_through(app))
    assert status == 200 and len(calls) == 2
    assert took >= 1.4


def test_the_delay_doubles_with_the_503s_of_the_last_ten_seconds_up_to_two():
    now = [100.0]
    mw = RetrySoon(None, clock=lambda: now[0])
    delays = [mw.delay() for _ in range(7)]
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    now[0] += 10.5  # the storm is over: the next refusal is retried soon again
    assert mw.delay() == 0.1


async def _response(status: int, headers: list[tuple[bytes, bytes]]) -> list[dict]:
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    await RetrySoon(app)({"type": "http", "method": "GET", "path": "/"}, receive, send)
    return sent


def test_other_responses_and_a_503_with_its_own_retry_after_pass_unchanged():
    ok = asyncio.run(_response(200, [(b"content-type", b"application/json")]))
    assert ok[0]["headers"] == [(b"content-type", b"application/json")]
    own = asyncio.run(_response(503, [(b"Retry-After", b"30")]))
    assert own[0]["headers"] == [(b"Retry-After", b"30")]
    added = asyncio.run(_response(503, []))
    assert added[0]["headers"] == [(b"retry-after", b"0.100")]
