# /// script
# requires-python = ">=3.9"
# dependencies = [
#     "unidiff>=0.7.5",
# ]
# ///
"""Lines changed per file in a unified diff, generated and lock files left out."""

from __future__ import annotations

import argparse
import fnmatch
import sys

from unidiff import PatchSet

IGNORED = ["*.lock", "uv.lock", "package-lock.json", "pnpm-lock.yaml", "*.min.js",
           "generated/*", "*/generated/*"]


def ignored(path: str) -> bool:
    return any(fnmatch.fnmatch(path, pat) for pat in IGNORED)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("diff", help="a unified diff, or - for standard input")
    ap.add_argument("--max-lines", type=int, default=400)
    args = ap.parse_args()
    if args.diff == "-":
        patch = PatchSet(sys.stdin)
    else:
        with open(args.diff, encoding="utf-8") as fh:
            patch = PatchSet(fh)
    total = 0
    for f in patch:
        changed = f.added + f.removed
        mark = " (not counted)" if ignored(f.path) else ""
        if not mark:
            total += changed
        print(f"{changed:6d}  {f.path}{mark}")
    print(f"{total:6d}  total")
    if total > args.max_lines:
        print(f"over {args.max_lines} lines: consider splitting this pull request")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
