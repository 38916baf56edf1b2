#!/usr/bin/env python3
# /// script
# requires-python = ">=3.10"
# dependencies = []
# ///
"""Check SMILES strings for unbalanced branches, brackets and unclosed ring bonds."""

import argparse
import re
import sys

RING = re.compile(r"%\d{2}|\d")


def problems(smiles):
    out, depth, open_rings = [], 0, set()
    body = re.sub(r"\[[^\]]*\]", "A", smiles)
    if body.count("[") or body.count("]"):
        out.append("unbalanced [ ]")
    for ch in body:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                out.append("')' without '('")
                depth = 0
    if depth:
        out.append(f"{depth} unclosed '('")
    for m in RING.finditer(body):
        open_rings ^= {m.group(0)}
    if open_rings:
        out.append("unclosed ring bond " + ", ".join(sorted(open_rings)))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("smiles", nargs="+")
    args = parser.parse_args()
    bad = 0
    for s in args.smiles:
        found = problems(s)
        bad += bool(found)
        print(f"{s}: {'; '.join(found) if found else 'ok'}")
    print(f"{len(args.smiles) - bad} ok, {bad} with problems")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
