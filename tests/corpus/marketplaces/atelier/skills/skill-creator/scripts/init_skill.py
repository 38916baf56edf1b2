#!/usr/bin/env python3
"""Create a new skill folder from the template: SKILL.md with frontmatter and TODOs, and
example scripts/, references/ and assets/ folders.

    scripts/init_skill.py <skill-name> --path <output-directory>
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

SKILL_TEMPLATE = """\
---
name: {name}
description: TODO - what the skill does and when to use it (the trigger). Be specific.
---

# {title}

## Overview

TODO: one paragraph on what this skill enables.

## Workflow

1. TODO

## Resources

- `scripts/example.py`: TODO (delete if unused)
- `references/guide.md`: TODO (delete if unused)
"""

EXAMPLE_SCRIPT = '''\
#!/usr/bin/env python3
"""Example helper of the {name} skill: replace or delete."""

print("hello from {name}")
'''


def main() -> int:
    p = argparse.ArgumentParser(prog="init_skill.py", description=__doc__.splitlines()[0])
    p.add_argument("name", help="hyphen-case, e.g. pdf-editor")
    p.add_argument("--path", required=True, help="folder to create the skill in")
    args = p.parse_args()
    if not NAME.match(args.name) or len(args.name) > 64:
        print(f"error: {args.name!r}: use lowercase letters, digits and hyphens (max 64)",
              file=sys.stderr)
        return 1
    root = Path(args.path) / args.name
    if root.exists():
        print(f"error: {root} already exists", file=sys.stderr)
        return 1
    (root / "scripts").mkdir(parents=True)
    (root / "references").mkdir()
    (root / "assets").mkdir()
    title = args.name.replace("-", " ").title()
    (root / "SKILL.md").write_text(SKILL_TEMPLATE.format(name=args.name, title=title))
    script = root / "scripts" / "example.py"
    script.write_text(EXAMPLE_SCRIPT.format(name=args.name))
    script.chmod(0o755)
    (root / "references" / "guide.md").write_text(f"# {title} guide\n\nTODO\n")
    print(f"created {root}")
    for sub in ("SKILL.md", "scripts/example.py", "references/guide.md", "assets/"):
        print(f"  {sub}")
    print("next: fill in the TODOs, then run scripts/quick_validate.py on the folder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
