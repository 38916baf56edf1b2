#!/usr/bin/env python3
"""Lint a Semgrep rule pack: every rule has the keys the team requires.

Reads the rule files with a small line reader (no PyYAML needed): it looks at each
`- id:` entry and the keys indented under it.
"""

import argparse
import re
import sys
from pathlib import Path

REQUIRED = ("message", "severity", "languages")
SEVERITIES = {"INFO", "WARNING", "ERROR"}


def read_rules(path):
    rules, current, in_meta = [], None, False
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^  - id:\s*(\S+)", line)
        if m:
            current = {"id": m.group(1), "keys": {}, "metadata": set()}
            rules.append(current)
            in_meta = False
            continue
        if current is None:
            continue
        key = re.match(r"^    (\w[\w-]*):\s*(.*)$", line)
        if key:
            current["keys"][key.group(1)] = key.group(2).strip()
            in_meta = key.group(1) == "metadata"
            continue
        sub = re.match(r"^      (\w[\w-]*):", line)
        if sub and in_meta:
            current["metadata"].add(sub.group(1))
    return rules


def lint(path, strict):
    problems = []
    for rule in read_rules(path):
        where = f"{path}:{rule['id']}"
        for key in REQUIRED:
            if key not in rule["keys"]:
                problems.append(f"{where}: missing {key}")
        severity = rule["keys"].get("severity", "")
        if severity and severity not in SEVERITIES:
            problems.append(f"{where}: severity {severity} is not one of {sorted(SEVERITIES)}")
        if "category" not in rule["metadata"]:
            problems.append(f"{where}: missing metadata.category")
        if strict and "cwe" not in rule["metadata"]:
            problems.append(f"{where}: --strict: missing metadata.cwe")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pack", type=Path, help="a folder of rule files (*.yaml, *.yml)")
    parser.add_argument("--strict", action="store_true", help="also require metadata.cwe")
    args = parser.parse_args()
    files = sorted([*args.pack.glob("*.yaml"), *args.pack.glob("*.yml")])
    if not files:
        sys.exit(f"error: no rule files in {args.pack}")
    problems, count = [], 0
    for path in files:
        count += len(read_rules(path))
        problems += lint(path, args.strict)
    for p in problems:
        print(p)
    print(f"{count} rules in {len(files)} files, {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
