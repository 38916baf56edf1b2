"""Per-column statistics of a CSV file."""

import argparse
import csv
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--markdown")
    args = ap.parse_args()
    with open(args.csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    columns = list(rows[0]) if rows else []
    numeric = {}
    for col in columns:
        try:
            values = [float(r[col]) for r in rows]
        except ValueError:
            continue
        numeric[col] = {"mean": round(sum(values) / len(values), 4), "min": min(values),
                        "max": max(values)}
    stats = {"rows": len(rows), "columns": columns, "numeric": numeric}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(stats, indent=2))
    print(f"rows: {len(rows)}")
    if args.markdown:
        lines = ["# Summary", "", f"{len(rows)} rows, {len(columns)} columns.", ""]
        lines += [f"- **{c}**: mean {s['mean']}, range {s['min']} to {s['max']}"
                  for c, s in numeric.items()]
        Path(args.markdown).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
