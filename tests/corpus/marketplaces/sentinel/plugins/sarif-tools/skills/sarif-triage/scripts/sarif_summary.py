#!/usr/bin/env python3
"""Count the results of a SARIF file per rule or per file."""

import argparse
import json
from collections import Counter


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sarif", help="a SARIF file")
    parser.add_argument("--by", choices=["rule", "file"], default="rule")
    parser.add_argument("--top", type=int, default=20, help="show the N largest groups")
    args = parser.parse_args()

    with open(args.sarif, encoding="utf-8") as fh:
        doc = json.load(fh)
    counts = Counter()
    for run in doc.get("runs", []):
        tool = run.get("tool", {}).get("driver", {}).get("name", "?")
        for result in run.get("results", []):
            if args.by == "rule":
                counts[f"{tool}:{result.get('ruleId', '?')}"] += 1
            else:
                loc = (result.get("locations") or [{}])[0]
                counts[loc.get("physicalLocation", {}).get("artifactLocation", {})
                       .get("uri", "?")] += 1
    width = max((len(k) for k in counts), default=5)
    print(f"{args.by:<{width}}  results")
    for key, n in counts.most_common(args.top):
        print(f"{key:<{width}}  {n}")
    print(f"{'total':<{width}}  {sum(counts.values())}")


if __name__ == "__main__":
    main()
