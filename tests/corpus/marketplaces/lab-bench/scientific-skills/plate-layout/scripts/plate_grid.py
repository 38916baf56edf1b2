#!/usr/bin/env python3
"""Print a plate layout (JSON from plate_map.py) as a grid."""

import argparse
import json

ROWS = "ABCDEFGH"


def short(name):
    return name if len(name) <= 10 else name[:9] + "."


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("layout")
    args = parser.parse_args()
    with open(args.layout, encoding="utf-8") as fh:
        wells = json.load(fh)["wells"]
    print("    " + "".join(f"{c:<11}" for c in range(1, 13)))
    for row in ROWS:
        cells = [short(wells.get(f"{row}{c}", "")) for c in range(1, 13)]
        print(f"{row}   " + "".join(f"{cell:<11}" for cell in cells))


if __name__ == "__main__":
    main()
