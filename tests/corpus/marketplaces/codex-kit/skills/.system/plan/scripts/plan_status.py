"""Create a plan file from the template, or report the progress of one.

    python3 scripts/plan_status.py new "Title" --out plans/title.md
    python3 scripts/plan_status.py status plans/title.md
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import date
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent.parent / "references" / "plan-template.md"
STEP = re.compile(r"^\s*- \[( |x|X|~)\] (.+)$", re.M)


def cmd_new(args) -> int:
    out = Path(args.out)
    if out.exists():
        print(f"error: {out} exists; pick another name", file=sys.stderr)
        return 1
    text = TEMPLATE.read_text(encoding="utf-8")
    text = text.replace("{{title}}", args.title).replace("{{date}}", date.today().isoformat())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


def cmd_status(args) -> int:
    text = Path(args.plan).read_text(encoding="utf-8")
    steps = STEP.findall(text)
    if not steps:
        print(f"error: {args.plan} has no checklist steps (- [ ] ...)", file=sys.stderr)
        return 1
    done = sum(1 for mark, _ in steps if mark in "xX")
    doing = [s for mark, s in steps if mark == "~"]
    print(f"{done}/{len(steps)} steps done")
    for s in doing:
        print(f"in progress: {s}")
    nxt = next((s for mark, s in steps if mark == " "), None)
    if nxt:
        print(f"next: {nxt}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(prog="plan_status.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("new", help="create a plan from the template")
    n.add_argument("title")
    n.add_argument("--out", required=True)
    n.set_defaults(func=cmd_new)
    s = sub.add_parser("status", help="steps done, in progress, next")
    s.add_argument("plan")
    s.set_defaults(func=cmd_status)
    args = p.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
