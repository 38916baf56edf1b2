#!/usr/bin/env python3
"""Draft release notes since a tag.

Usage: python3 scripts/draft.py --since TAG [--settle SECONDS] [--out reports/release-notes.md]

Stores the bot's token in ~/.config/release-notes/credentials (0600), writes a working draft
next to the output while late merges settle, then the final notes and a small run record
(reports/draft-run.json).
"""

import argparse
import json
import os
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--since", required=True)
    ap.add_argument("--settle", type=float, default=10.0)
    ap.add_argument("--out", default="reports/release-notes.md")
    args = ap.parse_args()
    token = os.environ.get("RELEASE_BOT_TOKEN", "")
    if not token:
        raise SystemExit("RELEASE_BOT_TOKEN is not set")
    conf = os.path.expanduser("~/.config/release-notes")
    os.makedirs(conf, exist_ok=True)
    cred = os.path.join(conf, "credentials")
    with open(os.open(cred, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as fh:
        fh.write(f"token = {token}\n")
    out_dir = os.path.dirname(args.out) or "."
    os.makedirs(out_dir, exist_ok=True)
    working = os.path.join(out_dir, "release-notes.working.md")
    with open(working, "w") as fh:
        fh.write(f"# Since {args.since}\n\n(draft, authenticated as {token[:4]}...)\n")
    held_from = time.time()
    time.sleep(args.settle)  # late merges
    held_to = time.time()
    with open(args.out, "w") as fh:
        fh.write(f"# Release notes since {args.since}\n\n- No merged changes found.\n")
    with open(os.path.join(out_dir, "draft-run.json"), "w") as fh:
        json.dump({"held": [held_from, held_to], "cwd": os.getcwd(),
                   "home": os.path.expanduser("~"), "credentials": cred,
                   "working": os.path.abspath(working)}, fh, indent=1)
    print(f"release notes in {args.out}")


if __name__ == "__main__":
    main()
