"""List the review threads of a pull request, grouped by file, from the JSON that the
GitHub GraphQL API (or `gh api graphql`) returns for reviewThreads.

    python3 scripts/review-threads.py review.json [--unresolved] [--author LOGIN]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict


def threads(data: dict) -> list[dict]:
    try:
        pr = data["data"]["repository"]["pullRequest"]
        return pr["reviewThreads"]["nodes"]
    except (KeyError, TypeError):
        sys.exit("error: expected data.repository.pullRequest.reviewThreads.nodes in the JSON")


def main() -> int:
    p = argparse.ArgumentParser(prog="review-threads.py", description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("--unresolved", action="store_true", help="only threads not resolved yet")
    p.add_argument("--author", help="only threads started by this reviewer")
    args = p.parse_args()
    with open(args.file, encoding="utf-8") as f:
        nodes = threads(json.load(f))
    by_file: dict[str, list[dict]] = defaultdict(list)
    for t in nodes:
        first = t["comments"]["nodes"][0]
        if args.unresolved and t["isResolved"]:
            continue
        if args.author and first["author"]["login"] != args.author:
            continue
        by_file[t["path"]].append(t)
    shown = sum(len(v) for v in by_file.values())
    print(f"{shown} of {len(nodes)} thread(s)" + (" unresolved" if args.unresolved else ""))
    for path in sorted(by_file):
        print(f"\n{path}")
        for t in sorted(by_file[path], key=lambda t: t.get("line") or 0):
            comments = t["comments"]["nodes"]
            first = comments[0]
            state = "resolved" if t["isResolved"] else "open"
            body = " ".join(first["body"].split())
            where = f"line {t.get('line') or '?'}"
            print(f"  {where} [{state}] @{first['author']['login']}: {body[:100]}")
            if len(comments) > 1:
                replies = len(comments) - 1
                print(f"    ({replies} repl{'y' if replies == 1 else 'ies'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
