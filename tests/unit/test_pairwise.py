"""Head against base: two orders reduced to one verdict, and the verdicts counted per skill."""

from __future__ import annotations

import pytest

from aeval.artifacts.pairwise import CasePairwise, ComparativeAnswer, SideCost
from aeval.verdicts.pairwise import (
    POSITION_BIAS,
    grounded,
    order_verdict,
    reduce_orders,
    skill_tally,
)


def ans(winner: str) -> ComparativeAnswer:
    return ComparativeAnswer.model_validate({"winner": winner, "reasons": [
        {"output": "A", "quote": "total 42.50", "why": "right total"}]})


@pytest.mark.parametrize("first, second, verdict", [
    ("A", "B", "head"),  # the head, shown as A then as B, preferred both times
    ("B", "A", "base"),
    ("A", "A", "tie"),  # the first position both times: position bias
    ("B", "B", "tie"),  # the second position both times
    ("tie", "tie", "tie"),
    ("A", "tie", "tie"),  # preferred in one order only: not a win
])
def test_two_orders_reduce_to_one_verdict(first, second, verdict):
    got, reason = reduce_orders([order_verdict("A", ans(first)), order_verdict("B", ans(second))])
    assert got == verdict
    if first == second and first != "tie":
        assert reason == POSITION_BIAS


def test_an_order_without_an_answer_is_ungraded_never_a_win():
    got, reason = reduce_orders([order_verdict("A", ans("A")),
                                 order_verdict("B", None, "the grader model failed: 401")])
    assert got == "ungraded" and "401" in reason and "head as B" in reason


def test_a_reason_must_quote_the_output_it_names():
    shown = {"A": "closing balance   42.50 over 3 rows", "B": "closing balance 42.49"}
    grounded(ComparativeAnswer.model_validate({"winner": "A", "reasons": [
        {"output": "A", "quote": "balance 42.50 over", "why": "w"}]}), shown)
    with pytest.raises(ValueError, match="not in output B"):
        grounded(ComparativeAnswer.model_validate({"winner": "A", "reasons": [
            {"output": "B", "quote": "42.50", "why": "w"}]}), shown)


def side(status="pass", turns=3, tokens=100, wall=2.0) -> SideCost:
    return SideCost(status=status, turns=turns, input_tokens=tokens, wall_s=wall)


def case(verdict: str, reason: str = "", **kw) -> CasePairwise:
    return CasePairwise(skill="ledger", runtime="literal", case_id="c", verdict=verdict,
                        reason=reason or verdict, head=kw.get("head", side()),
                        base=kw.get("base", side()))


def test_the_tally_counts_from_the_heads_side_with_each_versions_costs():
    (s,) = skill_tally([case("head"), case("tie", POSITION_BIAS), case("base"),
                        case("ungraded", base=SideCost()),
                        case("head", head=side(turns=5, tokens=300, wall=4.0))])
    assert (s.wins, s.ties, s.losses, s.ungraded, s.position_bias) == (2, 1, 1, 1, 1)
    assert s.head_mean_turns == 3.4 and s.base_mean_turns == 3
    assert s.head_mean_tokens == 140 and s.base_mean_wall_s == 2.0


def test_efficiency_against_the_base_needs_a_ratio_and_a_margin():
    def tally(head: SideCost, base: SideCost):
        (s,) = skill_tally([case("tie", head=head, base=base)])
        return s.efficiency, s.efficiency_reason

    cheap = side(turns=3, tokens=1000, wall=2.0)
    # slower by 3 s: worse, named; 0.5 s on 1 s is over 1.2x but under the margin: noise
    got = tally(side(turns=3, tokens=1000, wall=5.0), cheap)
    assert got[0] == "worse" and "wall seconds 5 against 2" in got[1]
    assert tally(side(turns=3, tokens=1000, wall=1.5), side(turns=3, tokens=1000, wall=1.0)
                 )[0] == "same"
    # fewer tokens by far and nothing worse: better; more tokens and less time: worse
    assert tally(side(turns=3, tokens=400, wall=2.0), cheap)[0] == "better"
    assert tally(side(turns=3, tokens=2000, wall=1.0), cheap)[0] == "worse"
    # a version that did not run: nothing to compare
    assert tally(side(turns=3, tokens=1000, wall=2.0), SideCost()) == (None, None)


def test_the_preference_and_each_change_come_with_an_interval_over_cases_and_epochs():
    runs = [case("head", head=side(wall=5.0)), case("head", head=side(wall=5.5)),
            case("tie", head=side(wall=4.0)), case("base", head=side(wall=6.0)),
            case("ungraded", head=side(wall=5.0))]
    (s,) = skill_tally(runs)
    # graded case runs only: 1, 1, 0.5, 0 -> 0.625; its interval holds it, within [0, 1]
    p = s.preference
    assert (p.mean, p.n) == (0.625, 4) and 0 <= p.low < p.mean < p.high <= 1
    # the change of each cost is paired by case run: +3, +3.5, +2, +4, +3 seconds
    w = s.wall_s_change
    assert (w.mean, w.n) == (3.1, 5) and 2.0 <= w.low < 3.1 < w.high <= 4.0
    assert s.turns_change.mean == 0 and (s.turns_change.low, s.turns_change.high) == (0, 0)
    # seeded: the same runs give the same interval
    assert skill_tally(runs)[0].preference == p
    # one graded case run: a mean, no interval; none: no preference at all
    (one,) = skill_tally([case("head")])
    assert one.preference.text() == "1.00 (n=1)"
    assert skill_tally([case("ungraded")])[0].preference is None
    # a version that did not run is not paired
    (half,) = skill_tally([case("ungraded", base=SideCost())])
    assert half.wall_s_change is None and half.commands_change is None
