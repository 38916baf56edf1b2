#!/usr/bin/env python3
"""Check a CodeQL query pack's qlpack.yml and every query's metadata block."""

import argparse
import re
import sys
from pathlib import Path

REQUIRED = ("@name", "@id", "@kind", "@problem.severity")


def metadata(path):
    text = path.read_text(encoding="utf-8")
    block = re.match(r"\s*/\*\*(.*?)\*/", text, re.S)
    if not block:
        return None
    tags = {}
    for m in re.finditer(r"^\s*\*\s*(@[\w.-]+)\s+(.*)$", block.group(1), re.M):
        tags[m.group(1)] = m.group(2).strip()
    return tags


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("pack", type=Path, help="the folder holding qlpack.yml")
    args = parser.parse_args()
    problems = []
    qlpack = args.pack / "qlpack.yml"
    if not qlpack.is_file():
        sys.exit(f"error: {qlpack} not found")
    keys = dict(re.findall(r"^(\w+):\s*(.*)$", qlpack.read_text(encoding="utf-8"), re.M))
    for key in ("name", "version"):
        if not keys.get(key):
            problems.append(f"{qlpack}: missing {key}")
    queries = sorted(args.pack.rglob("*.ql"))
    ids = {}
    for q in queries:
        meta = metadata(q)
        if meta is None:
            problems.append(f"{q}: no metadata block")
            continue
        problems += [f"{q}: missing {tag}" for tag in REQUIRED if tag not in meta]
        if "security" in meta.get("@tags", "").split() and "@security-severity" not in meta:
            problems.append(f"{q}: tagged security but no @security-severity")
        if meta.get("@id") in ids:
            problems.append(f"{q}: @id {meta['@id']} also used by {ids[meta['@id']]}")
        ids[meta.get("@id")] = q
    for p in problems:
        print(p)
    print(f"{keys.get('name', '?')} {keys.get('version', '?')}: {len(queries)} queries, "
          f"{len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
