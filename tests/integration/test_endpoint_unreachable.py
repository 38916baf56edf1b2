"""A model endpoint nothing listens on is found once, at once: `aeval run --api-base` of a
closed port is exit 3 with one line naming the endpoint before any case starts (it took
2 min 25 s of every case retrying), and a refused connection met by a model call ends that
call at once, as a permanent environment error, instead of retrying with backoff."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.adapters import llm
from aeval.errors import ModelPermanentError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "marketplace" / "skills"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_endpoint_is_one_permanent_error_without_retries(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    base = f"http://127.0.0.1:{closed_port()}/v1"
    budget = llm.RetryBudget(max_retries=8, base_delay_s=0.2, max_delay_s=1.0)
    with pytest.raises(ModelPermanentError, match=f"{base} is unreachable: connection refused"):
        llm.complete("openai/gpt-4o-mini", [{"role": "user", "content": "hi"}],
                     api_base=base, budget=budget)
    assert budget.retries == 0  # not one retry against a closed port
    second = llm.RetryBudget(max_retries=8)
    with pytest.raises(ModelPermanentError, match="connection refused"):
        llm.complete("openai/gpt-4o-mini", [{"role": "user", "content": "again"}],
                     api_base=base, budget=second)
    assert second.retries == 0


def test_an_endpoint_that_listens_is_reachable_and_is_asked_nothing():
    import http.server
    import threading

    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def parse_request(self):  # a request line arrived (a bare connect sends none)
            asked.append(self.raw_requestline.decode("latin-1").strip())
            return super().parse_request()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert llm.endpoint_problem(f"http://127.0.0.1:{server.server_port}/v1") is None
    finally:
        server.shutdown()
    # the check connects and leaves: no HTTP request reaches a model API
    assert asked == []
    assert "no such host" in llm.endpoint_problem("http://no-such-host.invalid/v1")


def test_aeval_run_against_a_closed_port_is_exit_3_before_any_case(tmp_path):
    aeval = os.path.join(os.path.dirname(sys.executable), "aeval")
    base = f"http://127.0.0.1:{closed_port()}/v1"
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(home), OPENAI_API_KEY="sk-test-not-real", AEVAL_WARM="0",
               AEVAL_SERVER="embedded", PREFECT_SERVER_ANALYTICS_ENABLED="false")
    store = tmp_path / "store"
    try:
        r = subprocess.run([aeval, "run", str(EXAMPLES / "csv-stats"), "--runtime", "builtin",
                            "--model", "openai/gpt-4o-mini", "--api-base", base,
                            "--out", str(store)],
                           env=env, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert r.returncode == 3, r.stderr[-2000:]
    lines = [x for x in r.stderr.splitlines() if "unreachable" in x]
    assert lines == [f"aeval run: the model endpoint {base} is unreachable: connection "
                     "refused (--api-base or AEVAL_API_BASE)"], r.stderr[-2000:]
    attempts = list(store.rglob("attempts")) + list(store.rglob("events.jsonl"))
    assert attempts == []  # no case started, so none retried
