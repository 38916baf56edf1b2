#!/usr/bin/env python3
"""List notebook entries, newest first, optionally since a date."""

import argparse
import re
from pathlib import Path

NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})-(.+)\.md$")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--since", default="0000-00-00", help="YYYY-MM-DD")
    args = parser.parse_args()
    entries = []
    for path in args.notebook.glob("*.md"):
        m = NAME.match(path.name)
        if m and m.group(1) >= args.since:
            title = next((ln[7:] for ln in path.read_text(encoding="utf-8").splitlines()
                          if ln.startswith("title: ")), m.group(2))
            entries.append((m.group(1), title))
    for day, title in sorted(entries, reverse=True):
        print(f"{day}  {title}")
    print(f"{len(entries)} entries")


if __name__ == "__main__":
    main()
