#!/usr/bin/env python3
"""Audit an npm lockfile (v2 or v3) against an exported advisory feed."""

import argparse
import json
import sys
from pathlib import Path

LEVELS = {"critical": "error", "high": "error", "moderate": "warning", "low": "note"}


def version_tuple(text):
    return tuple(int(p) for p in text.split("-", 1)[0].split("."))


def vulnerable(installed, spec):
    op, bound = (spec[:2], spec[2:]) if spec[:2] in ("<=", ">=") else (spec[:1], spec[1:])
    a, b = version_tuple(installed), version_tuple(bound)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}.get(op, False)


def findings(lock, advisories):
    packages = lock.get("packages", {})
    direct = set(packages.get("", {}).get("dependencies", {}))
    parents = {}
    for key, meta in packages.items():
        for dep in meta.get("dependencies", {}):
            parents.setdefault(dep, key.rsplit("node_modules/", 1)[-1])
    for key, meta in sorted(packages.items()):
        if not key:
            continue
        name = key.rsplit("node_modules/", 1)[-1]
        for adv in advisories:
            if adv["package"] == name and vulnerable(meta["version"], adv["vulnerable"]):
                yield {"package": name, "version": meta["version"], "advisory": adv,
                       "via": None if name in direct else parents.get(name)}


def to_sarif(found, lock_path):
    results = [{
        "ruleId": f["advisory"]["id"],
        "level": LEVELS.get(f["advisory"]["severity"], "warning"),
        "message": {"text": f"{f['package']}@{f['version']}: {f['advisory']['title']} "
                            f"(fixed in {f['advisory']['fixed']})"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": str(lock_path)}}}],
    } for f in found]
    rules = [{"id": f["advisory"]["id"], "properties": {"tags": ["security", "supply-chain"]}}
             for f in found]
    return {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "lockfile-audit",
                                                              "rules": rules}},
                                          "results": results}]}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("lockfile", type=Path)
    parser.add_argument("--advisories", type=Path, required=True, help="the exported feed")
    parser.add_argument("--format", choices=["text", "sarif"], default="text")
    parser.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    args = parser.parse_args()
    try:
        lock = json.loads(args.lockfile.read_text(encoding="utf-8"))
        feed = json.loads(args.advisories.read_text(encoding="utf-8"))["advisories"]
    except (OSError, ValueError, KeyError) as exc:
        sys.exit(f"error: {exc}")
    found = list(findings(lock, feed))
    if args.format == "sarif":
        text = json.dumps(to_sarif(found, args.lockfile), indent=2) + "\n"
    else:
        lines = []
        for f in found:
            via = f" via {f['via']}" if f["via"] else " (direct)"
            a = f["advisory"]
            lines.append(f"{f['package']}@{f['version']}{via}: {a['id']} {a['severity']}: "
                         f"{a['title']}; fixed in {a['fixed']}")
        lines.append(f"{len(found)} vulnerable packages")
        text = "\n".join(lines) + "\n"
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output} ({len(found)} findings)")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
