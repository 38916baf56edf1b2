"""Grader agreement statistics (aeval/stats/agreement.py) against values computed by hand."""

from __future__ import annotations

import json

import pytest

from aeval.stats.agreement import agreement, cohen_kappa, fleiss_kappa, pairwise

P, F = "passed", "failed"


def pairs(n_pp: int, n_pf: int, n_fp: int, n_ff: int) -> list[list[str]]:
    return [[P, P]] * n_pp + [[P, F]] * n_pf + [[F, P]] * n_fp + [[F, F]] * n_ff


@pytest.mark.parametrize(("table", "kappa"), [
    # Cohen's textbook example (50 items): po = 35/50 = 0.7; both raters say yes half of
    # the time, so pe = 0.5*0.5 + 0.5*0.5 = 0.5 -> kappa = (0.7-0.5)/(1-0.5) = 0.4
    (pairs(20, 5, 10, 15), 0.4),
    # po = 6/8 = 0.75; A passes 6/8, B 4/8: pe = .75*.5 + .25*.5 = 0.5 -> kappa = 0.5
    (pairs(4, 2, 0, 2), 0.5),
    # po = 2/8; pe = 0.5 as above -> kappa = (0.25-0.5)/0.5 = -0.5 (worse than chance)
    (pairs(2, 4, 2, 0), -0.5),
    # perfect agreement with both categories used: kappa = 1
    (pairs(3, 0, 0, 2), 1.0),
    # one says always pass, the other always fail: po = 0, pe = 0 -> kappa = 0
    (pairs(0, 4, 0, 0), 0.0),
])
def test_cohen_kappa_hand_checked(table, kappa):
    assert cohen_kappa(table) == (pytest.approx(kappa, abs=1e-4), None)


def test_fleiss_kappa_of_fleiss_1971_table():
    """The classic 10 subjects x 14 raters x 5 categories table (Fleiss 1971, as reproduced
    in most textbooks): P-bar = 0.378, Pe = 0.213, kappa = 0.210."""
    counts = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
              [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
              [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    rows = [[c for c, n in enumerate(row, 1) for _ in range(n)] for row in counts]
    kappa, note = fleiss_kappa(rows)
    assert note is None and kappa == pytest.approx(0.2099, abs=1e-4)


def test_three_raters_by_hand():
    """original, grader A, grader B on four assertions (each seen in two epochs):

        A2: P P P   A3: P F F   A4: P P F   A5: F F P
    Fleiss: P_i = 1, 1/3, 1/3, 1/3 -> P-bar = 1/2; p(P) = 7/12, p(F) = 5/12 ->
    Pe = 74/144; kappa = (72/144 - 74/144) / (70/144) = -1/35 = -0.0286.
    Pairs: original-A 0.5, original-B -0.5, A-B 0 (po = pe = 0.5)."""
    table = [[P, P, P], [P, F, F], [P, P, F], [F, F, P]] * 2
    raters = ["original", "a", "b"]
    overall = agreement(raters, table)
    assert (overall.items, overall.agreements, overall.rate) == (8, 2, 0.25)
    assert overall.method == "fleiss" and overall.kappa == pytest.approx(-1 / 35, abs=1e-4)
    got = {tuple(p.raters): (p.rate, p.kappa) for p in pairwise(raters, table)}
    assert got == {("original", "a"): (0.75, 0.5), ("original", "b"): (0.25, -0.5),
                   ("a", "b"): (0.5, 0.0)}


def test_missing_verdicts_leave_the_item_out():
    # the third rater failed on the last two items: Fleiss counts only the first two,
    # the pair of the first two raters still counts all four
    table = [[P, P, P], [F, F, F], [P, F, None], [F, F, None]]
    overall = agreement(["o", "a", "b"], table)
    assert (overall.items, overall.agreements) == (2, 2) and overall.kappa == 1.0
    (oa, ob, ab) = pairwise(["o", "a", "b"], table)
    assert (oa.items, oa.agreements, ob.items, ab.items) == (4, 3, 2, 2)


@pytest.mark.parametrize(("table", "note"), [
    ([[P, P, P]] * 5, "every verdict is 'passed': chance agreement is 1"),
    ([[F, F]] * 3, "every verdict is 'failed'"),
    ([[P, None, P], [None, F, F]], "no assertion judged by every one"),
    ([], "no assertion judged"),
])
def test_degenerate_kappa_is_null_with_a_reason(table, note):
    raters = ["o", "a", "b"][:len(table[0])] if table else ["o", "a"]
    result = agreement(raters, table)
    assert result.kappa is None and note in result.kappa_note
    # and the JSON says null, never NaN
    assert json.loads(result.model_dump_json())["kappa"] is None


def test_all_agree_gives_full_rate_even_when_kappa_is_undefined():
    result = agreement(["o", "a"], [[P, P]] * 4)
    assert (result.items, result.agreements, result.rate, result.kappa) == (4, 4, 1.0, None)


def test_one_rater_is_not_an_agreement():
    with pytest.raises(ValueError, match="at least two raters"):
        agreement(["o"], [[P]])
