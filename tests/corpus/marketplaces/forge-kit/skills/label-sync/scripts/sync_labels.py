#!/usr/bin/env python3
"""Print the gh label commands that bring a repository's labels in line with a shared set."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent / "assets" / "labels.json"


def load(path: Path) -> dict[str, dict]:
    with path.open(encoding="utf-8") as fh:
        return {label["name"].lower(): label for label in json.load(fh)}


def plan(current: dict[str, dict], shared: dict[str, dict], repo: str | None,
         prune: bool) -> list[str]:
    where = f" --repo {shlex.quote(repo)}" if repo else ""
    out = []
    for key, want in shared.items():
        args = f"--color {want['color']} --description {shlex.quote(want['description'])}"
        have = current.get(key)
        if have is None:
            out.append(f"gh label create {shlex.quote(want['name'])} {args}{where}")
        elif (have["color"].lower(), have.get("description", "")) != (want["color"],
                                                                       want["description"]):
            out.append(f"gh label edit {shlex.quote(have['name'])} {args}{where}")
    for key, have in sorted(current.items()):
        if key not in shared:
            cmd = f"gh label delete {shlex.quote(have['name'])} --yes{where}"
            out.append(cmd if prune else f"# not in the shared set: {cmd}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("current", type=Path, help="gh label list --json name,color,description")
    ap.add_argument("--repo", metavar="OWNER/REPO", help="passed on to every gh command")
    ap.add_argument("--labels", type=Path, default=SHARED, help="the shared set")
    ap.add_argument("--prune", action="store_true", help="delete labels not in the shared set")
    args = ap.parse_args()
    shared = load(args.labels)
    if not args.current.is_file():
        print(f"sync_labels.py: no such export: {args.current} (see step 1)", file=sys.stderr)
        return 1
    commands = plan(load(args.current), shared, args.repo, args.prune)
    print("\n".join(commands) if commands else "# labels already in sync")
    return 0


if __name__ == "__main__":
    sys.exit(main())
