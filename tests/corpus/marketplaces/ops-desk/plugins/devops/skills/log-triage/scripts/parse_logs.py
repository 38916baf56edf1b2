#!/usr/bin/env python3
"""Summarize an access log in the combined format."""

import argparse
import collections
import json
import os
import re
import sys

LINE = re.compile(
    r'(?P<ip>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<method>[A-Z]+) (?P<path>\S+) [^"]*" '
    r'(?P<status>\d{3}) (?P<size>\d+|-) "[^"]*" "(?P<agent>[^"]*)"')

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "bots.json"), encoding="utf-8") as fh:
    BOTS = [b.lower() for b in json.load(fh)["bots"]]


def is_bot(agent):
    agent = agent.lower()
    return any(b in agent for b in BOTS)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log")
    ap.add_argument("--top", type=int, default=10, help="paths shown (default 10)")
    args = ap.parse_args()
    if not os.path.isfile(args.log):
        sys.exit(f"parse_logs.py: no such log: {args.log}")
    statuses, paths, errors, bots, total, bad = (collections.Counter(), collections.Counter(),
                                                  collections.Counter(), 0, 0, 0)
    with open(args.log, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            m = LINE.match(raw)
            if not m:
                bad += 1
                continue
            total += 1
            statuses[m["status"][0] + "xx"] += 1
            paths[m["path"].split("?")[0]] += 1
            if m["status"].startswith("5"):
                errors[m["time"][:14]] += 1
            bots += is_bot(m["agent"])
    if not total:
        sys.exit(f"parse_logs.py: no line of {args.log} is in the combined format")
    print(f"{total} requests ({bad} unparsed), crawlers {100 * bots / total:.0f}%")
    print("status: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())))
    print("busiest paths:")
    for path, n in paths.most_common(args.top):
        print(f"  {n:6d}  {path}")
    if errors:
        hour, n = errors.most_common(1)[0]
        print(f"most 5xx in the hour {hour}: {n}")


if __name__ == "__main__":
    main()
