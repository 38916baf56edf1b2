"""The key-holding proxy against real servers on loopback: the scripted model server as the
upstream (it records a hash of the credential it received, never the credential), and a tiny
upstream that holds its stream open to show answers are passed on as they arrive."""

from __future__ import annotations

import gzip
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from aeval.adapters.keyproxy import grant, key_proxy

from aeval.testing.model_server import Script, ScriptedModelServer, Turn

pytestmark = pytest.mark.integration

REAL_KEY = "sk-real-upstream-key-5521"
CHAT = {"model": "scripted", "messages": [{"role": "user", "content": "Summarise the report."}]}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def srv():
    with ScriptedModelServer([Script(name="s", match="Summarise",
                                     turns=[Turn(text="It is short.")])]) as server:
        yield server


def test_unknown_or_revoked_token_is_refused_and_the_upstream_never_contacted(srv):
    with grant(srv.base_url_openai, REAL_KEY, "bearer") as g:
        url = g.base_url + "/chat/completions"
        wrong = httpx.post(url, json=CHAT, headers={"authorization": "Bearer aeval-proxy-x"})
        missing = httpx.post(url, json=CHAT)
        real_key = httpx.post(url, json=CHAT, headers={"authorization": f"Bearer {REAL_KEY}"})
        ok = httpx.post(url, json=CHAT, headers={"authorization": f"Bearer {g.token}"})
    revoked = httpx.post(url, json=CHAT, headers={"authorization": f"Bearer {g.token}"})
    assert [r.status_code for r in (wrong, missing, real_key, revoked)] == [401] * 4
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "It is short."
    assert len(srv.requests) == 1  # only the request with the live token got through


def test_upstream_receives_the_real_key_in_its_own_header_style(srv):
    with grant(srv.base_url_openai, REAL_KEY, "bearer") as g:
        httpx.post(g.base_url + "/chat/completions?trace=1", json=CHAT,
                   headers={"authorization": f"Bearer {g.token}"}).raise_for_status()
    with grant(srv.url, "sk-ant-real-7781", "anthropic") as g:
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


class HeldStream(BaseHTTPRequestHandler):
    """Sends one SSE event, waits until the test saw it, then sends the last (gzip when the
    path says so: the proxy must pass compressed bytes on with their content-encoding)."""

    protocol_version = "HTTP/1.1"
    seen = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path.endswith("/gzip"):
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
        with grant(base, REAL_KEY, "bearer") as g:
            auth = {"authorization": f"Bearer {g.token}"}
            with httpx.stream("POST", g.base_url + "/responses", json={}, headers=auth,
                              timeout=20) as r:
                chunks = r.iter_text()
                first = next(chunks)
                # the upstream still holds its stream open: the first event came through alone
                assert first == "data: first\n\n" and not HeldStream.seen.is_set()
                HeldStream.seen.set()
                rest = "".join(chunks)
            assert rest == "data: [DONE]\n\n"
            zipped = httpx.post(g.base_url + "/gzip", json={}, headers=auth)
        assert zipped.headers["content-encoding"] == "gzip" and zipped.json() == {"ok": True}
    finally:
        HeldStream.seen.set()
        upstream.shutdown()


def test_one_proxy_per_process():
    assert key_proxy() is key_proxy()
