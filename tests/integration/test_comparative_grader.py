"""The comparative grader of head against base, asked in both orders through the real model
client against the scripted model server: a grader biased to the first position yields a tie
(the bias cancelled, recorded as such), a grader that prefers the correct output wherever it is
shown makes that version win, and a refusal, garbage or an unquoted reason leave the case
ungraded with the reason, never a win."""

from __future__ import annotations

import json

import pytest

from aeval.tasks.studies.comparative_grader import ask_both_orders
from aeval.testing.model_server import Script, ScriptedModelServer, Turn
from aeval.verdicts.pairwise import POSITION_BIAS, reduce_orders

pytestmark = pytest.mark.integration

MATCH = "You are the COMPARATIVE GRADER"
CASE = ("Compute the closing balance of fixtures/ledger.csv into outputs/balance.json.",
        "outputs/balance.json holds the closing balance 42.50.",
        ["outputs/balance.json holds closing 42.50"])
HEAD = ("TRANSCRIPT:\n[3] $ python3 scripts/balance.py fixtures/ledger.csv\n"
        "closing balance 42.50 over 3 rows\n\nOUTPUT FILES:\n--- balance.json\n"
        '{"closing": "42.50", "rows": 3}')
BASE = ("TRANSCRIPT:\n[3] $ python3 scripts/balance.py fixtures/ledger.csv\n"
        "closing balance 42.49 over 3 rows\n\nOUTPUT FILES:\n--- balance.json\n"
        '{"closing": "42.49", "rows": 3}')


@pytest.fixture(autouse=True)
def env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")


def answer(winner: str, output: str = "A", quote: str = "closing balance") -> Turn:
    return Turn(text=json.dumps({"winner": winner, "reasons": [
        {"output": output, "quote": quote, "why": "it prints the balance"}]}))


def in_output(label: str, text: str) -> str:
    """A regex hit when output ``label``'s block holds ``text``."""
    return rf"(?s){MATCH}.*<output_{label} id=\w+>\n(?:(?!</output_{label} ).)*{text}"


def judge(scripts: list[Script], head: str = HEAD, base: str = BASE):
    with ScriptedModelServer(scripts) as srv:
        orders = ask_both_orders("openai/scripted", srv.base_url_openai, *CASE, head, base)
        requests = srv.requests
    return orders, reduce_orders(orders), requests


def test_a_grader_that_always_prefers_the_first_position_gives_a_tie():
    orders, (verdict, reason), requests = judge(
        [Script(name="first", match=MATCH, turns=[answer("A")])])
    assert [o.winner for o in orders] == ["A", "A"]
    assert [o.preferred for o in orders] == ["head", "base"]
    assert (verdict, reason) == ("tie", POSITION_BIAS)
    # blind: the labels only, in both orders; the head's text first, then the base's
    sent = [r.body["messages"][-1]["content"] for r in requests]
    assert len(sent) == 2
    shown = [s[s.index("<output_A"):] for s in sent]
    assert shown[0].index("42.50") < shown[0].index("42.49")
    assert shown[1].index("42.49") < shown[1].index("42.50")
    assert not any(w in s for s in sent for w in ("head", "base"))


def test_a_grader_that_prefers_the_correct_output_in_both_positions_makes_it_win():
    correct = [Script(name="a-correct", match=in_output("A", r"42\.50"),
                      turns=[answer("A", "A", '"closing": "42.50"')]),
               Script(name="b-correct", match=MATCH,
                      turns=[answer("B", "B", '"closing": "42.50"')])]
    orders, (verdict, reason), _ = judge(correct)
    assert [o.winner for o in orders] == ["A", "B"]
    assert (verdict, reason) == ("head", "the head preferred in both orders")
    assert orders[0].reasons[0].quote == '"closing": "42.50"'
    # the same grader with the versions the other way round: the base wins
    _, (verdict, _), _ = judge(correct, head=BASE, base=HEAD)
    assert verdict == "base"


def test_a_tie_in_both_orders_is_a_tie_not_position_bias():
    _, (verdict, reason), _ = judge([Script(name="tie", match=MATCH, turns=[
        Turn(text='{"winner": "tie", "reasons": []}')])])
    assert (verdict, reason) == ("tie", "a tie in both orders")


@pytest.mark.parametrize("said, why", [
    ("I'm sorry, but I can't help with comparing these outputs.", "no JSON object"),
    ('{"winner": "C", "reasons": "both fine"}', "ValidationError"),
    ('{"winner": "A", "reasons": [{"output": "A", "quote": "balance is 1000", "why": "x"}]}',
     "is not in output A"),
    ('{"winner": "B", "reasons": []}', "without a reason"),
])
def test_a_refusal_garbage_or_an_unquoted_reason_is_ungraded_with_the_reason(said, why):
    orders, (verdict, reason), requests = judge(
        [Script(name="bad", match=MATCH, turns=[Turn(text=said)], final=said)])
    assert verdict == "ungraded"
    assert all(o.winner is None and o.preferred is None for o in orders)
    assert why in orders[0].error and why in reason
    assert "no valid answer after 2 attempt(s)" in reason
    assert len(requests) == 4  # each order re-asked once


def test_one_order_refused_leaves_the_case_ungraded_even_if_the_other_prefers_the_head():
    orders, (verdict, reason), _ = judge([
        Script(name="a-correct", match=in_output("A", r"42\.50"),
               turns=[answer("A", "A", "42.50")]),
        Script(name="refuses", match=MATCH, turns=[Turn(text="I cannot judge this.")],
               final="I cannot judge this.")])
    assert [o.preferred for o in orders] == ["head", None]
    assert verdict == "ungraded" and "the order with the head as B" in reason
