"""Score threats on a 5x5 likelihood-impact matrix and print the rating the threat model
uses (low, medium, high, critical).

    python3 scripts/risk_score.py rate --likelihood 4 --impact 5
    python3 scripts/risk_score.py matrix
"""

from __future__ import annotations

import argparse
import sys

LEVELS = ((20, "critical"), (12, "high"), (6, "medium"), (0, "low"))


def rating(score: int) -> str:
    return next(name for floor, name in LEVELS if score >= floor)


def cmd_rate(args) -> int:
    score = args.likelihood * args.impact
    print(f"score: {score} ({rating(score)})")
    return 0


def cmd_matrix(_args) -> int:
    print("impact ->    " + "  ".join(f"{i:>8}" for i in range(1, 6)))
    for lk in range(5, 0, -1):
        row = "  ".join(f"{rating(lk * i):>8}" for i in range(1, 6))
        print(f"likelihood {lk} {row}")
    return 0


def level(value: str) -> int:
    n = int(value)
    if not 1 <= n <= 5:
        raise argparse.ArgumentTypeError("must be between 1 and 5")
    return n


def main() -> int:
    p = argparse.ArgumentParser(prog="risk_score.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("rate", help="score one threat")
    r.add_argument("--likelihood", type=level, required=True, help="1 (rare) to 5 (expected)")
    r.add_argument("--impact", type=level, required=True, help="1 (minor) to 5 (severe)")
    r.set_defaults(func=cmd_rate)
    m = sub.add_parser("matrix", help="print the rating of every cell")
    m.set_defaults(func=cmd_matrix)
    args = p.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
