#!/usr/bin/env python3
"""Create a dated lab notebook entry from the template."""

import argparse
import re
import sys
from datetime import datetime
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "entry.md"


def slug(title):
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--title", required=True)
    parser.add_argument("--date", default=datetime.now().strftime("%Y-%m-%d"),
                        help="YYYY-MM-DD (default: today)")
    parser.add_argument("--author", default="unknown")
    parser.add_argument("--notebook", default="notebook", help="the notebook folder")
    args = parser.parse_args()
    try:
        day = datetime.strptime(args.date, "%Y-%m-%d").date()
    except ValueError:
        sys.exit(f"error: --date {args.date!r} is not YYYY-MM-DD")
    folder = Path(args.notebook)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{day.isoformat()}-{slug(args.title)}.md"
    if path.exists():
        sys.exit(f"error: {path} already exists; entries are never overwritten")
    text = TEMPLATE.read_text(encoding="utf-8").format(title=args.title, date=day.isoformat(),
                                                        author=args.author)
    path.write_text(text, encoding="utf-8")
    print(path)


if __name__ == "__main__":
    main()
