#!/usr/bin/env python3
"""Convert a concentration between mass and molar units."""

import argparse
import math
import sys

from units import kind


def round_sig(x, figs):
    if x == 0:
        return 0.0
    return round(x, figs - 1 - math.floor(math.log10(abs(x))))


def convert(value, src, dst, molar_mass=None):
    (k1, f1), (k2, f2) = kind(src), kind(dst)
    base = value * f1
    if k1 == k2:
        return base / f2
    if molar_mass is None:
        raise ValueError(f"{src} -> {dst} needs --molar-mass")
    if k1 == "molar" and k2 == "mass":
        return base * molar_mass / f2
    if k1 == "mass" and k2 == "molar":
        return base / molar_mass / f2
    raise ValueError(f"cannot convert {src} to {dst}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("value", type=float)
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--molar-mass", type=float, help="g/mol")
    parser.add_argument("--sig-figs", type=int, help="round to this many significant figures")
    args = parser.parse_args()
    try:
        result = convert(args.value, args.source, args.target, args.molar_mass)
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    if args.sig_figs:
        result = round_sig(result, args.sig_figs)
    print(f"{args.value:g} {args.source} = {result:g} {args.target}")


if __name__ == "__main__":
    main()
