#!/usr/bin/env python3
"""Ask every Python on PATH whether it imports the given packages, and from where.

Usage: python3 scripts/check_env.py PACKAGE... [--out reports/python-env.json]
Exit 1 when a package is missing from the first interpreter on PATH.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

PROBE = r"""
import importlib, json, sys
found = {}
for name in sys.argv[1:]:
    try:
        m = importlib.import_module(name)
        found[name] = {"ok": True, "version": getattr(m, "__version__", ""),
                       "file": getattr(m, "__file__", "") or ""}
    except Exception as e:
        found[name] = {"ok": False, "error": f"{type(e).__name__}: {e}"}
print(json.dumps({"prefix": sys.prefix, "base_prefix": sys.base_prefix,
                  "path": sys.path, "packages": found}))
"""


def interpreters():
    """Each folder of PATH, in order, gives its ``python3`` (else its ``python``): the one a
    command runs first, and every other one it could run."""
    folders, out = set(), []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        real = os.path.realpath(folder) if folder else ""
        if not folder or real in folders:
            continue
        folders.add(real)
        for name in ("python3", "python"):
            exe = shutil.which(name, path=folder)
            if exe:
                out.append(exe)
                break
    return out or [sys.executable]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("packages", nargs="+")
    ap.add_argument("--out", default="reports/python-env.json")
    args = ap.parse_args()
    report = {}
    for exe in interpreters():
        try:
            r = subprocess.run([exe, "-c", PROBE, *args.packages], capture_output=True,
                               text=True, timeout=90)
            report[exe] = json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr}
        except (OSError, ValueError, subprocess.TimeoutExpired) as e:
            report[exe] = {"error": f"{type(e).__name__}: {e}"}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=1)
    first = next(iter(report.values()))
    missing = [n for n, p in first.get("packages", {}).items() if not p["ok"]]
    for exe, r in report.items():
        ok = [n for n, p in r.get("packages", {}).items() if p["ok"]]
        print(f"{exe}: imports {', '.join(ok) or 'none of them'}")
    if missing:
        print(f"missing: {' '.join(missing)} (pip install {' '.join(missing)})")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
