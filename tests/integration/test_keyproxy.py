"""The key-holding proxy against real servers on loopback: the scripted model server as the
upstream (it records a hash of the credential it received, never the credential), and a tiny
upstream that holds its stream open to show answers are passed on as they arrive. Every
request goes the way a CLI's does: through the grant's bridge, a real process."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import socket
import subprocess
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from aeval.adapters.runtimes.keyproxy import Grant, bridged, grant, key_proxy
from aeval.testing.model_server import Script, ScriptedModelServer, Turn

pytestmark = pytest.mark.integration

REAL_KEY = "sk-real-upstream-key-5521"
CHAT = {"model": "scripted", "messages": [{"role": "user", "content": "Summarise the report."}]}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _listening(port: int) -> bool:
    with contextlib.closing(socket.socket()) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def bridge(g: Grant):
    """The grant's bridge in front of a long-running command, as a CLI would be started."""
    proc = subprocess.Popen(bridged([sys.executable, "-c", "import time; time.sleep(300)"], g))
    try:
        deadline = time.monotonic() + 20
        while not _listening(g.port):
            assert proc.poll() is None and time.monotonic() < deadline, "the bridge did not start"
            time.sleep(0.02)
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def srv():
    with ScriptedModelServer([Script(name="s", match="Summarise",
                                     turns=[Turn(text="It is short.")])]) as server:
        yield server


def test_unknown_or_revoked_token_is_refused_and_the_upstream_never_contacted(srv):
    with grant(srv.base_url_openai, REAL_KEY, "bearer", models=["scripted"]) as g, bridge(g):
        url = g.base_url + "/chat/completions"
        wrong = httpx.post(url, json=CHAT, headers={"authorization": "Bearer aeval-proxy-x"})
        missing = httpx.post(url, json=CHAT)
        real_key = httpx.post(url, json=CHAT, headers={"authorization": f"Bearer {REAL_KEY}"})
        ok = httpx.post(url, json=CHAT, headers={"authorization": f"Bearer {g.token}"})
        key_proxy().revoke(g)
        # a revoked grant's socket goes away: the refusal is a 401 while its server stops,
        # then a closed connection
        try:
            revoked = httpx.post(url, json=CHAT,
                                 headers={"authorization": f"Bearer {g.token}"}).status_code
        except httpx.TransportError as exc:
            revoked = type(exc).__name__
    assert [r.status_code for r in (wrong, missing, real_key)] == [401] * 3
    assert revoked in (401, "ReadError", "RemoteProtocolError", "ConnectError"), revoked
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "It is short."
    assert len(srv.requests) == 1  # only the request with the live token got through


def test_upstream_receives_the_real_key_in_its_own_header_style(srv):
    with grant(srv.base_url_openai, REAL_KEY, "bearer", models=["scripted"]) as g, bridge(g):
        httpx.post(g.base_url + "/chat/completions?trace=1", json=CHAT,
                   headers={"authorization": f"Bearer {g.token}"}).raise_for_status()
    with grant(srv.url, "sk-ant-real-7781", "anthropic", models=["claude-scripted"],
               endpoints=("/v1/messages",)) as g, bridge(g):
        answer = httpx.post(g.base_url + "/v1/messages", headers={
            "x-api-key": g.token, "anthropic-version": "2023-06-01"},
            json={"model": "claude-scripted", "max_tokens": 100,
                  "messages": CHAT["messages"]})
    assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "It is short."
    openai_req, anthropic_req = srv.requests
    assert openai_req.path == "/v1/chat/completions" and openai_req.headers[
        "authorization"] == "Bearer ***"
    assert openai_req.credential_sha256 == sha(REAL_KEY)
    assert anthropic_req.path == "/v1/messages" and "authorization" not in anthropic_req.headers
    assert anthropic_req.credential_sha256 == sha("sk-ant-real-7781")
    assert anthropic_req.headers["anthropic-version"] == "2023-06-01"


def test_only_the_model_endpoints_and_the_runs_models_are_forwarded(srv):
    """A tool holding the attempt's token tries what the real key could do elsewhere: list
    and delete files, start a batch job that outlives the attempt, use another model (also
    hidden in a compressed body, or behind a path that walks out of the endpoint)."""
    with grant(srv.base_url_openai, REAL_KEY, "bearer", models=["scripted"]) as g, bridge(g):
        auth = {"authorization": f"Bearer {g.token}"}
        base = g.base_url

        def other(model: str) -> dict:
            return {**CHAT, "model": model}

        refused = {
            "list models": httpx.get(base + "/models", headers=auth),
            "list files": httpx.get(base + "/files", headers=auth),
            "delete a file": httpx.delete(base + "/files/file-abc123", headers=auth),
            "upload a file": httpx.post(base + "/files", headers=auth, json={"purpose": "x"}),
            "start a batch": httpx.post(base + "/batches", headers=auth, json={
                "input_file_id": "file-abc123", "endpoint": "/v1/chat/completions",
                "completion_window": "24h", "model": "scripted"}),
            "GET an endpoint": httpx.get(base + "/chat/completions", headers=auth),
            "walk out": httpx.post(base + "/chat/completions/../../v1/files", headers=auth,
                                   json=CHAT),
            "another model": httpx.post(base + "/chat/completions", headers=auth,
                                        json=other("gpt-4o")),
            "another model, responses": httpx.post(base + "/responses", headers=auth,
                                                   json={"model": "o3", "input": "hi"}),
            "no model": httpx.post(base + "/chat/completions", headers=auth,
                                   json={"messages": CHAT["messages"]}),
            "another model, gzipped": httpx.post(
                base + "/chat/completions",
                headers={**auth, "content-encoding": "gzip", "content-type": "application/json"},
                content=gzip.compress(json.dumps(other("gpt-4o")).encode())),
            "not json": httpx.post(base + "/chat/completions", headers=auth,
                                   content=b"model=scripted"),
        }
        allowed = httpx.post(base + "/chat/completions", headers=auth, json=CHAT)
    assert {k: r.status_code for k, r in refused.items()} == dict.fromkeys(refused, 403)
    assert all("aeval key proxy" in r.json()["error"]["message"] for r in refused.values())
    assert allowed.status_code == 200
    assert [r.path for r in srv.requests] == ["/v1/chat/completions"]  # nothing else went out


def test_the_proxy_is_reached_only_through_the_grants_own_bridge(srv):
    """No TCP port of the proxy's: before its bridge runs, the grant's base URL answers
    nothing; a token of another grant does not pass this grant's bridge; a revoked grant's
    socket is gone, and the bridge ends with its command."""
    with grant(srv.base_url_openai, REAL_KEY, "bearer", models=["scripted"]) as a, \
            grant(srv.base_url_openai, REAL_KEY, "bearer", models=["scripted"]) as b:
        assert a.socket_path != b.socket_path
        assert Path(a.socket_path).parent.stat().st_mode & 0o077 == 0  # private folder
        with pytest.raises(httpx.ConnectError):
            httpx.post(a.base_url + "/chat/completions", json=CHAT,
                       headers={"authorization": f"Bearer {a.token}"})
        with bridge(a) as proc:
            through_a = httpx.post(a.base_url + "/chat/completions", json=CHAT,
                                   headers={"authorization": f"Bearer {b.token}"})
            own = httpx.post(a.base_url + "/chat/completions", json=CHAT,
                             headers={"authorization": f"Bearer {a.token}"})
        assert proc.returncode is not None
    assert through_a.status_code == 401 and own.status_code == 200
    assert len(srv.requests) == 1
    assert not Path(a.socket_path).exists() and not Path(b.socket_path).exists()
    deadline = time.monotonic() + 10
    while _listening(a.port) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _listening(a.port), "the bridge outlived its command"


class HeldStream(BaseHTTPRequestHandler):
    """Sends one SSE event, waits until the test saw it, then sends the last (gzip when the
    body asks: the proxy must pass compressed bytes on with their content-encoding)."""

    protocol_version = "HTTP/1.1"
    seen = threading.Event()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        if body.get("gzip"):
            data = gzip.compress(b'{"ok": true}')
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-encoding", "gzip")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event, wait in ((b"data: first\n\n", True), (b"data: [DONE]\n\n", False)):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
            if wait:
                self.seen.wait(10)
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


def test_streams_arrive_incrementally_and_compressed_answers_intact():
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), HeldStream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    HeldStream.seen.clear()
    try:
        base = f"http://127.0.0.1:{upstream.server_address[1]}/v1"
        with grant(base, REAL_KEY, "bearer", models=["m"]) as g, bridge(g):
            auth = {"authorization": f"Bearer {g.token}"}
            with httpx.stream("POST", g.base_url + "/responses", json={"model": "m"},
                              headers=auth, timeout=20) as r:
                chunks = r.iter_text()
                first = next(chunks)
                # the upstream still holds its stream open: the first event came through alone
                assert first == "data: first\n\n" and not HeldStream.seen.is_set()
                HeldStream.seen.set()
                rest = "".join(chunks)
            assert rest == "data: [DONE]\n\n"
            zipped = httpx.post(g.base_url + "/responses", json={"model": "m", "gzip": True},
                                headers=auth)
        assert zipped.headers["content-encoding"] == "gzip" and zipped.json() == {"ok": True}
    finally:
        HeldStream.seen.set()
        upstream.shutdown()


def test_one_proxy_per_process():
    assert key_proxy() is key_proxy()


def test_a_grant_needs_the_runs_models():
    with pytest.raises(ValueError, match="model"), grant("http://127.0.0.1:9/v1", REAL_KEY,
                                                         "bearer", models=[]):
        pass


def test_a_body_that_inflates_past_the_cap_is_refused_not_inflated(srv):
    """A tool inside the sandbox posts a small gzip body (about 100 KB) that inflates to
    100 MB of padding around an allowed model: aeval's own process would have held all of it
    (a few kilobytes more make it gigabytes); it stops at the body cap and answers 413."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # a gzip stream
    head = json.dumps(CHAT)[:-1] + ', "metadata": "'
    parts = [packer.compress(head.encode())]
    parts += [packer.compress(b" " * (1 << 20)) for _ in range(100)]
    parts += [packer.compress(b'"}'), packer.flush()]
    bomb = b"".join(parts)
    assert len(bomb) < 200_000
    with grant(srv.base_url_openai, REAL_KEY, "bearer", models=["scripted"]) as g, bridge(g):
        auth = {"authorization": f"Bearer {g.token}", "content-encoding": "gzip",
                "content-type": "application/json"}
        refused = httpx.post(g.base_url + "/chat/completions", headers=auth, content=bomb,
                             timeout=60)
        small = httpx.post(g.base_url + "/chat/completions", headers=auth,
                           content=gzip.compress(json.dumps(CHAT).encode()), timeout=60)
    assert refused.status_code == 413
    assert "decompressed" in refused.json()["error"]["message"]
    assert small.status_code == 200  # an honest compressed body still goes through
    assert len(srv.requests) == 1
