"""`aeval uplift`: does the skill help? Every case with and without the skill, paired.

Exit codes (first match wins): 1 a skill's uplift is significantly negative (the agent does
worse with it: McNemar p < 0.05); 2 a usage error or an invalid skill; 4 aeval failed on a
case of either arm (internal); 3 an environment error excluded a pair; 0 otherwise (a
negative uplift that is not significant is flagged, not failed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aeval.deployments.cli._common import (
    EXIT_USAGE,
    add_grader_options,
    add_quiet_verbose,
    flag_problem,
)
from aeval.deployments.cli.console import (
    make_console,
    prefect_env,
    prefect_ready,
    progress_logging,
    start_prefect,
)
from aeval.deployments.cli.evaluate import check_sandbox, prefetch_model_client
from aeval.deployments.cli.options import resolve

EPILOG = """exit codes of `aeval uplift` (first match wins):
  1  a skill's uplift is significantly negative (exact McNemar p < 0.05)
  2  a usage error, or a skill whose SKILL.md / eval.config cannot be loaded
  4  internal error (aeval failed on a case of either arm, or itself)
  3  an environment error excluded a pair (retry)
  0  otherwise; a negative uplift that is not significant is flagged, not failed
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `uplift` subcommand."""
    u = sub.add_parser(
        "uplift", help="does the skill help? every case with and without it, paired",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run every case of the skills at PATH with the skill installed and "
        "without it (same prompt, case files and assertions; --epochs runs each), then report "
        "per case and per skill: pass rates with and without, the paired difference with a "
        "95% interval, an exact McNemar test, tokens and wall time (uplift.json and a section "
        "in the with-skill run's report.html).")
    u.add_argument("paths", nargs="+", metavar="PATH",
                   help="skill folders or marketplace roots")
    u.add_argument("--runtime", action="append", metavar="NAME",
                   help="agent runtime (repeatable; default builtin; not literal or replay)")
    u.add_argument("--model", help="executor model (litellm string), or AEVAL_MODEL")
    add_grader_options(u)
    u.add_argument("--epochs", type=int, default=3,
                   help="runs of each case in each arm (default 3)")
    u.add_argument("--concurrency", type=int, help="case chains at once (default 4)")
    u.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    u.add_argument("--keep-workspaces", action="store_true",
                   help="keep each attempt's workspace for debugging")
    u.add_argument("--sandbox", choices=("auto", "require", "none"),
                   help="bubblewrap around every process a case starts (as for run) "
                        "[AEVAL_SANDBOX]")
    add_quiet_verbose(u)
    u.set_defaults(func=cmd_uplift)


def usage(message: str) -> int:
    print(f"aeval uplift: {message}", file=sys.stderr)
    return EXIT_USAGE


def cmd_uplift(args: argparse.Namespace) -> int:
    for p in args.paths:
        if not Path(p).exists():
            return usage(f"{p}: no such file or folder")
    if args.epochs < 1:
        return usage("--epochs must be at least 1")
    if args.concurrency is not None and args.concurrency < 1:
        return usage("--concurrency must be at least 1")
    from aeval.capabilities import NO_MODEL_RUNTIMES

    opts = resolve(args, default_runtimes=["builtin"])
    runtimes = opts.runtimes
    if bad := [r for r in runtimes if r in NO_MODEL_RUNTIMES]:
        return usage(f"--runtime {bad[0]}: uplift needs an agent runtime (builtin, "
                     "claude-code, codex, opencode): without a model nothing chooses whether "
                     "to use the skill")
    from aeval.adapters import RUNTIMES

    if unknown := [r for r in runtimes if r not in RUNTIMES]:
        agents = (r for r in sorted(RUNTIMES) if r not in NO_MODEL_RUNTIMES)
        return usage(f"--runtime {unknown[0]}: unknown runtime; known: {', '.join(agents)}")
    model = opts.model
    if not model:
        return usage("an agent runtime needs --model (or AEVAL_MODEL)")
    import os

    from aeval.runtime.model_keys import config_problem

    if problem := config_problem(runtimes, model, opts.grader_model, opts.api_base,
                                 os.environ):
        return usage(problem)
    from aeval.skill.skill_md import find_skill_roots

    roots = [r for p in args.paths for r in find_skill_roots(Path(p))]
    if not roots:
        return usage(f"no SKILL.md found under {', '.join(args.paths)}")
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    # the embedded Prefect server boots now, before Prefect is imported: started later, it
    # would swap this process's environment while the model client is imported beside it
    start_prefect()
    sandbox = check_sandbox(opts.sandbox)
    if sandbox is None:
        return EXIT_USAGE

    from pydantic import ValidationError

    from aeval.run.requests import UpliftRequest
    from aeval.run.store import new_run_id

    try:
        request = UpliftRequest(
            paths=[str(p) for p in args.paths], skill_roots=[str(r) for r in roots],
            runtimes=runtimes, model=model, grader_model=opts.grader_model,
            api_base=opts.api_base, store=str(opts.store), uplift_id=new_run_id(),
            epochs=args.epochs, concurrency=opts.concurrency, retries=opts.settings.retries,
            retry_delay_s=opts.settings.retry_delay_s, keep_workspaces=opts.keep_workspaces,
            sandbox=sandbox, output_cap=opts.settings.output_cap)
    except ValidationError as exc:
        return usage(flag_problem(exc))
    from aeval.flows.uplift import uplift

    prefetch_model_client()
    from aeval.tasks._engine import stop_on_signals

    stop_on_signals()  # SIGTERM / SIGINT: the flow runs Cancelled, nothing left running
    prefect_ready()  # before any flow: with a scrubbed environment
    report = uplift(request)
    print_uplift(report, Path(request.store))
    assert report.gate is not None
    return report.gate.exit_code


def print_uplift(report, store: Path) -> None:
    """The uplift table, the flagged skills, where the files are, the exit line."""
    from rich.markup import escape
    from rich.table import Table

    from aeval.run.layout import RunLayout
    from aeval.run.store import RunStore
    from aeval.tasks.studies.uplift import TABLE_COLUMNS, table_rows

    console = make_console()
    table = Table(title=f"aeval uplift {report.uplift_id} ({report.epochs} epoch(s) per arm)",
                  title_justify="left")
    for col in TABLE_COLUMNS:
        table.add_column(col, overflow="fold")
    for row in table_rows(report):
        flag = row["verdict"].endswith(", flagged")
        table.add_row(*(escape(row[c]) if not (flag and c == "verdict")
                        else f"[red]{escape(row[c])}[/]" for c in TABLE_COLUMNS))
    console.print(table)
    for name in report.invalid:
        console.print(f"[magenta]{escape(name)}[/]: invalid (see the with-skill run)")
    for s in report.skills:
        if s.stats.flagged:
            st = s.stats
            console.print(
                f"[red]{escape(f'negative uplift: {s.label()} [{s.runtime}]')}[/]: "
                f"{st.with_skill.passed}/{st.pairs} pass with the skill, "
                f"{st.without_skill.passed}/{st.pairs} without (p = {st.mcnemar_p:.3g})")
    runs = RunStore(store)
    console.print(f"\nuplift.json: {RunLayout(runs.run_dir(report.with_run)).uplift}")
    console.print(f"runs: {runs.run_dir(report.with_run)} (with the skill), "
                  f"{runs.run_dir(report.without_run)} (without)")
    g = report.gate
    console.print(f"exit {g.exit_code}: {escape(g.reason)}")
