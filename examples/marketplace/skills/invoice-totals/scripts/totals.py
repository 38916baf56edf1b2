"""Invoice totals per customer from a CSV export."""

import argparse
import csv
import json
from pathlib import Path


def summary(src: Path, out: Path) -> None:
    totals: dict[str, float] = {}
    with src.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if row["amount"].strip():
                totals[row["customer"]] = totals.get(row["customer"], 0.0) + float(row["amount"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(totals, sort_keys=True))
    for customer, total in sorted(totals.items()):
        print(f"{customer}: {total:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("command", choices=["summary"])
    ap.add_argument("--input", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path("outputs/totals.json"))
    args = ap.parse_args()
    summary(args.input, args.out)


if __name__ == "__main__":
    main()
