"""Month-end and year-to-date P&L reports from a trade blotter CSV.

    python scripts/make_report.py monthly --input trades.csv --month 2024-04
    python scripts/make_report.py ytd --input trades.csv --year 2024 [--format csv]
"""

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pnl import realized

COLUMNS = {"date", "symbol", "side", "qty", "price", "fee"}


def read_blotter(path):
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    missing = COLUMNS - set(rows[0] if rows else ())
    if missing:
        sys.exit(f"make_report.py: {path} lacks the column(s) {', '.join(sorted(missing))}")
    return sorted(rows, key=lambda r: r["date"])


def render(title, pnl, closed, open_lots, fmt):
    if fmt == "csv":
        w = csv.writer(sys.stdout)
        w.writerow(["symbol", "realized"])
        for sym, v in sorted(pnl.items()):
            w.writerow([sym, f"{v:.2f}"])
        return
    wins = sum(1 for c in closed if c > 0)
    print(f"# {title}\n")
    print("| symbol | realized P&L |\n|---|---:|")
    for sym, v in sorted(pnl.items()):
        print(f"| {sym} | {v:,.2f} |")
    print(f"\nTotal: {sum(pnl.values()):,.2f}")
    if closed:
        print(f"Win rate: {100 * wins / len(closed):.0f}% of {len(closed)} closed lots")
    for sym, qty in sorted(open_lots.items()):
        print(f"Open: {qty:g} {sym}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="report", required=True)
    m = sub.add_parser("monthly", help="realized P&L of one month")
    m.add_argument("--month", required=True, help="YYYY-MM")
    y = sub.add_parser("ytd", help="realized P&L of the year so far")
    y.add_argument("--year", required=True, type=int)
    for p in (m, y):
        p.add_argument("--input", required=True, help="blotter CSV")
        p.add_argument("--format", choices=["md", "csv"], default="md")
    args = ap.parse_args()
    rows = read_blotter(args.input)
    prefix = args.month if args.report == "monthly" else str(args.year)
    # lots opened before the period still count: match over all fills up to its end
    upto = [r for r in rows if r["date"][:len(prefix)] <= prefix]
    before = [r for r in upto if r["date"][:len(prefix)] < prefix]
    pnl_all, closed_all, open_lots = realized(upto)
    pnl_before, closed_before, _ = realized(before)
    pnl = {s: v - pnl_before.get(s, 0.0) for s, v in pnl_all.items()}
    title = f"P&L {args.month}" if args.report == "monthly" else f"P&L {args.year} to date"
    render(title, pnl, closed_all[len(closed_before):], open_lots, args.format)


if __name__ == "__main__":
    main()
