#!/usr/bin/env python3
"""Flag timing-leak patterns in C sources that handle secrets."""

import argparse
import re
import sys
from pathlib import Path

SECRET = r"\w*(?:key|mac|tag|hash|secret|passw\w*|digest)\w*"
RULES = {
    "memcmp-secret": re.compile(rf"\b(?:memcmp|strcmp|strncmp|bcmp)\s*\(\s*{SECRET}\b", re.I),
    "early-exit-loop": re.compile(rf"\bif\s*\(\s*{SECRET}\s*\[\s*\w+\s*\]\s*!=", re.I),
    "secret-branch": re.compile(rf"\bif\s*\(\s*{SECRET}\s*\[\s*\w+\s*\]\s*[&|<>]", re.I),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sources", nargs="+", type=Path, help="C files")
    parser.add_argument("--rules", default=",".join(RULES),
                        help="comma-separated rules to run (default: all)")
    args = parser.parse_args()
    wanted = [r for r in args.rules.split(",") if r]
    unknown = [r for r in wanted if r not in RULES]
    if unknown:
        sys.exit(f"error: unknown rules {', '.join(unknown)}; rules: {', '.join(RULES)}")
    count = 0
    for src in args.sources:
        for n, line in enumerate(src.read_text(encoding="utf-8").splitlines(), 1):
            for rule in wanted:
                if RULES[rule].search(line):
                    print(f"{src}:{n}: {rule}: {line.strip()}")
                    count += 1
    print(f"{count} findings in {len(args.sources)} files")


if __name__ == "__main__":
    main()
