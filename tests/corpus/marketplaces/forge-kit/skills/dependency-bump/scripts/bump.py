#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Rewrite one dependency's version constraint in a pyproject.toml."""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

OPERATORS = {"pin": "==", "compatible": "~=", "minimum": ">="}
NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?")


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def bump_requirement(req: str, package: str, version: str, strategy: str) -> str | None:
    """``req`` with its constraint replaced, or None when it names another package."""
    m = NAME.match(req)
    if not m or normalize(m.group(1)) != normalize(package):
        return None
    marker = req.split(";", 1)[1].strip() if ";" in req else ""
    new = f"{m.group(1)}{m.group(2) or ''}{OPERATORS[strategy]}{version}"
    return f"{new}; {marker}" if marker else new


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("pyproject", type=Path)
    ap.add_argument("--package", required=True)
    ap.add_argument("--to", required=True, metavar="VERSION")
    ap.add_argument("--strategy", choices=sorted(OPERATORS), default="compatible")
    ap.add_argument("--in-place", action="store_true", help="write the file instead of printing")
    args = ap.parse_args()

    try:
        text = args.pyproject.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"bump.py: cannot read {args.pyproject}: {exc}", file=sys.stderr)
        return 1
    project = data.get("project", {})
    reqs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    changed = 0
    for req in reqs:
        new = bump_requirement(req, args.package, args.to, args.strategy)
        if new and new != req:
            text = text.replace(f'"{req}"', f'"{new}"')
            changed += 1
    if not changed:
        print(f"bump.py: {args.package} is not a dependency in {args.pyproject}", file=sys.stderr)
        return 1
    if args.in_place:
        args.pyproject.write_text(text, encoding="utf-8")
        print(f"bumped {args.package} to {args.to} ({changed} place(s))")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
