#!/usr/bin/env python3
"""Place the samples of a sheet on a 96-well plate and write the layout as JSON."""

import argparse
import csv
import json
import sys

ROWS = "ABCDEFGH"


def wells(columns):
    for col in columns:
        for row in ROWS:
            yield f"{row}{col}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sheet", help="CSV with columns sample,replicates")
    parser.add_argument("--controls", type=int, default=2, help="control wells in column 1")
    parser.add_argument("-o", "--output", default="plate_layout.json")
    args = parser.parse_args()
    layout = {}
    for i, well in enumerate(wells([1])):
        layout[well] = f"control-{i + 1}" if i < args.controls else "empty"
    free = wells(range(2, 12))
    with open(args.sheet, newline="", encoding="utf-8") as fh:
        for rec in csv.DictReader(fh):
            for _ in range(int(rec["replicates"])):
                try:
                    layout[next(free)] = rec["sample"]
                except StopIteration:
                    sys.exit("error: the samples do not fit on one plate")
    for well in wells([12]):
        layout[well] = "blank"
    with open(args.output, "w", encoding="utf-8") as fh:
        json.dump({"plate": "96", "wells": layout}, fh, indent=2)
    used = sum(v not in ("empty", "blank") for v in layout.values())
    print(f"{args.output}: {used} wells used")


if __name__ == "__main__":
    main()
