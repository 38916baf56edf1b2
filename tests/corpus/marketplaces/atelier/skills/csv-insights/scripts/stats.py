"""Profile a CSV file with the standard library: describe, mean of a column, top rows.

    python3 scripts/stats.py describe data.csv [--json]
    python3 scripts/stats.py mean data.csv --column revenue
    python3 scripts/stats.py top data.csv --column units [-n 5]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys


def load(path: str, delimiter: str) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f, delimiter=delimiter)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def number(cell: str) -> float | None:
    cell = cell.strip()
    if not cell:
        return None
    try:
        return float(cell)
    except ValueError:
        return None


def profile(columns: list[str], rows: list[dict[str, str]]) -> dict:
    out = {"rows": len(rows), "columns": {}}
    for col in columns:
        cells = [(r.get(col) or "").strip() for r in rows]
        present = [c for c in cells if c]
        nums = [number(c) for c in present]
        entry = {"missing": len(cells) - len(present)}
        if present and all(n is not None for n in nums):
            values = [n for n in nums if n is not None]
            entry.update(type="numeric", min=min(values), max=max(values),
                         mean=round(statistics.fmean(values), 2))
        else:
            entry["type"] = "text"
        out["columns"][col] = entry
    return out


def numeric_column(rows: list[dict[str, str]], columns: list[str], col: str) -> list[float]:
    if col not in columns:
        sys.exit(f"error: no column {col!r}; columns are: {', '.join(columns)}")
    values = [number(r.get(col) or "") for r in rows]
    present = [v for v in values if v is not None]
    if not present:
        sys.exit(f"error: column {col!r} has no numeric values")
    return present


def cmd_describe(args) -> None:
    columns, rows = load(args.file, args.delimiter)
    prof = profile(columns, rows)
    if args.json:
        print(json.dumps(prof, indent=2))
        return
    print(f"rows: {prof['rows']}")
    print(f"columns: {len(columns)}")
    for col, e in prof["columns"].items():
        line = f"  {col:<8} {e['type']:<8} {e['missing']} missing"
        if e["type"] == "numeric":
            line += f"  min {e['min']:g}  max {e['max']:g}  mean {e['mean']:.2f}"
        print(line)


def cmd_mean(args) -> None:
    columns, rows = load(args.file, args.delimiter)
    values = numeric_column(rows, columns, args.column)
    print(f"mean {args.column}: {statistics.fmean(values):.2f} over {len(values)} rows")


def cmd_top(args) -> None:
    columns, rows = load(args.file, args.delimiter)
    numeric_column(rows, columns, args.column)
    ranked = sorted((r for r in rows if number(r.get(args.column) or "") is not None),
                    key=lambda r: number(r[args.column]), reverse=True)
    for r in ranked[:args.n]:
        print(", ".join(f"{k}={v}" for k, v in r.items()))


def main() -> None:
    p = argparse.ArgumentParser(prog="stats.py", description=__doc__.splitlines()[0])
    p.add_argument("--delimiter", default=",", help="field separator (default: ,)")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("describe", help="rows, columns, types, missing values, min/max/mean")
    d.add_argument("file")
    d.add_argument("--json", action="store_true", help="print the profile as JSON")
    d.set_defaults(func=cmd_describe)
    m = sub.add_parser("mean", help="mean of one numeric column")
    m.add_argument("file")
    m.add_argument("--column", required=True)
    m.set_defaults(func=cmd_mean)
    t = sub.add_parser("top", help="the rows with the largest values of a column")
    t.add_argument("file")
    t.add_argument("--column", required=True)
    t.add_argument("-n", type=int, default=5, help="how many rows (default: 5)")
    t.set_defaults(func=cmd_top)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
