#!/usr/bin/env python3
"""One-day value at risk and expected shortfall from daily returns."""

import argparse
import csv
import math
import statistics
import sys
from statistics import NormalDist


def portfolio_returns(path, weights):
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = [[float(x) for x in row[1:]] for row in reader if row]
    n = len(header) - 1
    w = weights or [1 / n] * n
    if len(w) != n:
        sys.exit(f"var.py: {len(w)} weight(s) for {n} position(s) in {path}")
    return [sum(wi * ri for wi, ri in zip(w, row, strict=True)) for row in rows]


def historical(returns, confidence):
    losses = sorted(-r for r in returns)
    k = min(len(losses) - 1, math.ceil(confidence * len(losses)) - 1)
    var = losses[k]
    tail = [x for x in losses if x >= var]
    return var, sum(tail) / len(tail)


def parametric(returns, confidence):
    mu, sd = statistics.fmean(returns), statistics.stdev(returns)
    z = NormalDist().inv_cdf(confidence)
    var = z * sd - mu
    es = sd * math.exp(-z * z / 2) / (math.sqrt(2 * math.pi) * (1 - confidence)) - mu
    return var, es


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("returns", help="CSV: date, then one column of daily returns per position")
    ap.add_argument("--confidence", type=float, default=0.99)
    ap.add_argument("--method", choices=["historical", "parametric"], default="historical")
    ap.add_argument("--weights", type=lambda s: [float(x) for x in s.split(",")])
    ap.add_argument("--notional", type=float, default=1.0)
    args = ap.parse_args()
    if not 0.5 < args.confidence < 1:
        sys.exit("var.py: --confidence must be between 0.5 and 1")
    rets = portfolio_returns(args.returns, args.weights)
    if len(rets) < 20:
        sys.exit(f"var.py: {len(rets)} days of returns; need at least 20")
    var, es = (historical if args.method == "historical" else parametric)(rets, args.confidence)
    unit = "" if args.notional == 1.0 else f" (notional {args.notional:,.0f})"
    print(f"{args.method} VaR {args.confidence:.0%}: {var * args.notional:,.4f}{unit}")
    print(f"expected shortfall: {es * args.notional:,.4f}")
    print(f"days: {len(rets)}")


if __name__ == "__main__":
    main()
