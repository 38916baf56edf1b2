"""Uplift statistics: does a skill help? Pure: pairs in, numbers out (no IO).

Each pair is one skill x case x runtime x epoch, run once with the skill installed and once
without it (same prompt, workspace files and assertions). A pair counts when both arms ended
``pass`` or ``fail``; an arm that ended ``error``, ``untested`` or ``internal`` says nothing
about the skill, so the pair is excluded (and counted as such).

Over the counted pairs, the 2x2 table

                      without: pass   without: fail
    with: pass        a (both_pass)   b (with_only)
    with: fail        c (without_only) d (both_fail)

gives the pass rates p1 = (a+b)/n with and p2 = (a+c)/n without, the uplift p1 - p2, and:

- **the exact McNemar test**: ``statsmodels.stats.contingency_tables.mcnemar(table,
  exact=True)``, a two-sided binomial test of b against b + c at 1/2 (p = 1 with no
  discordant pair);
- **the confidence interval of the paired difference**: Newcombe's hybrid score interval for
  paired proportions (Newcombe 1998, Statistics in Medicine 17:2635, method 10), built from
  the Wilson intervals [l1, u1] of p1 and [l2, u2] of p2
  (``statsmodels.stats.proportion.proportion_confint(method="wilson")``) and the phi
  correlation of the table, phi = (ad - bc) / sqrt((a+b)(c+d)(a+c)(b+d)) (0 when a margin
  is empty):

      lower = d - sqrt((p1-l1)^2 - 2 phi (p1-l1)(u2-p2) + (u2-p2)^2)
      upper = d + sqrt((u1-p1)^2 - 2 phi (u1-p1)(p2-l2) + (p2-l2)^2)

Pairs pooled over the cases and epochs of a skill are treated as independent; with few
pairs the test cannot be significant (six discordant pairs, all one way, are the fewest that
reach p < 0.05).

statsmodels is imported inside the functions: never on the command line's start path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from aeval.artifacts.uplift import (
    ArmStats,
    CaseUplift,
    PairOutcome,
    SkillUplift,
    UpliftGate,
    UpliftStats,
)
from aeval.exit_codes import ENVIRONMENT, FAIL, INTERNAL, OK, USAGE

COUNTED = ("pass", "fail")
ALPHA = 0.05


def mcnemar_exact_p(with_only: int, without_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b and c."""
    from statsmodels.stats.contingency_tables import mcnemar

    if with_only + without_only == 0:
        return 1.0
    result = mcnemar([[0, with_only], [without_only, 0]], exact=True)
    return min(1.0, float(result.pvalue))


def newcombe_paired_ci(a: int, b: int, c: int, d: int, confidence: float = 0.95
                       ) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval (method 10) for p1 - p2 of paired proportions,
    p1 = (a+b)/n, p2 = (a+c)/n. None for an empty table."""
    from statsmodels.stats.proportion import proportion_confint

    n = a + b + c + d
    if n == 0:
        return None
    alpha = 1 - confidence
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = (float(x) for x in proportion_confint(a + b, n, alpha=alpha, method="wilson"))
    l2, u2 = (float(x) for x in proportion_confint(a + c, n, alpha=alpha, method="wilson"))
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / math.sqrt(margins) if margins else 0.0
    diff = p1 - p2
    low = diff - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)
                               + (u2 - p2) ** 2))
    high = diff + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2)
                                + (p2 - l2) ** 2))
    return max(-1.0, low), min(1.0, high)


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def uplift_stats(pairs: Iterable[PairOutcome], alpha: float = ALPHA,
                 confidence: float = 0.95) -> UpliftStats:
    """The paired statistics over ``pairs`` (the comparable ones count; the others are
    reported as excluded)."""
    pairs = list(pairs)
    counted = [p for p in pairs if p.comparable]
    a = sum(p.with_status == "pass" and p.without_status == "pass" for p in counted)
    b = sum(p.with_status == "pass" and p.without_status == "fail" for p in counted)
    c = sum(p.with_status == "fail" and p.without_status == "pass" for p in counted)
    d = len(counted) - a - b - c
    n = len(counted)

    def arm(passed: int, tokens: list[int], wall: list[float | None]) -> ArmStats:
        return ArmStats(passed=passed, pass_rate=round(passed / n, 4) if n else None,
                        mean_tokens=_mean([float(t) for t in tokens]),
                        mean_wall_s=_mean([w for w in wall if w is not None]))

    with_arm = arm(a + b, [p.with_tokens for p in counted], [p.with_wall_s for p in counted])
    without_arm = arm(a + c, [p.without_tokens for p in counted],
                      [p.without_wall_s for p in counted])
    if not n:
        return UpliftStats(pairs=0, excluded=len(pairs), both_pass=0, with_only=0,
                           without_only=0, both_fail=0, with_skill=with_arm,
                           without_skill=without_arm, uplift=None, ci_low=None, ci_high=None,
                           confidence=confidence, mcnemar_p=None, verdict="no_data",
                           flagged=False)
    uplift = (b - c) / n
    ci = newcombe_paired_ci(a, b, c, d, confidence)
    p = mcnemar_exact_p(b, c)
    if uplift > 0:
        verdict = "helps" if p < alpha else "positive"
    elif uplift < 0:
        verdict = "hurts" if p < alpha else "negative"
    else:
        verdict = "no_difference"
    return UpliftStats(
        pairs=n, excluded=len(pairs) - n, both_pass=a, with_only=b, without_only=c,
        both_fail=d, with_skill=with_arm, without_skill=without_arm, uplift=round(uplift, 4),
        ci_low=round(ci[0], 4) if ci else None, ci_high=round(ci[1], 4) if ci else None,
        confidence=confidence, mcnemar_p=round(p, 6), verdict=verdict,
        flagged=verdict in ("hurts", "negative"))


def skill_uplifts(pairs: list[PairOutcome], alpha: float = ALPHA) -> list[SkillUplift]:
    """Per skill x runtime (in the order first seen): per case, and pooled over its cases."""
    groups: dict[tuple[str, str], list[PairOutcome]] = {}
    for p in pairs:  # by folder key: two skills of a marketplace may share a name
        groups.setdefault((p.skill_key or p.skill, p.runtime), []).append(p)
    out = []
    for (key, runtime), group in groups.items():
        cases: dict[str, list[PairOutcome]] = {}
        for p in group:
            cases.setdefault(p.case_id, []).append(p)
        out.append(SkillUplift(
            skill=group[0].skill, skill_key=key, runtime=runtime,
            stats=uplift_stats(group, alpha),
            cases=[CaseUplift(case_id=cid, stats=uplift_stats(ps, alpha))
                   for cid, ps in cases.items()]))
    return out


def uplift_gate(skills: list[SkillUplift], pairs: list[PairOutcome], invalid: list[str],
                usage_error: str | None = None) -> UpliftGate:
    """Exit code of `aeval uplift`, first match wins: 1 a skill's uplift is significantly
    negative (``hurts``); 2 a usage error or an invalid skill; 4 aeval failed on a case in an
    arm (internal); 3 an environment error excluded a pair; 0 otherwise (a negative uplift
    that is not significant is flagged, not failed)."""
    if hurts := [f"{s.label()} [{s.runtime}]" for s in skills if s.stats.verdict == "hurts"]:
        return UpliftGate(exit_code=FAIL, reason="the skill makes the agent significantly "
                                                 "worse: " + ", ".join(hurts))
    if usage_error or invalid:
        return UpliftGate(exit_code=USAGE, reason=usage_error or
                          f"invalid skill(s): {', '.join(invalid)}")

    def with_status(status: str) -> list[str]:
        return [f"{p.skill}/{p.case_id}" for p in pairs
                if status in (p.with_status, p.without_status)]

    if internal := with_status("internal"):
        return UpliftGate(exit_code=INTERNAL,
                          reason=f"aeval failed on {len(internal)} pair(s) (a bug "
                                 f"to report): {', '.join(internal[:5])}")
    if errors := with_status("error"):
        return UpliftGate(exit_code=ENVIRONMENT,
                          reason=f"{len(errors)} pair(s) excluded by an "
                                 f"environment error: {', '.join(errors[:5])}")
    if not pairs:
        return UpliftGate(exit_code=OK, reason="no case to compare")
    flagged = [f"{s.label()} [{s.runtime}]" for s in skills if s.stats.flagged]
    if flagged:
        return UpliftGate(exit_code=OK, reason="negative uplift, not significant: "
                                               + ", ".join(flagged))
    return UpliftGate(exit_code=OK, reason="no skill makes the agent significantly worse")
