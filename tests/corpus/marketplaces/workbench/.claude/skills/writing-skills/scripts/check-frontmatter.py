"""Check the frontmatter of SKILL.md files against the rules of this repository: name in
hyphen-case and equal to the folder, a description that starts with "Use when" and stays
under 500 characters, no other keys.

    python3 scripts/check-frontmatter.py SKILL.md [more SKILL.md files...]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
FIELD = re.compile(r"^([a-z][a-z-]*):\s*(.*)$", re.M)


def check(path: Path) -> list[str]:
    m = FRONT.match(path.read_text(encoding="utf-8"))
    if not m:
        return ["no frontmatter"]
    fields = dict(FIELD.findall(m.group(1)))
    problems = []
    name = fields.get("name", "")
    folder = path.resolve().parent.name
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name):
        problems.append(f"name {name!r} is not hyphen-case")
    elif name != folder:
        problems.append(f"name {name!r} differs from folder {folder!r}")
    desc = fields.get("description", "")
    if not desc.startswith("Use when"):
        problems.append('description should start with "Use when"')
    if len(desc) > 500:
        problems.append(f"description is {len(desc)} characters (max 500)")
    extra = sorted(set(fields) - {"name", "description"})
    if extra:
        problems.append(f"unexpected keys: {', '.join(extra)}")
    return problems


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: check-frontmatter.py SKILL.md [...]", file=sys.stderr)
        return 2
    failed = 0
    for arg in argv:
        problems = check(Path(arg))
        print(f"{arg}: {'ok' if not problems else '; '.join(problems)}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
