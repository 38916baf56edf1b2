"""Read the themes in themes/ and print one: its colors and fonts, or CSS variables.

    python3 scripts/apply_theme.py list
    python3 scripts/apply_theme.py show ocean-depths
    python3 scripts/apply_theme.py css ocean-depths
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

THEMES = Path(__file__).resolve().parent.parent / "themes"
ITEM = re.compile(r"^- (\w+): (.+)$", re.M)


def load(slug: str) -> dict[str, str]:
    path = THEMES / f"{slug}.md"
    if not path.is_file():
        names = ", ".join(sorted(p.stem for p in THEMES.glob("*.md")))
        sys.exit(f"error: no theme {slug!r}; themes: {names}")
    text = path.read_text(encoding="utf-8")
    theme = dict(ITEM.findall(text))
    theme["title"] = text.splitlines()[0].lstrip("# ").strip()
    return theme


def list_themes(_slug: str | None) -> None:
    for path in sorted(THEMES.glob("*.md")):
        mood = path.read_text(encoding="utf-8").splitlines()[2]
        print(f"{path.stem:<20} {mood}")


def show(slug: str | None) -> None:
    theme = load(slug or "")
    print(theme.pop("title"))
    for key, value in theme.items():
        print(f"  {key:<11} {value}")


def css(slug: str | None) -> None:
    theme = load(slug or "")
    print(":root {")
    for key in ("primary", "secondary", "accent", "background"):
        print(f"  --theme-{key}: {theme[key]};")
    print(f'  --theme-font-headings: "{theme["headings"]}", Georgia, serif;')
    print(f'  --theme-font-body: "{theme["body"]}", Arial, sans-serif;')
    print("}")


ACTIONS = {"list": list_themes, "show": show, "css": css}


def main() -> int:
    p = argparse.ArgumentParser(prog="apply_theme.py", description=__doc__.splitlines()[0])
    p.add_argument("action", help="list, show or css")
    p.add_argument("theme", nargs="?", help="theme name, e.g. ocean-depths")
    args = p.parse_args()
    if args.action not in ACTIONS:
        sys.exit(f"unknown action {args.action}")
    if args.action != "list" and not args.theme:
        sys.exit(f"{args.action} needs a theme name (see: apply_theme.py list)")
    ACTIONS[args.action](args.theme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
