#!/usr/bin/env python3
# /// script
# requires-python = ">=3.9"
# dependencies = []
# ///
"""Classify the error lines of a failed CI log and say whether a re-run is worth it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from patterns import RERUN, classify_line, strip_timestamp


def triage(lines: list[str], max_lines: int) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in lines:
        category = classify_line(line)
        if category and len(found.setdefault(category, [])) < max_lines:
            found[category].append(strip_timestamp(line.strip()))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("log", type=Path, help="a log saved with gh run view --log-failed")
    ap.add_argument("--max-lines", type=int, default=1, help="lines shown per category")
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args()
    if not args.log.is_file():
        print(f"triage.py: no such log: {args.log}", file=sys.stderr)
        return 1
    found = triage(args.log.read_text(encoding="utf-8", errors="replace").splitlines(),
                   args.max_lines)
    rerun = bool(found) and set(found) <= RERUN
    if args.json:
        print(json.dumps({"categories": found, "rerun": rerun}, indent=2))
        return 0
    if not found:
        print("no known failure pattern; read the log")
        return 0
    for category, lines in found.items():
        for line in lines:
            print(f"{category:8} {line}")
    print("recommendation: " + ("re-run the failed jobs" if rerun else "fix the code first"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
