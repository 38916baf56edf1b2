"""The commands that inspect: validate, schema, runtimes, show."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from deployments.cli_common import EXIT_USAGE
from deployments.console import make_console, print_summary


def cmd_validate(args: argparse.Namespace) -> int:
    from aeval.skill import find_skill_roots
    from tasks.examine import examine

    roots = []
    for p in args.paths:
        path = Path(p)
        if not path.exists():
            print(f"{p}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
        found = find_skill_roots(path)
        if not found:
            print(f"{p}: no SKILL.md found here or below", file=sys.stderr)
            return EXIT_USAGE
        roots += found
    invalid = 0
    for root in roots:
        ex = examine(root)
        if ex.problems:
            invalid += 1
            print(f"INVALID {root}")
            for line in ex.problems:
                print(f"  {line}")
        else:
            print(f"ok      {root}  ({ex.name}: {len(ex.cases)} case(s), tier {ex.tier})")
        for w in ex.warnings:
            print(f"  warning: {w}")
    print(f"{len(roots)} skill(s), {invalid} invalid")
    return EXIT_USAGE if invalid else 0


def cmd_schema(args: argparse.Namespace) -> int:
    from aeval.artifacts import SCHEMA_NAMES, json_schema

    if args.write:
        out = Path(args.write)
        out.mkdir(parents=True, exist_ok=True)
        for name in SCHEMA_NAMES:
            (out / f"{name}.schema.json").write_text(json.dumps(json_schema(name), indent=2)
                                                     + "\n")
        print(f"wrote {len(SCHEMA_NAMES)} schemas to {out}")
        return 0
    if not args.name or args.name not in SCHEMA_NAMES:
        print(f"schema name required, one of: {', '.join(SCHEMA_NAMES)}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(json_schema(args.name), indent=2))
    return 0


def cmd_runtimes(args: argparse.Namespace) -> int:
    from rich.markup import escape
    from rich.table import Table

    from adapters import RUNTIMES, runtime_class
    from aeval.errors import AevalError

    table = Table(title="aeval runtimes", title_justify="left")
    for col in ("name", "installed", "version", "skills at", "needs model", "install with"):
        table.add_column(col, overflow="fold")
    for name in sorted(RUNTIMES):
        try:
            rt = runtime_class(name)()
            version = rt.version()
            rt.check_available()
            installed, why = "yes", ""
        except (AevalError, ImportError) as exc:
            installed, why, version = "no", str(exc).splitlines()[0][:80], None
            rt = None
        cls = runtime_class(name) if rt is None else type(rt)
        cells = [name, installed if not why else f"no ({why})", version or "–",
                 cls.skills_subdir or "–", "yes" if cls.needs_model else "no", cls.install_hint]
        table.add_row(*(escape(c) for c in cells))
    make_console().print(table)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from aeval.artifacts import RunManifest
    from aeval.settings import Settings
    from aeval.store import RunStore, read_model

    store = RunStore(Path(args.out or Settings().home))
    try:
        run_dir = store.resolve(args.run)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    manifest = read_model(run_dir / "run.json", RunManifest)
    if manifest.gate is None:
        print(f"run {manifest.run_id} did not finish (status {manifest.status})")
        return EXIT_USAGE
    print_summary(manifest, run_dir)
    return manifest.gate.exit_code
