"""Find the failures in a GitHub Actions log: the failing step, error lines with context,
and the first test failure, so that the fix starts from the real cause.

    python3 scripts/inspect_logs.py ci.log [--context 3]
"""

from __future__ import annotations

import argparse
import re
import sys

STEP = re.compile(r"^(?:\S+\s+)?##\[group\](?:Run )?(.+)$")
ERROR = re.compile(r"##\[error\]|\bError\b|\bFAILED\b|Traceback|AssertionError|exit code [1-9]")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T[\d:.]+Z\s")


def main() -> int:
    p = argparse.ArgumentParser(prog="inspect_logs.py", description=__doc__.splitlines()[0])
    p.add_argument("log")
    p.add_argument("--context", type=int, default=2, help="lines around each error")
    args = p.parse_args()
    with open(args.log, encoding="utf-8", errors="replace") as f:
        lines = [TIMESTAMP.sub("", ln.rstrip("\n")) for ln in f]
    step, hits = "(before the first step)", []
    for i, line in enumerate(lines):
        m = STEP.match(line)
        if m:
            step = m.group(1).strip()
        elif ERROR.search(line):
            hits.append((i, step))
    if not hits:
        print("no error lines found; read the end of the log")
        return 0
    shown = set()
    print(f"{len(hits)} error line(s); first failing step: {hits[0][1]}")
    for i, step in hits:
        if i in shown:
            continue
        lo, hi = max(0, i - args.context), min(len(lines), i + args.context + 1)
        print(f"\n--- {step} (line {i + 1}) ---")
        for j in range(lo, hi):
            shown.add(j)
            print(("> " if j == i else "  ") + lines[j])
    return 0


if __name__ == "__main__":
    sys.exit(main())
