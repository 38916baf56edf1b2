"""Record one changeset per change (bump level + summary) and compute the next version and
release notes from the pending changesets.

    python3 scripts/changeset.py add --bump patch --summary "Fix VAT rounding" --dir changes
    python3 scripts/changeset.py version --dir changes --current 2.3.1
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

ORDER = {"patch": 0, "minor": 1, "major": 2}
FRONT = re.compile(r"^---\nbump: (patch|minor|major)\n---\n(.*)$", re.S)


def cmd_add(args) -> int:
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", args.summary.lower()).strip("-")[:40]
    digest = hashlib.sha1(args.summary.encode()).hexdigest()[:6]
    path = folder / f"{slug}-{digest}.md"
    path.write_text(f"---\nbump: {args.bump}\n---\n{args.summary.strip()}\n", encoding="utf-8")
    print(f"added {path}")
    return 0


def cmd_version(args) -> int:
    entries = []
    for path in sorted(Path(args.dir).glob("*.md")):
        m = FRONT.match(path.read_text(encoding="utf-8"))
        if not m:
            print(f"error: {path} is not a changeset (---/bump: .../---)", file=sys.stderr)
            return 1
        entries.append((m.group(1), m.group(2).strip()))
    if not entries:
        print(f"no pending changesets in {args.dir}")
        return 0
    try:
        major, minor, patch = (int(x) for x in args.current.split("."))
    except ValueError:
        print(f"error: --current {args.current!r} is not MAJOR.MINOR.PATCH", file=sys.stderr)
        return 2
    bump = max((b for b, _ in entries), key=ORDER.__getitem__)
    if bump == "major":
        nxt = f"{major + 1}.0.0"
    elif bump == "minor":
        nxt = f"{major}.{minor + 1}.0"
    else:
        nxt = f"{major}.{minor}.{patch + 1}"
    print(f"next version: {nxt} ({bump})")
    print()
    print(f"## {nxt}")
    for level in ("major", "minor", "patch"):
        items = [s for b, s in entries if b == level]
        if items:
            print(f"\n### {level.capitalize()} changes\n")
            print("\n".join(f"- {s}" for s in items))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(prog="changeset.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("add", help="record a changeset")
    a.add_argument("--bump", choices=list(ORDER), required=True)
    a.add_argument("--summary", required=True, help="one line, written for users")
    a.add_argument("--dir", default=".changeset")
    a.set_defaults(func=cmd_add)
    v = sub.add_parser("version", help="next version and release notes")
    v.add_argument("--dir", default=".changeset")
    v.add_argument("--current", required=True, help="the released version, e.g. 2.3.1")
    v.set_defaults(func=cmd_version)
    args = p.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
