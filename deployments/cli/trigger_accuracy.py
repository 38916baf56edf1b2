"""`aeval trigger-accuracy`: trigger accuracy of skill descriptions among distractor skills.

Exit codes: 0 every trial ran; 2 a usage error or an invalid skill; 3 a trial ended in an
environment error (retry); 4 internal (aeval itself failed, on a trial or in `main`).
Precision and recall are reported, not gated: what is good enough is the skill author's call.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aeval.deployments.cli._common import (
    EXIT_INTERNAL,
    EXIT_USAGE,
    add_quiet_verbose,
    flag_problem,
)
from aeval.deployments.cli.console import (
    prefect_env,
    prefect_ready,
    progress_logging,
    start_prefect,
)
from aeval.deployments.cli.evaluate import check_sandbox, prefetch_model_client
from aeval.deployments.cli.options import resolve
from aeval.exit_codes import ENVIRONMENT, OK

TRIGGERS_EXITS = """exit codes of `aeval trigger-accuracy` (first match wins):
  2  a usage error, or a skill whose SKILL.md / eval.config cannot be loaded
  4  internal error (aeval failed on a trial, or itself)
  3  a trial ended in an environment error (model API, timeout) after retries
  0  otherwise: every trial ran (precision and recall are reported, not gated)
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `triggers` subcommand."""
    t = sub.add_parser(
        "trigger-accuracy", aliases=["triggers"],  # its name before 0.2: kept for scripts
        help="does the agent load the skill among distractors? (precision, recall)",
        description="For each skill and each trigger prompt (eval.config `triggers`, or one "
        "should-prompt from the description), a fresh workspace with the skill installed among "
        "distractor skills; the runtime runs the prompt and aeval records, from the events, "
        "which skills it loaded. Precision and recall per skill x runtime go to "
        "<out>/triggers/<run-id>/triggers.json and report.html; precision and recall are "
        "reported, not gated.", epilog=TRIGGERS_EXITS,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("paths", nargs="+", metavar="PATH", help="skill folders or marketplace roots")
    t.add_argument("--runtime", action="append", metavar="NAME",
                   help="agent runtime to use (repeatable; default builtin)")
    t.add_argument("--model", help="executor model (litellm string), or AEVAL_MODEL")
    t.add_argument("--api-base", help="model API base URL, or AEVAL_API_BASE")
    t.add_argument("--epochs", type=int, default=1, help="runs of each prompt (default 1)")
    t.add_argument("--distractors", metavar="DIR",
                   help="install the skills of DIR as distractors (default: the other skills "
                        "of the marketplace, topped up with aeval's bundled set below three)")
    t.add_argument("--max-turns", type=int, default=3,
                   help="model turns a trial may take before it is stopped (default 3)")
    t.add_argument("--concurrency", type=int, help="trials at once (default 4)")
    t.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    t.add_argument("--keep-workspaces", action="store_true",
                   help="keep each trial's workspace for debugging")
    t.add_argument("--sandbox", choices=("auto", "require", "none"),
                   help="bubblewrap around every process a trial starts [AEVAL_SANDBOX]")
    add_quiet_verbose(t)
    t.set_defaults(func=cmd_triggers)


def cmd_triggers(args: argparse.Namespace) -> int:
    for p in [*args.paths, *([args.distractors] if args.distractors else [])]:
        if not Path(p).exists():
            print(f"{p}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
    if args.epochs < 1 or args.max_turns < 1:
        print("--epochs and --max-turns must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    from aeval.capabilities import NO_MODEL_RUNTIMES
    from aeval.run.layout import RunLayout
    from aeval.run.store import new_run_id
    from aeval.skill.skill_md import find_skill_roots

    opts = resolve(args, default_runtimes=["builtin"])
    model, runtimes = opts.model, opts.runtimes
    if not model or any(rt in NO_MODEL_RUNTIMES for rt in runtimes):
        print("aeval trigger-accuracy needs an agent runtime (builtin, claude-code, codex, "
              "opencode) and a model: pass --model or set AEVAL_MODEL", file=sys.stderr)
        return EXIT_USAGE
    from aeval.adapters import RUNTIMES

    if unknown := [r for r in runtimes if r not in RUNTIMES]:
        print(f"aeval trigger-accuracy: --runtime {unknown[0]}: unknown runtime; known: builtin, "
              "claude-code, codex, opencode", file=sys.stderr)
        return EXIT_USAGE
    import os

    from aeval.runtime.model_keys import config_problem

    if problem := config_problem(runtimes, model, None, opts.api_base, os.environ):
        print(f"aeval trigger-accuracy: {problem}", file=sys.stderr)
        return EXIT_USAGE
    roots = [r for p in args.paths for r in find_skill_roots(Path(p))]
    if not roots:
        print(f"no SKILL.md found under {', '.join(args.paths)}", file=sys.stderr)
        return EXIT_USAGE
    if args.distractors and not find_skill_roots(Path(args.distractors)):
        print(f"aeval trigger-accuracy: --distractors {args.distractors}: no SKILL.md found there "
              "(leave it out to use the marketplace's other skills)", file=sys.stderr)
        return EXIT_USAGE
    # the embedded Prefect server boots now, before Prefect is imported: started later, it
    # would swap this process's environment while the model client is imported beside it
    start_prefect()
    sandbox = check_sandbox(opts.sandbox)
    if sandbox is None:
        return EXIT_USAGE
    from pydantic import ValidationError

    from aeval.flows.triggers import triggers
    from aeval.stats.triggers import TriggersRequest
    from aeval.tasks._engine import task_runner
    from aeval.tasks.studies.triggers import INTERNAL

    store = opts.store
    run_id = new_run_id()
    try:
        request = TriggersRequest(
            skill_roots=[str(r) for r in roots], distractors=args.distractors,
            runtimes=runtimes, model=model, api_base=opts.api_base, epochs=args.epochs,
            max_turns=args.max_turns, store=str(store), run_id=run_id, sandbox=sandbox,
            retries=opts.settings.retries, retry_delay_s=opts.settings.retry_delay_s,
            keep_workspaces=args.keep_workspaces)  # the flag only, not AEVAL_KEEP_WORKSPACES
    except ValidationError as exc:
        print(f"aeval trigger-accuracy: {flag_problem(exc)}", file=sys.stderr)
        return EXIT_USAGE
    prefetch_model_client()
    from aeval.tasks._engine import stop_on_signals

    stop_on_signals()  # SIGTERM / SIGINT: the flow runs Cancelled, nothing left running
    prefect_ready()
    flow = triggers.with_options(
        task_runner=task_runner(opts.concurrency))
    report = flow(request)
    print(render_scores(report))
    out = store / "triggers" / run_id
    print(f"report: {RunLayout(out).report}\ntriggers.json: {out / 'triggers.json'}")
    if report.invalid:
        for line in report.invalid:
            print(f"invalid: {line}", file=sys.stderr)
        return EXIT_USAGE
    errors = [t.error or "" for s in report.scores for t in s.trials if t.outcome == "error"]
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if any(e.startswith(INTERNAL) for e in errors):
        return EXIT_INTERNAL  # aeval's own bug, not the environment's
    return ENVIRONMENT if errors else OK


def render_scores(report) -> str:
    """The console table: one line per skill x runtime."""
    def pct(x: float | None) -> str:
        return "  –" if x is None else f"{x:4.0%}"

    lines = [f"{'skill':<28} {'runtime':<12} precision recall  tp fn fp tn err  picked instead"]
    for s in report.scores:
        picks = ", ".join(f"{k} ({v})" for k, v in s.distractor_picks.items()) or "–"
        lines.append(f"{s.skill[:28]:<28} {s.runtime[:12]:<12} {pct(s.precision):>9} "
                     f"{pct(s.recall):>6} {s.tp:>3} {s.fn:>2} {s.fp:>2} {s.tn:>2} {s.errors:>3}"
                     f"  {picks}")
    return "\n".join(lines)
