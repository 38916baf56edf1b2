"""Model calls against the scripted model server on loopback, through litellm for real:
transient faults are retried per call inside the case's budget; permanent ones are one
attempt and one line."""

from __future__ import annotations

import time

import pytest
from pydantic import BaseModel

from aeval.adapters.llm import RetryBudget, ask_json, complete
from aeval.errors import ModelPermanentError, ModelTransientError
from aeval.testing import Script, ScriptedModelServer, Turn

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FAST = dict(base_delay_s=0.01, max_delay_s=0.05)
MODEL = "openai/gpt-4o-mini"
# 10 calls of one case; 5 of their 15 requests (a third) meet a transient fault of each kind.
FAULTS: dict[int, tuple[int | str, int]] = {2: (429, 2), 5: (503, 1), 7: ("disconnect", 1),
                                            9: (529, 1)}


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


@pytest.fixture
def server():
    scripts = [Script(name=f"case-{i}", match=f"case {i} ",
                      turns=[Turn(text=f"answer {i}", fault=FAULTS[i][0],
                                  fault_times=FAULTS[i][1]) if i in FAULTS
                             else Turn(text=f"answer {i}")])
               for i in range(10)]
    scripts.append(Script(name="auth", match="bad key", turns=[Turn(fault=401, fault_times=9)]))
    scripts.append(Script(name="nomodel", match="no such model",
                          turns=[Turn(fault=404, fault_times=9)]))
    scripts.append(Script(name="busy", match="always busy",
                          turns=[Turn(fault=503, fault_times=99)]))
    with ScriptedModelServer(scripts) as srv:
        yield srv


def test_transient_faults_are_retried_per_call_and_every_call_succeeds(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    budget = RetryBudget(**FAST)
    answers = [complete(MODEL, user(f"case {i} please"), api_base=server.base_url_openai,
                        budget=budget).text for i in range(10)]
    assert answers == [f"answer {i}" for i in range(10)]
    faulted = [r for r in server.requests if r.fault]
    assert len(faulted) == 5 and budget.retries == 5
    calls = [r for r in server.requests if r.method == "POST"]
    assert len(calls) == 10 + len(faulted)
    # the dropped connection was checked without asking the API anything: every request the
    # server saw is a model call
    assert len(server.requests) == len(calls)
    assert 0 < budget.waited_s <= budget.retries * FAST["max_delay_s"]


def test_a_spent_budget_hands_the_transient_error_to_the_attempt_retry(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    budget = RetryBudget(max_retries=3, **FAST)
    with pytest.raises(ModelTransientError, match="gave up after 4 tries") as exc:
        complete(MODEL, user("always busy"), api_base=server.base_url_openai, budget=budget)
    assert exc.value.status_code == 503
    assert len(server.requests_for("busy")) == 4
    # The budget is the case's: a later call of the same case gets no retry at all.
    with pytest.raises(ModelTransientError, match="gave up after 1 tries"):
        complete(MODEL, user("always busy"), api_base=server.base_url_openai, budget=budget)
    assert len(server.requests_for("busy")) == 5


def test_missing_key_is_one_attempt_and_one_line(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    budget = RetryBudget(**FAST)
    start = time.monotonic()
    with pytest.raises(ModelPermanentError) as exc:
        complete(MODEL, user("case 1 please"), api_base=server.base_url_openai, budget=budget)
    assert time.monotonic() - start < 5
    message = str(exc.value)
    assert "\n" not in message and len(message) <= 300
    assert message.startswith(f"missing or invalid API key for {MODEL}:")
    assert budget.retries == 0 and server.requests == []


@pytest.mark.parametrize("prompt, script, expected", [
    ("bad key", "auth", "missing or invalid API key"),
    ("no such model", "nomodel", "unknown model or endpoint"),
])
def test_permanent_refusals_are_one_request(server, monkeypatch, prompt, script, expected):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    budget = RetryBudget(**FAST)
    with pytest.raises(ModelPermanentError, match=f"^{expected} for {MODEL}:"):
        complete(MODEL, user(prompt), api_base=server.base_url_openai, budget=budget)
    assert len(server.requests_for(script)) == 1 and budget.retries == 0


class Verdict(BaseModel):
    ok: bool


def test_ask_json_rides_out_faults_without_litellm_retries(monkeypatch):
    """The grader's path: faults before a valid JSON answer; no tenacity is needed."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    script = Script(name="grader", match="grade this", turns=[
        Turn(text='{"ok": true}', fault=429, fault_times=2)])
    with ScriptedModelServer([script]) as srv:
        ans = ask_json(MODEL, "You grade.", "grade this", Verdict,
                       api_base=srv.base_url_openai, budget=RetryBudget(**FAST))
        assert ans.value == Verdict(ok=True) and ans.attempts == 1
        assert [r.fault for r in srv.requests] == [True, True, False]


def test_ask_json_without_a_budget_follows_the_settings(monkeypatch):
    """The grader, writer, suggester and analyzer pass no budget: AEVAL_MODEL_RETRIES bounds
    them (it did not: a 5xx grader took 8 retries and ~50 s whatever the settings said)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    monkeypatch.setenv("AEVAL_MODEL_RETRIES", "1")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0")
    script = Script(name="grader", match="grade this", turns=[
        Turn(text='{"ok": true}', fault=503, fault_times=50)])
    with ScriptedModelServer([script]) as srv:
        with pytest.raises(ModelTransientError):
            ask_json(MODEL, "You grade.", "grade this", Verdict, api_base=srv.base_url_openai)
        assert len(srv.requests) == 2  # the call and its one retry


# ---- structured answers -----------------------------------------------------------------------


def test_structured_output_where_the_model_supports_it(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    script = Script(name="grader", match="grade this", turns=[Turn(text='{"ok": false}')])
    with ScriptedModelServer([script]) as srv:
        ans = ask_json(MODEL, "You grade.", "grade this", Verdict, api_base=srv.base_url_openai)
        (req,) = srv.requests
    assert ans.value == Verdict(ok=False)
    fmt = req.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Verdict"
    assert fmt["json_schema"]["schema"] == Verdict.model_json_schema()


def test_text_json_with_re_asks_where_it_does_not(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    script = Script(name="grader", match="grade this", turns=[
        Turn(text="Looks fine to me."), Turn(text='```json\n{"ok": true}\n```')])
    with ScriptedModelServer([script]) as srv:
        ans = ask_json("openai/scripted", "You grade.", "grade this", Verdict,
                       api_base=srv.base_url_openai)
        reqs = srv.requests
    assert ans.value == Verdict(ok=True) and ans.attempts == 2
    assert all("response_format" not in r.body for r in reqs)
    assert "Your answer was not valid" in reqs[1].body["messages"][-1]["content"]


def test_a_refused_structured_request_falls_back_to_text(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    script = Script(name="grader", match="grade this",
                    turns=[Turn(text='{"ok": true}', fault=400, fault_times=1)])
    with ScriptedModelServer([script]) as srv:
        ans = ask_json(MODEL, "You grade.", "grade this", Verdict, api_base=srv.base_url_openai)
        reqs = srv.requests
    assert ans.value == Verdict(ok=True)
    assert ["response_format" in r.body for r in reqs] == [True, False]


def test_retry_budget_backs_off_with_jitter_and_stops_at_its_limits():
    b = RetryBudget(max_retries=5, max_wait_s=100.0, base_delay_s=1.0, max_delay_s=4.0)
    delays = [b.take(n) for n in range(5)]
    for n, d in enumerate(delays):
        cap = min(4.0, 2 ** n)
        assert cap / 2 <= d <= cap
    assert b.take(5) is None  # retries spent
    tight = RetryBudget(max_retries=99, max_wait_s=0.9, base_delay_s=0.5, max_delay_s=0.5)
    got = []
    while (d := tight.take(0)) is not None:  # delays of 0.25..0.5 s until 0.9 s are spent
        got.append(d)
    assert 1 <= len(got) <= 3 and tight.retries == len(got)
    assert sum(got) == pytest.approx(tight.waited_s) and tight.waited_s <= 0.9
