#!/usr/bin/env python3
"""Merge SARIF files, dropping duplicate results (same rule, file and start line)."""

import argparse
import json
import sys
from pathlib import Path


def location_key(result):
    locs = result.get("locations") or [{}]
    phys = locs[0].get("physicalLocation", {})
    uri = phys.get("artifactLocation", {}).get("uri", "")
    line = phys.get("region", {}).get("startLine", 0)
    return (result.get("ruleId", ""), uri, line)


def is_important(result, rules):
    if result.get("level", "warning") == "error":
        return True
    tags = rules.get(result.get("ruleId", ""), {}).get("properties", {}).get("tags", [])
    return "security" in tags


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("inputs", nargs="+", type=Path, help="SARIF files to merge")
    parser.add_argument("-o", "--output", type=Path, default=Path("merged.sarif"),
                        help="where to write the merged file (default: merged.sarif)")
    parser.add_argument("--important", action="store_true",
                        help="keep only error-level results and security-tagged rules")
    args = parser.parse_args()

    seen = set()
    runs = []
    kept = dropped = 0
    for path in args.inputs:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            sys.exit(f"error: cannot read {path}: {exc}")
        for run in doc.get("runs", []):
            rules = {r["id"]: r for r in run.get("tool", {}).get("driver", {}).get("rules", [])}
            results = []
            for result in run.get("results", []):
                key = location_key(result)
                if key in seen or (args.important and not is_important(result, rules)):
                    dropped += 1
                    continue
                seen.add(key)
                results.append(result)
            kept += len(results)
            runs.append({**run, "results": results})

    merged = {"version": "2.1.0",
              "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
              "runs": runs}
    args.output.write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
    print(f"{args.output}: {kept} results from {len(runs)} runs ({dropped} dropped)")


if __name__ == "__main__":
    main()
