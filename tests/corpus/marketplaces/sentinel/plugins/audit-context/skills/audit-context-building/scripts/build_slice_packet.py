#!/usr/bin/env python3
"""Write an audit context packet: entry points, trust boundaries and call slices."""

import argparse
import ast
from pathlib import Path

ROUTE_DECORATORS = {"route", "get", "post", "put", "delete", "patch"}
BOUNDARY_CALLS = {"execute": "database", "check_output": "process", "run": "process",
                  "Popen": "process", "system": "process", "open": "filesystem"}


def call_name(node):
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)


def analyse(root):
    functions, entries, boundaries = {}, [], []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            calls = [call_name(c) for c in ast.walk(fn) if isinstance(c, ast.Call)]
            functions[fn.name] = (rel, fn.lineno, [c for c in calls if c])
            for dec in fn.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if getattr(target, "attr", None) in ROUTE_DECORATORS:
                    entries.append((rel, fn.lineno, "http", fn.name))
            if fn.name == "main":
                entries.append((rel, fn.lineno, "cli", fn.name))
            for c in calls:
                if c in BOUNDARY_CALLS:
                    boundaries.append((rel, fn.lineno, fn.name, BOUNDARY_CALLS[c]))
    return functions, entries, boundaries


def slice_of(name, functions, seen=None):
    seen = seen if seen is not None else set()
    if name in seen or name not in functions:
        return []
    seen.add(name)
    out = [name]
    for callee in functions[name][2]:
        out += slice_of(callee, functions, seen)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path, help="the source tree")
    parser.add_argument("--out", type=Path, default=Path("packet.md"))
    args = parser.parse_args()
    functions, entries, boundaries = analyse(args.root)
    lines = [f"# Audit packet: {args.root}", "", "## Entry points", ""]
    lines += [f"- {f}:{n} {kind} `{name}`" for f, n, kind, name in entries]
    lines += ["", "## Trust boundaries", ""]
    lines += [f"- {f}:{n} `{fn}` -> {kind}" for f, n, fn, kind in boundaries]
    lines += ["", "## Slices", ""]
    for _f, _n, _kind, name in entries:
        lines.append(f"### {name}")
        for fn in slice_of(name, functions):
            rel, n, _ = functions[fn]
            lines.append(f"- {rel}:{n} `{fn}`")
        lines.append("")
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"{args.out}: {len(entries)} entry points, {len(boundaries)} boundaries")


if __name__ == "__main__":
    main()
