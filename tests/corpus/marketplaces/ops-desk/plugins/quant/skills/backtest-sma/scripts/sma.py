#!/usr/bin/env python3
"""Moving-average crossover backtest on daily closes."""

import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from indicators import max_drawdown, sma


def load(path):
    with open(path, newline="", encoding="utf-8") as fh:
        rows = sorted(csv.DictReader(fh), key=lambda r: r["date"])
    return [r["date"] for r in rows], [float(r["close"]) for r in rows]


def backtest(closes, fast, slow, cost_bps):
    f, s = sma(closes, fast), sma(closes, slow)
    equity, position, trades, rets = [1.0], 0, 0, []
    for t in range(1, len(closes)):
        r = closes[t] / closes[t - 1] - 1
        ret = position * r
        want = 1 if f[t - 1] is not None and s[t - 1] is not None and f[t - 1] > s[t - 1] else 0
        if want != position:
            trades += 1
            ret -= cost_bps / 10_000
            position = want
        rets.append(ret)
        equity.append(equity[-1] * (1 + ret))
    return equity, trades, rets


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv")
    ap.add_argument("--fast", type=int, default=10)
    ap.add_argument("--slow", type=int, default=50)
    ap.add_argument("--cost-bps", type=float, default=5.0)
    args = ap.parse_args()
    if args.fast >= args.slow:
        sys.exit("sma.py: --fast must be shorter than --slow")
    dates, closes = load(args.csv)
    if len(closes) <= args.slow:
        sys.exit(f"sma.py: {len(closes)} rows; need more than --slow ({args.slow})")
    equity, trades, rets = backtest(closes, args.fast, args.slow, args.cost_bps)
    years = len(closes) / 252
    mean = sum(rets) / len(rets)
    sd = math.sqrt(sum((r - mean) ** 2 for r in rets) / len(rets))
    print(f"{dates[0]} .. {dates[-1]}: SMA({args.fast}/{args.slow}), {trades} trades")
    print(f"strategy CAGR {equity[-1] ** (1 / years) - 1:+.1%}, "
          f"max drawdown {max_drawdown(equity):.1%}, "
          f"Sharpe {mean / sd * math.sqrt(252) if sd else 0:.2f}")
    print(f"buy and hold CAGR {(closes[-1] / closes[0]) ** (1 / years) - 1:+.1%}")


if __name__ == "__main__":
    main()
