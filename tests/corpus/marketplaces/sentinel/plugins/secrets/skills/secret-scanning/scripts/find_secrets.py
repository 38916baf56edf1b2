#!/usr/bin/env python3
"""Find committed credentials in a tree of text files."""

import argparse
import json
import re
from pathlib import Path

RULES = {
    "aws-access-key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "github-token": re.compile(r"\bgh[pos]_[A-Za-z0-9]{36}\b"),
    "slack-token": re.compile(r"\bxox[bp]-[A-Za-z0-9-]{10,}\b"),
    "private-key": re.compile(r"-----BEGIN (?:RSA |EC |OPENSSH )?PRIVATE KEY-----"),
    "password-assignment": re.compile(
        r"(?i)(?:password|passwd|secret)\w*\s*[:=]\s*[\"'][^\"'\s]{6,}[\"']"),
}
MAX_BYTES = 1_000_000


def redact(text):
    return text[:4] + "*" * max(len(text) - 4, 0)


def scan(root, excludes):
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or any(rel.startswith(e) for e in excludes):
            continue
        if path.stat().st_size > MAX_BYTES:
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(lines, 1):
            for rule, rx in RULES.items():
                m = rx.search(line)
                if m:
                    yield {"file": rel, "line": n, "rule": rule, "match": redact(m.group(0))}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path, help="the tree to scan")
    parser.add_argument("--exclude", action="append", default=[], metavar="PREFIX",
                        help="skip paths starting with PREFIX (repeatable)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of lines")
    args = parser.parse_args()
    findings = list(scan(args.root, args.exclude))
    if args.json:
        print(json.dumps({"root": str(args.root), "findings": findings}, indent=2))
        return
    for f in findings:
        print(f"{f['file']}:{f['line']}: {f['rule']} ({f['match']})")
    print(f"{len(findings)} findings")


if __name__ == "__main__":
    main()
