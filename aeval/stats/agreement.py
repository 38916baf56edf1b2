"""Inter-rater agreement of graders: raw agreement, Cohen's kappa for two raters, Fleiss' kappa
for more (statsmodels, imported where used).

A rating table has one row per item (an assertion of a case epoch) and one column per rater;
a cell is the rater's category (``"passed"`` / ``"failed"``, any hashable works) or None when
that rater gave no verdict. Only rows every rater of the set judged count. Kappa is undefined
when chance agreement is 1 (every rating is the same category) or there is no item: it is then
None with the reason, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from itertools import combinations

from aeval.artifacts import Agreement

Rating = Hashable | None


def complete_rows(table: Sequence[Sequence[Rating]]) -> list[list[Hashable]]:
    """The rows in which every rater gave a verdict."""
    return [list(r) for r in table if all(v is not None for v in r)]


def _undefined(rows: list[list[Hashable]]) -> str | None:
    if not rows:
        return "no assertion judged by every one of these raters"
    cats = {v for r in rows for v in r}
    if len(cats) == 1:
        return (f"every verdict is {next(iter(cats))!r}: chance agreement is 1, "
                "kappa is undefined")
    return None


def cohen_kappa(rows: list[list[Hashable]]) -> tuple[float | None, str | None]:
    """Cohen's kappa of two raters over complete rows (pairs)."""
    note = _undefined(rows)
    if note:
        return None, note
    from statsmodels.stats.inter_rater import cohens_kappa

    cats = sorted({v for r in rows for v in r}, key=repr)
    index = {c: i for i, c in enumerate(cats)}
    table = [[0] * len(cats) for _ in cats]
    for a, b in rows:
        table[index[a]][index[b]] += 1
    return _finite(float(cohens_kappa(table, return_results=False)))


def fleiss_kappa(rows: list[list[Hashable]]) -> tuple[float | None, str | None]:
    """Fleiss' kappa of three or more raters over complete rows."""
    note = _undefined(rows)
    if note:
        return None, note
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as fk

    cats = sorted({v for r in rows for v in r}, key=repr)
    index = {c: i for i, c in enumerate(cats)}
    counts, _ = aggregate_raters([[index[v] for v in r] for r in rows], n_cat=len(cats))
    return _finite(float(fk(counts, method="fleiss")))


def _finite(k: float) -> tuple[float | None, str | None]:
    if not math.isfinite(k):  # guarded above; kept so NaN can never reach a JSON file
        return None, "kappa is not a finite number for these verdicts"
    return round(k, 4), None


def agreement(raters: list[str], table: Sequence[Sequence[Rating]]) -> Agreement:
    """Raw agreement and kappa (Cohen for two raters, Fleiss for more) of ``raters``, whose
    verdicts are the columns of ``table``."""
    if len(raters) < 2:
        raise ValueError("agreement needs at least two raters")
    rows = complete_rows(table)
    agreed = sum(len(set(r)) == 1 for r in rows)
    method = "cohen" if len(raters) == 2 else "fleiss"
    kappa, note = (cohen_kappa if method == "cohen" else fleiss_kappa)(rows)
    return Agreement(raters=list(raters), items=len(rows), agreements=agreed,
                     rate=round(agreed / len(rows), 4) if rows else None, method=method,
                     kappa=kappa, kappa_note=note)


def pairwise(raters: list[str], table: Sequence[Sequence[Rating]]) -> list[Agreement]:
    """Cohen's kappa and raw agreement for every pair of raters, in rater order."""
    return [agreement([raters[i], raters[j]], [[r[i], r[j]] for r in table])
            for i, j in combinations(range(len(raters)), 2)]


def columns(table: Sequence[Sequence[Rating]], keep: list[int]) -> list[list[Rating]]:
    """The table restricted to the raters at ``keep``."""
    return [[r[i] for i in keep] for r in table]
