"""Head against base: the two orders of the comparative grader reduced to one verdict per case,
and the verdicts counted per skill. Pure: reads nothing, writes nothing.

A grader that prefers a position (the first output shown, whatever it holds) names A in both
orders: once the head, once the base. The two orders then disagree, and the case is a tie,
recorded as position bias. Only a version preferred in both orders wins. An order with no
valid answer (a failed call, a refusal, garbage) leaves the case ungraded, never a win.
"""

from __future__ import annotations

from statistics import mean

from aeval.artifacts.pairwise import (
    CasePairwise,
    ComparativeAnswer,
    ComparativeReason,
    Interval,
    Label,
    OrderVerdict,
    PairVerdict,
    SkillPairwise,
)
from aeval.verdicts.efficiency import NOISE

POSITION_BIAS = "the two orders disagreed (position bias, cancelled): a tie"


def order_verdict(head_as: Label, answer: ComparativeAnswer | None, error: str | None = None,
                  attempts: int = 0) -> OrderVerdict:
    """One order's answer, its winner translated back to the version it names."""
    if answer is None:
        return OrderVerdict(head_as=head_as, error=error or "no answer", attempts=attempts)
    preferred = "tie" if answer.winner == "tie" else (
        "head" if answer.winner == head_as else "base")
    return OrderVerdict(head_as=head_as, winner=answer.winner, preferred=preferred,
                        reasons=answer.reasons, attempts=attempts)


def reduce_orders(orders: list[OrderVerdict]) -> tuple[PairVerdict, str]:
    """The case's verdict from both orders (head as A, then base as A) and why."""
    missing = [o for o in orders if o.preferred is None]
    if missing or len(orders) != 2:
        o = missing[0] if missing else None
        which = f"order with the head as {o.head_as}" if o else "orders"
        return "ungraded", f"ungraded: the {which} got no judgement: {o.error if o else '-'}"
    first, second = (o.preferred for o in orders)
    if first == second:
        if first == "tie":
            return "tie", "a tie in both orders"
        return first, f"the {first} preferred in both orders"  # type: ignore[return-value]
    return "tie", POSITION_BIAS


def skill_tally(cases: list[CasePairwise]) -> list[SkillPairwise]:
    """Wins, ties, losses and ungraded per skill x runtime (head's side), with each
    version's mean turns, tokens and wall seconds over the case runs that ran."""
    groups: dict[tuple[str, str | None, str], list[CasePairwise]] = {}
    for c in cases:
        groups.setdefault((c.skill, c.skill_key, c.runtime), []).append(c)
    out = []
    for (skill, key, runtime), cs in groups.items():
        def avg(values: list[float | int | None]) -> float | None:
            got = [v for v in values if v is not None]
            return round(mean(got), 3) if got else None

        head = [c.head for c in cs if c.head.status is not None]
        base = [c.base for c in cs if c.base.status is not None]
        out.append(SkillPairwise(
            skill=skill, skill_key=key, runtime=runtime,
            wins=sum(c.verdict == "head" for c in cs), ties=sum(c.verdict == "tie" for c in cs),
            losses=sum(c.verdict == "base" for c in cs),
            ungraded=sum(c.verdict == "ungraded" for c in cs),
            position_bias=sum(c.reason == POSITION_BIAS for c in cs),
            head_mean_turns=avg([s.turns for s in head]),
            base_mean_turns=avg([s.turns for s in base]),
            head_mean_tokens=avg([s.tokens for s in head]),
            base_mean_tokens=avg([s.tokens for s in base]),
            head_mean_wall_s=avg([s.wall_s for s in head]),
            base_mean_wall_s=avg([s.wall_s for s in base]),
            head_mean_commands=avg([s.commands for s in head]),
            base_mean_commands=avg([s.commands for s in base]),
            preference=interval([SCORE[c.verdict] for c in cs if c.verdict in SCORE]),
            **{f"{m}_change": interval(paired(cs, m)) for m in CHANGES}))
        out[-1].efficiency, out[-1].efficiency_reason = efficiency(out[-1])
    return out


SCORE = {"head": 1.0, "tie": 0.5, "base": 0.0}
CHANGES = ("commands", "tokens", "wall_s", "turns", "tool_calls")
RESAMPLES = 2000


def paired(cases: list[CasePairwise], measure: str) -> list[float]:
    """Head minus base of ``measure`` over the case runs both versions ran and measured
    (tokens: only where a model counted some)."""
    out = []
    for c in cases:
        if c.head.status is None or c.base.status is None:
            continue
        h, b = getattr(c.head, measure), getattr(c.base, measure)
        if h is None or b is None or (measure == "tokens" and not (h or b)):
            continue
        out.append(float(h - b))
    return out


def interval(values: list[float]) -> Interval | None:
    """The mean of ``values`` with its 95% percentile bootstrap interval (seeded); None for
    no values, no interval for one."""
    if not values:
        return None
    m = round(mean(values), 3)
    if len(values) < 2:
        return Interval(mean=m, n=1)
    if len(set(values)) == 1:
        return Interval(mean=m, low=m, high=m, n=len(values))
    import numpy as np
    from scipy.stats import bootstrap

    args = dict(n_resamples=RESAMPLES, confidence_level=0.95, method="percentile")
    try:
        res = bootstrap((np.asarray(values),), np.mean, **args, rng=np.random.default_rng(0))
    except TypeError:  # scipy before 1.15 calls it random_state
        res = bootstrap((np.asarray(values),), np.mean, **args, random_state=0)
    ci = res.confidence_interval
    return Interval(mean=m, low=round(float(ci.low), 3), high=round(float(ci.high), 3),
                    n=len(values))


# (figure, label, margin): a change under the margin is noise, whatever its ratio
_COSTS = (("commands", "commands", NOISE["commands"]), ("tokens", "tokens", NOISE["tokens"]),
          ("wall_s", "wall seconds", NOISE["wall_s"]))
COST_RATIO = 1.2


def efficiency(s: SkillPairwise) -> tuple[str | None, str | None]:
    """The head's cost against the base's (see `SkillPairwise.efficiency`): deterministic,
    from the mean figures of the case runs each version ran."""
    worse, better, compared = [], [], 0
    for field, label, margin in _COSTS:
        h, b = getattr(s, f"head_mean_{field}"), getattr(s, f"base_mean_{field}")
        if h is None or b is None or (field == "tokens" and not (h or b)):
            continue  # not measured on both sides (`literal` has no tokens)
        compared += 1
        said = f"{label} {h:g} against {b:g}"
        if h - b >= margin and h > b * COST_RATIO:
            worse.append(said)
        elif b - h >= margin and b > h * COST_RATIO:
            better.append(said)
    if not compared:
        return None, None
    if worse:
        return "worse", "over 1.2x the base's: " + "; ".join(worse)
    if better:
        return "better", "under the base's by over 1.2x: " + "; ".join(better)
    return "same", "within 1.2x of the base's on every figure measured"


def grounded(answer: ComparativeAnswer, shown: dict[str, str]) -> None:
    """Raise ValueError unless every reason quotes the output it names (whitespace aside) and
    a winner other than a tie has at least one reason."""
    if answer.winner != "tie" and not answer.reasons:
        raise ValueError(f"winner {answer.winner} without a reason: quote the outputs")
    for r in answer.reasons:
        if not _quoted(r, shown):
            raise ValueError(f"the quote {r.quote[:80]!r} is not in output {r.output}: "
                             "quote the outputs verbatim")


def _squash(text: str) -> str:
    return " ".join(text.split())


def _quoted(reason: ComparativeReason, shown: dict[str, str]) -> bool:
    return _squash(reason.quote) in _squash(shown.get(reason.output, ""))
