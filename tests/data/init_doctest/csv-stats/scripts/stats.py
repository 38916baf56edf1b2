"""Count, mean, min and max of one numeric column of a CSV file."""
import argparse
import csv
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("csv_file")
    ap.add_argument("--column", required=True)
    ap.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = ap.parse_args()
    with open(args.csv_file, newline="") as fh:
        values = [float(row[args.column]) for row in csv.DictReader(fh) if row[args.column]]
    stats = {"count": len(values), "mean": sum(values) / len(values),
             "min": min(values), "max": max(values)}
    if args.json:
        print(json.dumps(stats))
    else:
        for key, value in stats.items():
            print(f"{key}: {value:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
