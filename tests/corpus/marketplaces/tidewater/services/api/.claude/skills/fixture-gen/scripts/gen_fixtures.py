#!/usr/bin/env python3
# /// script
# requires-python = ">=3.10"
# dependencies = []
# ///
"""Deterministic fixture data for the Tidewater API."""
from __future__ import annotations

import argparse
import csv
import json
import os
import random
import sys

FIRST = ["ada", "grace", "linus", "margaret", "dennis", "barbara"]
DOMAINS = ["example.com", "example.org"]


def customers(rng: random.Random, n: int) -> list[dict]:
    return [{"id": i, "email": f"{rng.choice(FIRST)}{i}@{rng.choice(DOMAINS)}"}
            for i in range(1, n + 1)]


def orders(rng: random.Random, n: int) -> list[dict]:
    return [{"id": i, "customer_id": rng.randint(1, 50), "total_cents": rng.randint(100, 99_00)}
            for i in range(1, n + 1)]


def write(rows: list[dict], fmt: str) -> None:
    if fmt == "json":
        json.dump(rows, sys.stdout, indent=2)
        print()
    elif fmt == "ndjson":
        for r in rows:
            print(json.dumps(r))
    else:
        w = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("kind", choices=["customers", "orders"])
    p.add_argument("--count", type=int, default=10)
    p.add_argument("--format", choices=["json", "csv", "ndjson"], default="json")
    args = p.parse_args()
    rng = random.Random(int(os.environ.get("FIXTURE_SEED", "7")))
    rows = (customers if args.kind == "customers" else orders)(rng, args.count)
    write(rows, args.format)
    return 0


if __name__ == "__main__":
    sys.exit(main())
