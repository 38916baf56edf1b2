#!/usr/bin/env python3
"""Read time of each section of a voice-over script against its planned length."""

import argparse
import json
import re
import sys
from pathlib import Path

PAUSES = json.loads((Path(__file__).resolve().parent.parent / "data" / "pauses.json")
                    .read_text(encoding="utf-8"))
PAUSES.pop("comment", None)
HEADING = re.compile(r"^##\s+(?P<name>.+?)\s*\((?P<sec>\d+(?:\.\d+)?)\s*s\)\s*$")


def sections(text):
    current = None
    for line in text.splitlines():
        m = HEADING.match(line)
        if m:
            current = {"name": m["name"], "seconds": float(m["sec"]), "text": ""}
            yield current
        elif current is not None:
            current["text"] += " " + line.strip()


def read_time(text, wpm):
    words = len(re.findall(r"[\w'’-]+", text))
    pauses = sum(PAUSES.get(ch, 0.0) for ch in text)
    return words * 60 / wpm + pauses


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("script", type=Path)
    ap.add_argument("--wpm", type=float, default=150)
    ap.add_argument("--fail-long", action="store_true")
    args = ap.parse_args()
    found = list(sections(args.script.read_text(encoding="utf-8")))
    if not found:
        sys.exit(f"wpm.py: no '## name (Ns)' headings in {args.script}")
    long = 0
    for s in found:
        t = read_time(s["text"], args.wpm)
        mark = "LONG" if t > s["seconds"] * 1.1 else "ok"
        long += mark == "LONG"
        print(f"{mark:4}  {s['name']:<24} {t:5.1f}s / {s['seconds']:g}s")
    if args.fail_long and long:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
