#!/usr/bin/env python3
"""C1V1 = C2V2: stock and diluent volumes for a target concentration."""

import argparse
import sys

from units import kind


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stock", nargs=2, metavar=("VALUE", "UNIT"), required=True)
    parser.add_argument("--target", nargs=2, metavar=("VALUE", "UNIT"), required=True)
    parser.add_argument("--volume", nargs=2, metavar=("VALUE", "UNIT"), required=True)
    args = parser.parse_args()
    (ks, fs), (kt, ft), (kv, fv) = (kind(u) for _, u in (args.stock, args.target, args.volume))
    if ks != kt or kv != "volume":
        sys.exit("error: stock and target must be the same kind, volume a volume")
    c1, c2 = float(args.stock[0]) * fs, float(args.target[0]) * ft
    if c2 > c1:
        sys.exit("error: the target is more concentrated than the stock")
    v2 = float(args.volume[0]) * fv
    v1 = c2 * v2 / c1
    unit = args.volume[1]
    print(f"stock: {v1 / fv:g} {unit}, diluent: {(v2 - v1) / fv:g} {unit}")


if __name__ == "__main__":
    main()
