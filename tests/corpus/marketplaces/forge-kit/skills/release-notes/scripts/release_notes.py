#!/usr/bin/env python3
"""Release notes from the conventional commits of the current repository."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conventional import parse_subject  # noqa: E402

SECTIONS = json.loads((HERE.parent / "assets" / "sections.json").read_text(encoding="utf-8"))


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True, text=True)


def commits(since: str | None, limit: int | None) -> list[tuple[str, str, str]]:
    rng = [f"{since}..HEAD"] if since else []
    cmd = ["log", "--format=%h%x1f%s%x1f%b%x1e", *rng]
    if limit:
        cmd.append(f"-n{limit}")
    out = git(*cmd)
    if out.returncode != 0:
        sys.exit(f"release_notes.py: git log failed: {out.stderr.strip()}")
    return [tuple(rec.strip("\n").split("\x1f", 2)) for rec in out.stdout.split("\x1e")
            if rec.strip()]


def group(records) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {key: [] for key in SECTIONS["order"]}
    for sha, subject, body in records:
        c = parse_subject(subject, body)
        if c.type in SECTIONS["hidden"]:
            continue
        line = (f"**{c.scope}:** " if c.scope else "") + f"{c.description} ({sha})"
        groups.get(c.type, groups["other"]).append(line)
        if c.breaking:
            groups["breaking"].append(line)
    return {k: v for k, v in groups.items() if v}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--since", metavar="TAG", help="start after this tag (default: the last tag)")
    ap.add_argument("--max", type=int, metavar="N", help="at most N commits, newest first")
    ap.add_argument("--format", choices=["md", "json"], default="md")
    args = ap.parse_args()

    if git("rev-parse", "--is-inside-work-tree").returncode != 0:
        print("release_notes.py: not inside a git repository; run it from the root of the "
              "checkout you are releasing", file=sys.stderr)
        return 1
    since = args.since
    if since is None:
        last = git("describe", "--tags", "--abbrev=0")
        since = last.stdout.strip() if last.returncode == 0 else None
    groups = group(commits(since, args.max))
    if args.format == "json":
        print(json.dumps({"since": since, "sections": groups}, indent=2))
        return 0
    print(f"## Changes since {since}" if since else "## Changes")
    for key, lines in groups.items():
        print(f"\n### {SECTIONS['headings'][key]}\n")
        print("\n".join(f"- {line}" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
