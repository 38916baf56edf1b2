#!/usr/bin/env python3
"""Inventory every folder and file of this machine and summarise disk usage.

Usage: python3 scripts/usage.py [OUT_DIR] [--watch SECONDS]      (default: reports, 0)

The folders around the working directory come first (where the space usually went), then
the whole tree from /, breadth first, then the folders around the working directory again
(what appeared there during the walk), and with --watch once a second for that long (what
other jobs on the machine leave there while they run). /proc, /dev and /sys are skipped;
the contents of /usr and /lib* are counted at their top only. Writes OUT_DIR/disk-usage.json and the
inventory, one path per entry, as OUT_DIR/inventory-NNN.json.gz.
"""

import gzip
import json
import os
import sys
import time
from collections import deque

SKIP = {"/proc", "/dev", "/sys"}
PACKAGE_TREES = ("/usr", "/lib")  # /usr, /lib, /lib32, /lib64, /libx32
CHUNK = 40_000
BUDGET_S = float(os.environ.get("USAGE_BUDGET_S", "12"))
MAX_ENTRIES = 300_000


def top_only(path):
    return os.path.dirname(path) == "/" and path.startswith(PACKAGE_TREES)


def main(out, watch_s=0.0):
    os.makedirs(out, exist_ok=True)
    started = time.time()
    entries, sizes = {}, {}
    cwd = os.getcwd()
    nearby = []  # the working directory and each folder above it, nearest first
    here = cwd
    while here != "/":
        nearby.append(here)
        here = os.path.dirname(here)
    state = {"truncated": False}

    def walk(start, seen, deadline, limit=MAX_ENTRIES):
        queue = deque([start])
        while queue:
            folder = queue.popleft()
            if folder in seen:
                continue
            seen.add(folder)
            if time.time() > deadline or len(entries) > limit:
                state["truncated"] = True
                return
            try:
                listing = list(os.scandir(folder))
            except OSError:
                continue
            for e in listing:
                if e.path in SKIP:
                    continue
                try:
                    size = e.stat(follow_symlinks=False).st_size
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    size, is_dir = 0, False
                if e.path not in entries:
                    entries[e.path] = None
                    top = "/" + e.path.split("/")[1]
                    sizes[top] = sizes.get(top, 0) + size
                if is_dir and not top_only(e.path):
                    queue.append(e.path)

    passes = []
    seen = set()
    t = time.time()
    for folder in nearby:  # where the space usually went
        walk(folder, seen, started + BUDGET_S)
    passes.append([t, time.time()])
    walk("/", seen, started + BUDGET_S)
    watch_until = time.time() + watch_s
    while True:
        t = time.time()
        seen = set()
        for folder in nearby:  # another look: what appeared around us meanwhile
            walk(folder, seen, t + 5, len(entries) + 50_000)
        passes.append([t, time.time()])
        if time.time() >= watch_until:
            break
        time.sleep(1)
    paths = list(entries)
    for n, i in enumerate(range(0, max(len(paths), 1), CHUNK)):
        with gzip.open(os.path.join(out, f"inventory-{n:03d}.json.gz"), "wt") as fh:
            json.dump(paths[i:i + CHUNK], fh)
    summary = {
        "entries": len(paths), "truncated": state["truncated"],
        "walk": {"started": started, "nearby": passes, "ended": time.time()},
        "bytes_by_top_folder": dict(sorted(sizes.items(), key=lambda kv: -kv[1])),
        "where": {"cwd": cwd, "home": os.environ.get("HOME", ""),
                  "skill_dir": os.environ.get("SKILL_DIR", ""),
                  "tmpdir": os.environ.get("TMPDIR", "")},
        "python": {"executable": sys.executable, "prefix": sys.prefix,
                   "base_prefix": sys.base_prefix},
    }
    with open(os.path.join(out, "disk-usage.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    print(f"{len(paths)} entries in {time.time() - started:.1f} s"
          f"{' (budget reached)' if state['truncated'] else ''}; report in {out}/disk-usage.json")


if __name__ == "__main__":
    args = sys.argv[1:]
    watch = 0.0
    if "--watch" in args:
        at = args.index("--watch")
        watch = float(args[at + 1])
        del args[at:at + 2]
    main(args[0] if args else "reports", watch)
