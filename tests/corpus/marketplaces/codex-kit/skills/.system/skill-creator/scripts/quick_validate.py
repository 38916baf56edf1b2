#!/usr/bin/env python3
"""Validate a skill folder: SKILL.md frontmatter (name, description), the name matching the
folder, and agents/openai.yaml present.

    scripts/quick_validate.py <path/to/skill>
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def check(skill: Path) -> list[str]:
    md = skill / "SKILL.md"
    if not md.is_file():
        return [f"no SKILL.md in {skill}"]
    text = md.read_text(encoding="utf-8")
    m = re.match(r"^---\n(.*?)\n---", text, re.S)
    if not m:
        return ["SKILL.md does not start with YAML frontmatter"]
    fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", m.group(1), re.M))
    problems = []
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", fields.get("name", "")):
        problems.append("frontmatter name must be hyphen-case")
    elif fields["name"] != skill.resolve().name:
        problems.append(f"name {fields['name']!r} does not match folder {skill.resolve().name!r}")
    if not fields.get("description"):
        problems.append("frontmatter description is empty")
    if not (skill / "agents" / "openai.yaml").is_file():
        problems.append("agents/openai.yaml is missing")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: quick_validate.py <path/to/skill>", file=sys.stderr)
        return 2
    problems = check(Path(argv[0]))
    if problems:
        for problem in problems:
            print(f"FAIL {problem}")
        return 1
    print("OK skill is valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
