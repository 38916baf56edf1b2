#!/usr/bin/env python3
"""Run (or, with --dry-run, check) an MCP server evaluation file."""

import argparse
import sys
import xml.etree.ElementTree as ET


def load(path):
    root = ET.parse(path).getroot()
    pairs = []
    for i, qa in enumerate(root.iter("qa_pair"), 1):
        q = (qa.findtext("question") or "").strip()
        a = (qa.findtext("answer") or "").strip()
        pairs.append((i, q, a))
    return pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--eval-file", required=True)
    parser.add_argument("--dry-run", action="store_true",
                        help="check the file and list the questions; do not contact a server")
    parser.add_argument("--server", help="the server command (needed without --dry-run)")
    args = parser.parse_args()
    pairs = load(args.eval_file)
    problems = [f"question {i}: no answer" for i, _, a in pairs if not a]
    seen = {}
    for i, q, _ in pairs:
        if q in seen:
            problems.append(f"question {i}: duplicate of question {seen[q]}")
        seen.setdefault(q, i)
    for i, q, a in pairs:
        print(f"{i}. {q}\n   -> {a or '(none)'}")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    if args.dry_run:
        print(f"{len(pairs)} questions, ready to run")
        return
    if not args.server:
        sys.exit("error: --server is required to run the evaluation")
    sys.exit("error: running against a server needs the mcp package: pip install mcp")


if __name__ == "__main__":
    main()
