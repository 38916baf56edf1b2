#!/usr/bin/env python3
"""Write agents/openai.yaml for a skill: display name, short description, icon, default
prompt. Values not given are derived from SKILL.md.

    scripts/generate_openai_yaml.py <path/to/skill> [--display-name NAME]
        [--short-description TEXT] [--default-prompt TEXT] [--dry-run]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path


def quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main() -> int:
    p = argparse.ArgumentParser(prog="generate_openai_yaml.py",
                                description=__doc__.splitlines()[0])
    p.add_argument("skill")
    p.add_argument("--display-name")
    p.add_argument("--short-description")
    p.add_argument("--default-prompt")
    p.add_argument("--dry-run", action="store_true", help="print instead of writing")
    args = p.parse_args()
    skill = Path(args.skill)
    md = skill / "SKILL.md"
    if not md.is_file():
        print(f"error: no SKILL.md in {skill}", file=sys.stderr)
        return 1
    front = re.match(r"^---\n(.*?)\n---", md.read_text(encoding="utf-8"), re.S)
    fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", front.group(1), re.M)) if front else {}
    name = fields.get("name") or skill.resolve().name
    display = args.display_name or " ".join(w.capitalize() for w in name.split("-"))
    short = args.short_description or fields.get("description", "")[:60].rstrip(" .,")
    lines = ["interface:", f"  display_name: {quote(display)}",
             f"  short_description: {quote(short)}",
             f"  icon_small: {quote(f'./assets/{name}-small.svg')}"]
    if args.default_prompt:
        lines.append(f"  default_prompt: {quote(args.default_prompt)}")
    text = "\n".join(lines) + "\n"
    if args.dry_run:
        print(text, end="")
        return 0
    out = skill / "agents" / "openai.yaml"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
