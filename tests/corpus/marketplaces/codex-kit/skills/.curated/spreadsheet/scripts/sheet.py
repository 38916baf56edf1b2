#!/usr/bin/env python3
"""Summarize or pivot a CSV table from the command line (standard library only).

    scripts/sheet.py summarize orders.csv
    scripts/sheet.py pivot orders.csv --rows region --values amount [--columns quarter] [--agg sum]
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict

AGGREGATES = {"sum": sum, "mean": statistics.fmean, "count": len, "max": max, "min": min}


def read(path: str) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def fmt(x: float) -> str:
    return f"{x:,.2f}" if isinstance(x, float) else str(x)


def cmd_summarize(args) -> int:
    rows = read(args.file)
    print(f"{len(rows)} rows")
    for col in rows[0] if rows else []:
        values = [r[col] for r in rows if r[col].strip()]
        try:
            nums = [float(v) for v in values]
            print(f"{col}: numeric, total {fmt(sum(nums))}, mean {fmt(statistics.fmean(nums))}")
        except ValueError:
            print(f"{col}: {len(set(values))} distinct values")
    return 0


def cmd_pivot(args) -> int:
    rows = read(args.file)
    missing = [c for c in (args.rows, args.values, args.columns) if c and rows and c not in rows[0]]
    if missing:
        print(f"error: no column(s) {', '.join(missing)} in {args.file}", file=sys.stderr)
        return 1
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        col = r[args.columns] if args.columns else args.values
        cells[(r[args.rows], col)].append(float(r[args.values] or 0))
    row_keys = sorted({k[0] for k in cells})
    col_keys = sorted({k[1] for k in cells})
    agg = AGGREGATES[args.agg]
    print("\t".join([args.rows, *col_keys]))
    for rk in row_keys:
        print("\t".join([rk, *(fmt(float(agg(cells[(rk, ck)]))) if cells.get((rk, ck)) else "-"
                               for ck in col_keys)]))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(prog="sheet.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("summarize", help="row count and per-column summary")
    s.add_argument("file")
    s.set_defaults(func=cmd_summarize)
    pv = sub.add_parser("pivot", help="aggregate a value by row (and column) keys")
    pv.add_argument("file")
    pv.add_argument("--rows", required=True)
    pv.add_argument("--values", required=True)
    pv.add_argument("--columns")
    pv.add_argument("--agg", choices=sorted(AGGREGATES), default="sum")
    pv.set_defaults(func=cmd_pivot)
    args = p.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
