#!/usr/bin/env python3
"""Check a skill folder: SKILL.md exists, its frontmatter has a valid name (equal to the
folder's) and a description, and no unknown keys.

    scripts/quick_validate.py <skill-folder>
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KNOWN = {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}


def frontmatter(text: str) -> dict[str, str] | None:
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    if not m:
        return None
    out = {}
    for line in m.group(1).splitlines():
        if line and not line.startswith((" ", "\t")) and ":" in line:
            key, value = line.split(":", 1)
            out[key.strip()] = value.strip()
    return out


def validate(folder: Path) -> list[str]:
    skill_md = folder / "SKILL.md"
    if not skill_md.is_file():
        return [f"{skill_md} not found"]
    front = frontmatter(skill_md.read_text(encoding="utf-8"))
    if front is None:
        return ["SKILL.md has no YAML frontmatter (--- ... ---) at the top"]
    problems = []
    name = front.get("name", "")
    if not NAME.match(name):
        problems.append(f"name {name!r} is not hyphen-case")
    elif name != folder.resolve().name:
        problems.append(f"name {name!r} differs from the folder name {folder.resolve().name!r}")
    desc = front.get("description", "")
    if not desc:
        problems.append("description is missing")
    elif len(desc) > 1024:
        problems.append(f"description has {len(desc)} characters (max 1024)")
    problems += [f"unknown frontmatter key {k!r}" for k in sorted(set(front) - KNOWN)]
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: quick_validate.py <skill-folder>", file=sys.stderr)
        return 2
    problems = validate(Path(argv[0]))
    for p in problems:
        print(f"  - {p}")
    print("Skill is valid!" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
