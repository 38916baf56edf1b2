#!/usr/bin/env python3
"""Summarize `gh pr view --json ...` output: summarize.py FILE|- [--areas-only]"""
import json
import os
import sys
from collections import Counter


def areas(files, depth):
    c = Counter()
    for f in files:
        c["/".join(f["path"].split("/")[:depth])] += f["additions"] + f["deletions"]
    return c.most_common()


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    src, flags = argv[0], set(argv[1:])
    unknown = flags - {"--areas-only"}
    if unknown:
        print(f"summarize.py: unknown option {sorted(unknown)[0]}", file=sys.stderr)
        return 2
    if src == "-":
        pr = json.load(sys.stdin)
    else:
        with open(src, encoding="utf-8") as fh:
            pr = json.load(fh)
    depth = int(os.environ.get("PR_SUMMARY_DEPTH", "2"))
    if "--areas-only" in flags:
        for area, lines in areas(pr["files"], depth):
            print(f"{lines:6d}  {area}")
        return 0
    open_threads = [t["path"] for t in pr.get("reviewThreads", []) if not t["isResolved"]]
    failing = [c["name"] for c in pr.get("statusCheckRollup", [])
               if c.get("conclusion") == "FAILURE"]
    print(f"#{pr['number']} {pr['title']} by {pr['author']['login']}")
    print(f"+{pr['additions']} -{pr['deletions']} in {len(pr['files'])} files")
    print("areas: " + ", ".join(a for a, _ in areas(pr["files"], depth)))
    shown = f" ({', '.join(open_threads)})" if open_threads else ""
    print(f"unresolved threads: {len(open_threads)}{shown}")
    print("failing checks: " + (", ".join(failing) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
