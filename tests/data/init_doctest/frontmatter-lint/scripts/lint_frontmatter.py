"""Lint the frontmatter of the SKILL.md in a skill folder."""
import re
import sys
from pathlib import Path

ALLOWED = {"name", "description", "license", "allowed-tools", "metadata"}


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    skill_md = folder / "SKILL.md"
    if not skill_md.is_file():
        print(f"{skill_md}: not found", file=sys.stderr)
        return 1
    head = skill_md.read_text().split("---")[1]
    keys = {m.group(1) for m in re.finditer(r"^([\w-]+):", head, re.M)}
    problems = sorted(keys - ALLOWED)
    for key in problems:
        print(f"{skill_md}: unknown key {key!r}")
    print(f"{len(keys)} key(s), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
