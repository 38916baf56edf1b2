#!/usr/bin/env python3
"""Numbered SQL migrations: new, plan, apply."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def migrations(folder: Path) -> list[tuple[int, Path]]:
    out = []
    for p in sorted(folder.glob("*.sql")):
        m = NAME.match(p.name)
        if m:
            out.append((int(m.group(1)), p))
    return out


def checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def cmd_new(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    last = max((n for n, _ in migrations(folder)), default=0)
    path = folder / f"{last + 1:04d}_{args.slug}.sql"
    path.write_text("-- write the migration here\n")
    print(path)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    rows = [{"version": n, "file": p.name, "checksum": checksum(p)}
            for n, p in migrations(Path(args.dir))]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['version']:04d}  {r['checksum']}  {r['file']}")
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    url = args.database_url or os.environ.get("DATABASE_URL")
    if not url:
        print("apply: set DATABASE_URL or pass --database-url", file=sys.stderr)
        return 2
    sql = ["BEGIN;"] + [p.read_text() for _, p in migrations(Path(args.dir))] + ["COMMIT;"]
    return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1"], input="\n".join(sql),
                          text=True).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="migrate.py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("new", help="create the next migration file")
    p.add_argument("--dir", default="migrations")
    p.add_argument("--slug", required=True)
    p.set_defaults(func=cmd_new)
    p = sub.add_parser("plan", help="list migrations with checksums")
    p.add_argument("--dir", default="migrations")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("apply", help="apply pending migrations")
    p.add_argument("--dir", default="migrations")
    p.add_argument("--database-url")
    p.set_defaults(func=cmd_apply)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
