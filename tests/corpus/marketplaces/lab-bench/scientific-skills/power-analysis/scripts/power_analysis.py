#!/usr/bin/env python3
"""Sample size and power for a two-sample t-test (normal approximation)."""

import argparse
import math
from statistics import NormalDist

Z = NormalDist()


def sample_size(d, alpha, power, two_sided=True):
    za = Z.inv_cdf(1 - alpha / 2) if two_sided else Z.inv_cdf(1 - alpha)
    zb = Z.inv_cdf(power)
    n = 2 * ((za + zb) / d) ** 2
    return math.ceil(n + (za ** 2) / 4)   # Guenther's correction towards the t-test


def power_of(d, alpha, n, two_sided=True):
    za = Z.inv_cdf(1 - alpha / 2) if two_sided else Z.inv_cdf(1 - alpha)
    return Z.cdf(d * math.sqrt(n / 2) - za)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("sample-size", "power"):
        p = sub.add_parser(name)
        p.add_argument("--effect-size", type=float, required=True, help="Cohen's d")
        p.add_argument("--alpha", type=float, default=0.05)
        p.add_argument("--one-sided", action="store_true")
        if name == "sample-size":
            p.add_argument("--power", type=float, default=0.8)
        else:
            p.add_argument("--n", type=int, required=True, help="per group")
    args = parser.parse_args()
    two = not args.one_sided
    if args.command == "sample-size":
        n = sample_size(args.effect_size, args.alpha, args.power, two)
        print(f"n per group: {n} (total {2 * n}) for d={args.effect_size}, "
              f"alpha={args.alpha}, power={args.power}")
    else:
        pw = power_of(args.effect_size, args.alpha, args.n, two)
        print(f"power: {pw:.3f} for d={args.effect_size}, alpha={args.alpha}, n={args.n}")


if __name__ == "__main__":
    main()
