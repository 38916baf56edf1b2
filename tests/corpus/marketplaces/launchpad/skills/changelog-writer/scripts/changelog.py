#!/usr/bin/env python3
"""Write a Keep a Changelog section from conventional commit subjects."""

import argparse
import re
from datetime import date

COMMIT = re.compile(r"^(?P<type>\w+)(?:\((?P<scope>[^)]+)\))?(?P<bang>!)?:\s*(?P<text>.+)$")
SECTIONS = {"feat": "Added", "fix": "Fixed", "perf": "Changed", "refactor": "Changed"}


def next_version(current, bump):
    major, minor, patch = (int(x) for x in current.split("."))
    if bump == "major":
        return f"{major + 1}.0.0"
    if bump == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("commits", help="a file of commit subjects, one a line")
    parser.add_argument("--current", default="0.0.0", help="the current version")
    parser.add_argument("--date", default=date.today().isoformat())
    args = parser.parse_args()
    sections, bump = {}, "patch"
    with open(args.commits, encoding="utf-8") as fh:
        for line in fh:
            m = COMMIT.match(line.strip())
            if not m or m["type"] not in SECTIONS:
                continue
            text = m["text"] + (f" ({m['scope']})" if m["scope"] else "")
            if m["bang"] or "BREAKING CHANGE" in line:
                bump, text = "major", f"**Breaking:** {text}"
            elif m["type"] == "feat" and bump != "major":
                bump = "minor"
            sections.setdefault(SECTIONS[m["type"]], []).append(text)
    print(f"## [{next_version(args.current, bump)}] - {args.date}")
    for title in ("Added", "Changed", "Fixed"):
        if title in sections:
            print(f"\n### {title}\n")
            print("\n".join(f"- {t}" for t in sections[title]))


if __name__ == "__main__":
    main()
