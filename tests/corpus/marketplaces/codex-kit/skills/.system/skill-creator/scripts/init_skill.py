#!/usr/bin/env python3
"""Initialize a skill folder: SKILL.md with frontmatter and TODOs, agents/openai.yaml, and
the resource folders asked for.

    scripts/init_skill.py <skill-name> --path <parent-dir> [--resources scripts,references,assets]
                          [--examples]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
RESOURCES = ("scripts", "references", "assets")


def resources(value: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in RESOURCES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown resource folder(s): {', '.join(bad)}; "
                                         f"choose from {', '.join(RESOURCES)}")
    return items


def main() -> int:
    p = argparse.ArgumentParser(prog="init_skill.py", description=__doc__.splitlines()[0])
    p.add_argument("name", help="hyphen-case skill name, at most 64 characters")
    p.add_argument("--path", required=True, help="parent folder of the new skill")
    p.add_argument("--resources", type=resources, default=[],
                   help="comma-separated resource folders to create: scripts,references,assets")
    p.add_argument("--examples", action="store_true",
                   help="put an example file in each resource folder")
    args = p.parse_args()
    if not NAME.match(args.name) or len(args.name) > 64:
        print(f"error: skill name {args.name!r} must be hyphen-case (a-z, 0-9, -), "
              "at most 64 characters", file=sys.stderr)
        return 1
    root = Path(args.path) / args.name
    if root.exists():
        print(f"error: {root} already exists", file=sys.stderr)
        return 1
    root.mkdir(parents=True)
    title = " ".join(w.capitalize() for w in args.name.split("-"))
    (root / "SKILL.md").write_text(
        f"---\nname: {args.name}\ndescription: TODO: what it does and when to use it.\n---\n\n"
        f"# {title}\n\nTODO: the workflow, step by step.\n")
    (root / "agents").mkdir()
    (root / "agents" / "openai.yaml").write_text(
        f'interface:\n  display_name: "{title}"\n  short_description: "TODO"\n')
    for folder in args.resources:
        (root / folder).mkdir()
        if args.examples:
            example = {"scripts": "example.py", "references": "notes.md",
                       "assets": "template.txt"}[folder]
            (root / folder / example).write_text("TODO: replace or delete\n")
    print(f"initialized {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
