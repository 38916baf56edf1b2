"""The commands that inspect: validate, schema, runtimes, show."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from aeval.deployments.cli._common import EPILOG, EXIT_FAIL, EXIT_USAGE, add_verbose
from aeval.deployments.cli.console import make_console, print_summary
from aeval.deployments.cli.options import resolve
from aeval.exit_codes import OK


def add_validate_parser(sub: argparse._SubParsersAction) -> None:
    """The `validate` subcommand."""
    v = sub.add_parser("validate", help="check SKILL.md and eval.config files",
                       description="Load every skill at or under PATH without running "
                       "anything; print problems as path:field: problem, and the static "
                       "skill check's findings (S0: a path SKILL.md names that the skill "
                       "lacks, a script it runs that cannot start, an action or option the "
                       "script does not accept) on SKILL.md's line. Exit 1 if the static "
                       "check found a defect, 2 if any skill is invalid, else 0.")
    v.add_argument("paths", nargs="+", metavar="PATH",
                   help="skill folders or marketplace roots")
    add_verbose(v)
    v.set_defaults(func=cmd_validate)


def fix_line(fix) -> str:
    """A static fix in one line: the command, or the line's new text."""
    from aeval.isolation.text import escape_controls

    if fix.command:
        return f"run `{fix.command}` in the skill's folder"
    return escape_controls(f"line {fix.line} -> {fix.replacement.strip()}")


def cmd_validate(args: argparse.Namespace) -> int:
    from aeval.skill.skill_md import discover
    from aeval.tasks.run.examine import examine
    from aeval.verdicts.static_fix import static_fixes

    roots = []
    for p in args.paths:
        path = Path(p)
        if not path.exists():
            print(f"{p}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
        found, nothing = discover([path])
        if nothing:
            print(nothing, file=sys.stderr)
            return EXIT_USAGE
        roots += found
    invalid = defective = 0
    for root in roots:
        ex = examine(root)
        if ex.problems:
            invalid += 1
            print(f"INVALID {root}")
            for line in ex.problems:
                print(f"  {line}")
        elif ex.static_findings:
            defective += 1
            print(f"DEFECT  {root}  ({ex.name})")
            fixes = {f: x for x in static_fixes(root, ex.static_findings) for f in x.findings}
            for f in ex.static_findings:
                print(f"  {f.located(root)}")
                if f in fixes:
                    print(f"    fix: {fix_line(fixes[f])}")
        else:
            print(f"ok      {root}  ({ex.name}: {len(ex.cases)} case(s), tier {ex.tier})")
        for w in ex.warnings:
            print(f"  warning: {w}")
    print(f"{len(roots)} skill(s), {invalid} invalid, {defective} with a static defect")
    return EXIT_FAIL if defective else EXIT_USAGE if invalid else OK


def add_schema_parser(sub: argparse._SubParsersAction) -> None:
    """The `schema` subcommand."""
    s = sub.add_parser("schema", help="print an artifact's JSON Schema",
                       description="Print the JSON Schema generated from the pydantic model.")
    s.add_argument("name", nargs="?", help="eval-config, run, grading, ... (omit with --write)")
    s.add_argument("--write", metavar="DIR", help="write every schema into DIR")
    add_verbose(s)
    s.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    from aeval.artifacts import SCHEMA_NAMES, json_schema

    if args.write:
        out = Path(args.write)
        out.mkdir(parents=True, exist_ok=True)
        for name in SCHEMA_NAMES:
            (out / f"{name}.schema.json").write_text(json.dumps(json_schema(name), indent=2)
                                                     + "\n")
        print(f"wrote {len(SCHEMA_NAMES)} schemas to {out}")
        return OK
    if not args.name:
        print(f"aeval schema: a schema name is required (or --write DIR); valid names: "
              f"{', '.join(SCHEMA_NAMES)}", file=sys.stderr)
        return EXIT_USAGE
    if args.name not in SCHEMA_NAMES:
        print(f"aeval schema: unknown schema name {args.name!r}; valid names: "
              f"{', '.join(SCHEMA_NAMES)}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(json_schema(args.name), indent=2))
    return OK


def runtime_rows() -> list[dict[str, str]]:
    """One row per registered runtime: installed or not (and why), version, where skills go,
    whether it needs a model, the install command. The probes (``--version`` of each CLI)
    run concurrently."""
    from concurrent.futures import ThreadPoolExecutor

    from aeval.adapters import RUNTIMES, runtime_class
    from aeval.errors import AevalError

    def probe(name: str) -> dict[str, str]:
        cls = runtime_class(name)
        try:
            rt = cls()
            version = rt.version()
            rt.check_available()
            installed = "yes"
        except (AevalError, ImportError) as exc:
            # whole: cut at a width it named a wrong version (`@openai/codex@0.17` of 0.171.0)
            installed, version = f"no ({(str(exc).splitlines() or [''])[0].strip()})", None
        return {"name": name, "installed": installed, "version": version or "–",
                "skills at": cls.skills_subdir or "–",
                "needs model": "yes" if cls.needs_model else "no",
                "install with": cls.install_hint}

    with ThreadPoolExecutor(max_workers=len(RUNTIMES)) as pool:
        return list(pool.map(probe, sorted(RUNTIMES)))


def add_runtimes_parser(sub: argparse._SubParsersAction) -> None:
    """The `runtimes` subcommand."""
    rt = sub.add_parser("runtimes", help="list the agent runtimes: installed, version, how to "
                                         "install")
    add_verbose(rt)
    rt.set_defaults(func=cmd_runtimes)


def cmd_runtimes(args: argparse.Namespace) -> int:
    rows = runtime_rows()
    console = make_console()
    if not console.is_terminal:  # piped or captured: one line per runtime, never wrapped
        for r in rows:
            print("  ".join(f"{k}: {v}" if k != "name" else v for k, v in r.items()))
        return OK
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="aeval runtimes", title_justify="left")
    for col in rows[0]:
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(*(escape(c) for c in r.values()))
    console.print(table)
    return OK


def add_show_parser(sub: argparse._SubParsersAction) -> None:
    """The `show` subcommand."""
    sh = sub.add_parser("show", help="summarize a finished run; exit with its gate code",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="Print a finished run's summary table, what failed with "
                        "evidence, and its gate.\n\nExit code: the run's own gate code (below), "
                        "so `aeval show` can stand in\nfor the run in a script; 2 if RUN is "
                        "unknown or did not finish.")
    sh.add_argument("run", nargs="?", default="latest",
                    help="run id, run folder, or latest (default)")
    sh.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    add_verbose(sh)
    sh.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    from aeval.run.read import read_run
    from aeval.run.store import RunStore

    store = RunStore(resolve(args).store)
    try:
        run_dir = store.resolve(args.run)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    manifest = read_run(run_dir).manifest
    if manifest.gate is None:
        print(f"run {manifest.run_id} did not finish (status {manifest.status})")
        return EXIT_USAGE
    print_summary(manifest, run_dir)
    return manifest.gate.exit_code
