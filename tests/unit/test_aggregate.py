"""Benchmark statistics and analysis notes over runs (pandas)."""

from __future__ import annotations

import pytest

from aeval.artifacts import (
    CaseResult,
    ExecutionMetrics,
    Expectation,
    GraderInfo,
    Grading,
    GradingSummary,
    SelfCorrection,
    Timing,
)
from aeval.events import Usage
from aeval.tasks.skill.aggregate import analyze, benchmark, wilson


def test_wilson_interval_known_values():
    lo, hi = wilson(8, 10)
    assert (lo, hi) == (pytest.approx(0.4902, abs=1e-4), pytest.approx(0.9433, abs=1e-4))
    assert wilson(0, 0) == (None, None)
    assert wilson(5, 5)[1] == 1.0


def run(case: str, epoch: int, verdicts: dict[str, bool | None], tokens: int = 100,
        wall: float = 1.0) -> tuple[CaseResult, Grading]:
    exps = [Expectation(id=i, text=f"text {i}", kind="deterministic",
                        status="ungraded" if v is None else "passed" if v else "failed",
                        passed=v, terminal_passed=v, graded_by="check")
            for i, v in verdicts.items()]
    graded = [v for v in verdicts.values() if v is not None]
    rate = sum(graded) / len(graded) if graded else None
    status = "pass" if rate == 1 else "fail"
    g = Grading(skill="s", case_id=case, runtime="r", status=status, status_reason="",
                expectations=exps, summary=GradingSummary(
                    passed=sum(graded), failed=len(graded) - sum(graded),
                    ungraded=len(verdicts) - len(graded), total=len(verdicts), pass_rate=rate,
                    first_attempt_pass_rate=rate, terminal_pass_rate=rate),
                self_correction=SelfCorrection(was_needed=False),
                execution_metrics=ExecutionMetrics(usage=Usage(input_tokens=tokens)),
                timing=Timing(executor_wall_s=wall),
                grader=GraderInfo(model=None, protocol_fidelity=True))
    c = CaseResult(case_id=case, runtime="r", epoch=epoch, status=status, reason="",
                   first_attempt_pass_rate=rate, terminal_pass_rate=rate, dir="x")
    return c, g


def test_benchmark_stats_and_matrix():
    pairs = [run("c", 1, {"A1": True, "A2": True}), run("c", 2, {"A1": True, "A2": False}),
             run("c", 3, {"A1": True, "A2": None})]
    b = benchmark("s", "r", pairs)
    assert b.runs == 3 and b.statuses == {"pass": 2, "fail": 1}
    fa = b.first_attempt_pass_rate
    assert (fa.mean, fa.min, fa.max, fa.n) == (pytest.approx(0.8333, abs=1e-4), 0.5, 1.0, 3)
    assert fa.stddev == pytest.approx(0.2887, abs=1e-4)
    assert (fa.wilson_low, fa.wilson_high) == wilson(4, 5)
    assert b.assertion_matrix["c/epoch-2"] == {"A1": True, "A2": False}
    assert b.assertion_matrix["c/epoch-3"]["A2"] is None
    assert b.usage.input_tokens == 300


def test_analysis_flags_flaky_failing_nondiscriminating_and_outliers():
    pairs = [run("c", e, {"A1": True, "A2": e % 2 == 0, "A3": False, "A4": None},
                 tokens=100 if e < 5 else 5000) for e in range(1, 6)]
    kinds = {(n.kind, n.subject) for n in analyze("s", "r", pairs).notes}
    assert ("flaky", "c:A2") in kinds
    assert ("always_failing", "c:A3") in kinds
    assert ("non_discriminating", "c:A1") in kinds  # passed even in the failing runs
    assert ("ungraded", "c:A4") in kinds
    assert ("token_outlier", "c#5") in kinds
