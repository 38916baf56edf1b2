"""The commands that evaluate: run (and --resume), sweep, compare, regrade."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aeval.deployments.cli._common import (
    EPILOG,
    EXIT_USAGE,
    add_grader_options,
    add_quiet_verbose,
)
from aeval.deployments.cli.console import (
    inert,
    make_console,
    prefect_env,
    prefect_ready,
    print_summary,
    progress_logging,
    start_prefect,
)
from aeval.deployments.cli.options import Options, resolve
from aeval.exit_codes import ENVIRONMENT, OK

if TYPE_CHECKING:  # imported when a run starts, not by `aeval --help`
    from aeval.artifacts import RunManifest
    from aeval.run.requests import EvalRequest


def prefetch_model_client(model: bool = True) -> None:
    """Import in the background what the run will need later: the model client (litellm)
    while the embedded server starts, then pandas (the per-skill aggregation) while the cases
    run. Otherwise the first model call waits for litellm with every other worker behind it
    on the import lock, and at the end every skill's conclusion waits for pandas the same
    way (20 worker threads in the import lock in the last second of a 20-skill run)."""
    import threading

    def load() -> None:
        try:
            if model:
                from aeval.adapters.llm import warm_up  # sets litellm's offline options

                warm_up()  # and pays its first call's imports before the cases need them
            import pandas  # noqa: F401
        except Exception:  # the call that needs it will say what is wrong
            pass

    threading.Thread(target=load, name="aeval-prefetch", daemon=True).start()


def check_sandbox(mode: str) -> str | None:
    """The sandbox mode to run with, after saying what it gives here; None: refuse (require
    without bubblewrap, a usage error)."""
    from aeval.tasks.case.sandboxing import run_sandbox_status

    status = run_sandbox_status(mode)
    if status.used == "bwrap":
        return mode
    if mode == "require":
        print(f"aeval: --sandbox require: {status.reason}", file=sys.stderr)
        return None
    if mode == "auto":
        print(f"warning: no sandbox: {status.reason}; the cases' commands run as this user, "
              "unsandboxed (--sandbox require refuses this)", file=sys.stderr)
    return mode


def add_min_tested_option(parser: argparse.ArgumentParser) -> None:
    """--min-tested, as `run` and `sweep` have it."""
    parser.add_argument("--min-tested", type=int, metavar="N",
                        help="exit 5 when fewer than N case runs were tested (passed or "
                             "failed); by default (0, or AEVAL_MIN_TESTED) a run that tested "
                             "nothing exits 0 and says `no case was tested`")


def add_insecure_dask_option(parser: argparse.ArgumentParser) -> None:
    """--dask-allow-insecure-tcp, as `run` and `sweep` have it."""
    parser.add_argument("--dask-allow-insecure-tcp", action="store_true",
                        help="accept a plain tcp:// Dask scheduler: anyone who can reach it "
                             "runs code on its workers as their user (deployments/README.md)")


def dask_task_runner(args: argparse.Namespace, concurrency: int) -> Any:
    """The run's task runner (`aeval.tasks._engine.runners.task_runner`) for ``--dask`` and
    ``--dask-allow-insecure-tcp``, warning once when the latter is taken; None after one
    `aeval:` line (a usage error: a bad address, a plain-TCP scheduler without the option,
    prefect-dask missing)."""
    from aeval.tasks._engine import insecure_dask_warning, task_runner

    allow = bool(getattr(args, "dask_allow_insecure_tcp", False))
    try:
        runner = task_runner(concurrency, args.dask, allow)
    except (ImportError, ValueError) as exc:
        print(f"aeval: {exc}", file=sys.stderr)
        return None
    if allow:
        print(insecure_dask_warning(args.dask), file=sys.stderr)
    return runner


def dask_workers_refused(address: str | None, paths: list, store: Path,
                         sandbox: str) -> int | None:
    """Before anything runs on a Dask scheduler (``--dask tcp://...``): every worker can run
    the cases (`aeval.tasks._engine.runners.dask_preflight`), else one line and exit 2 (3 when the
    scheduler cannot be reached). None: go on (threads, a local cluster, or all workers fit)."""
    from aeval.tasks._engine import LOCAL, dask_preflight
    from aeval.tasks.case.sandboxing import run_sandbox_status

    if not address or address == LOCAL:
        return None
    sandboxed = sandbox != "none" and run_sandbox_status(sandbox).used == "bwrap"
    try:
        problem = dask_preflight(address, [str(p) for p in paths], str(store), sandboxed)
    except OSError as exc:
        print(f"aeval: --dask {address}: cannot reach the scheduler: {exc}", file=sys.stderr)
        return ENVIRONMENT
    if problem is None:
        return None
    print(f"aeval: {problem}", file=sys.stderr)
    return EXIT_USAGE


def run_flow(call: Callable[[], Any], run_dir: Path) -> Any:
    """The run's manifest: what the flow returned, or, when the flow call raised after the run
    was published (the Prefect API lost or refused its flow run), the manifest aeval's own
    publish step wrote (``run.json`` in the store, which no sandbox sees). The exit code is
    that gate's, never a Prefect state's. A run that never got published: None when Prefect's
    API refused, reset or timed out on the call that stopped it (the caller exits 3, retry:
    the server was busy, not aeval wrong), else the exception is raised (exit 4)."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from aeval.run.read import read_run

    try:
        # No flow-run heartbeats from the command line: Prefect's heartbeat thread sleeps in
        # whole seconds and the flow's end joins it (0.5 s at the end of every run on average,
        # up to 1 s). The run's own process watches it, a killed run is `aeval run --resume`d;
        # the served deployments (deployments/serve.py) keep Prefect's heartbeats.
        with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            return call()
    except Exception as exc:
        try:
            published = read_run(run_dir).manifest
        except (OSError, ValueError):
            published = None
        if published is None or published.status != "finished" or published.gate is None:
            from aeval.tasks._engine import api_failure

            if (failure := api_failure(exc)) is None:
                raise
            print(f"aeval: the Prefect API failed the run: {failure} (after the client's "
                  f"retries); `aeval run --resume {run_dir.name}` goes on from the cases done "
                  f"(exit {ENVIRONMENT}: retry)", file=sys.stderr)
            return None
        print(f"warning: the run finished and was published, then Prefect failed "
              f"({type(exc).__name__}); the gate below is aeval's own", file=sys.stderr)
        return published


def eval_request(args: argparse.Namespace, opts: Options, sandbox: str,
                 **given: Any) -> EvalRequest:
    """The `EvalRequest` of `aeval run` (and `run --resume`), the one place it is made: the
    resolved options (store, models, retries, output cap, workspaces), the checked
    ``sandbox``, the gate's flags, then ``given`` (what the run is of; a resumed run's
    recorded models and store)."""
    from aeval.run.requests import EvalRequest

    settings = opts.settings
    return EvalRequest(**{
        "store": str(opts.store), "model": opts.model, "grader_model": opts.grader_model,
        "api_base": opts.api_base, "retries": settings.retries,
        "retry_delay_s": settings.retry_delay_s, "output_cap": settings.output_cap,
        "keep_workspaces": opts.keep_workspaces, "sandbox": sandbox,
        "require_tested": args.require_tested, "min_tested": opts.min_tested,
        "baseline": args.baseline, **given})


def resume_run(args: argparse.Namespace) -> int:
    """Rerun an interrupted run: same id, same parameters, only the unfinished cases."""
    from aeval.run.layout import RunLayout
    from aeval.run.read import read_run
    from aeval.run.store import RunStore

    opts = resolve(args)
    settings = opts.settings
    store = RunStore(opts.store)
    try:
        run_dir = store.run_dir(args.resume) if not Path(args.resume).is_dir() else Path(
            args.resume)
        old = read_run(run_dir).manifest
    except (FileNotFoundError, ValueError) as exc:
        print(f"cannot resume {args.resume}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from aeval.flows.evaluate import evaluate, manifest_of
    from aeval.tasks._engine import stop_on_signals, use_global_model_limit

    if (runner := dask_task_runner(args, opts.concurrency)) is None:
        return EXIT_USAGE
    sandbox = check_sandbox(opts.sandbox)
    if sandbox is None:
        return EXIT_USAGE
    refused = dask_workers_refused(args.dask, old.skill_roots, RunLayout(run_dir).store, sandbox)
    if refused is not None:
        return refused
    if problem := endpoint_unreachable(old.api_base, bool(old.model or old.grader_model)):
        print(f"aeval run: {problem}", file=sys.stderr)
        return ENVIRONMENT
    print(f"resuming run {old.run_id} ({len(old.skill_roots)} skill(s))")
    stop_on_signals()  # SIGTERM / SIGINT: cases cancelled, recorded, nothing left
    prefect_ready()  # before any flow: with a scrubbed environment
    if args.dask:  # model calls bounded across the worker processes, not per process
        use_global_model_limit(settings.model_concurrency)
    flow = evaluate.with_options(task_runner=runner)
    request = eval_request(  # the run's own models, runtimes and skills, as run.json has them
        args, opts, sandbox, paths=old.paths, run_id=old.run_id, runtimes=old.runtimes,
        epochs=old.epochs, store=str(RunLayout(run_dir).store), model=old.model,
        grader_model=old.grader_model, api_base=old.api_base, keep_workspaces=False,
        skill_roots=old.skill_roots, base=old.base, head=old.head, resume=True)
    manifest = run_flow(lambda: manifest_of(flow(return_state=True, request=request)), run_dir)
    if manifest is None:
        return ENVIRONMENT
    print_summary(manifest, run_dir)
    return manifest.gate.exit_code


MAX_EPOCHS = 100  # as the request models allow


def run_option_problem(args: argparse.Namespace, opts: Options) -> str | None:
    """The first problem of `run`/`sweep` options that would otherwise surface only later,
    found before anything starts (no server, no import of Prefect): an unknown runtime, an
    agent runtime without a model, a model (or grader model) whose provider key is not set —
    each was one environment error per case after retries (exit 3) — or an epoch count out
    of range (an internal error), a --dask argument that is no way to run. None when there is
    none."""
    import os

    from aeval.runtime.model_keys import config_problem
    from aeval.tasks._engine.dask_address import dask_address_problem

    if not 1 <= args.epochs <= MAX_EPOCHS:
        return f"--epochs {args.epochs}: must be from 1 to {MAX_EPOCHS}"
    if args.concurrency is not None and args.concurrency < 1:
        return f"--concurrency {args.concurrency}: must be at least 1"
    if opts.min_tested < 0:
        return f"--min-tested {opts.min_tested}: must be 0 or more"
    if problem := dask_address_problem(args.dask, getattr(args, "dask_allow_insecure_tcp", False)):
        return problem
    return config_problem(opts.runtimes, opts.model, opts.grader_model, opts.api_base,
                          os.environ)


def endpoint_unreachable(api_base: str | None, models: bool) -> str | None:
    """One reachability probe of the model endpoint a run is pointed at (``--api-base``),
    before anything starts: refused, no such host or TLS failed is one line and exit 3 in
    seconds, instead of every case retrying its model calls against it. None when the run
    calls no model, names no endpoint, or anything answered."""
    if not api_base or not models:
        return None
    from aeval.adapters.llm import endpoint_problem

    return endpoint_problem(api_base)


def compare_base_problem(args: argparse.Namespace) -> str | None:
    """Why ``--compare-base`` cannot be used with these options, or None."""
    if not args.compare_base:
        return None
    if not args.changed_since:
        return "--compare-base needs --changed-since BASE: the base it compares with"
    if args.dask:
        return "--compare-base runs on threads: leave out --dask"
    return None


def fail_worse_problem(args: argparse.Namespace) -> str | None:
    """``--fail-worse-than-base`` without ``--compare-base`` compares nothing."""
    if getattr(args, "fail_worse_than_base", False) and not args.compare_base:
        return "--fail-worse-than-base needs --compare-base: nothing is compared without it"
    return None


def print_head_vs_base(run_dir: Path) -> None:
    """The head against base table of a `--compare-base` run (head_vs_base.json)."""
    from aeval.run.read import read_run
    from aeval.tasks.studies.head_vs_base import markdown_table

    report = read_run(run_dir).head_vs_base()
    if report is None:
        print("head vs base: no comparison was written (see the log)")
        return
    print(markdown_table(report), end="")
    print(f"comparison: {run_dir / 'head_vs_base.json'}")


def add_run_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The `run` subcommand (returned: `init` parses its first run with it)."""
    r = sub.add_parser("run", help="evaluate skills", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Evaluate every skill at or under PATH (a folder with "
                       "SKILL.md, or a marketplace root).")
    r.add_argument("paths", nargs="*", metavar="PATH",
                   help="skill folders or marketplace roots (default: .)")
    r.add_argument("--changed-since", metavar="REF",
                   help="evaluate only the skills changed in `git diff REF...HEAD` of the "
                        "repository at PATH")
    r.add_argument("--head", default="HEAD", help="head ref for --changed-since (default HEAD;"
                                                  " the working tree must be at it)")
    r.add_argument("--compare-base", action="store_true",
                   help="with --changed-since: also run each changed skill as it was at the "
                        "merge base on the same cases, and compare head and base case by case "
                        "with a comparative grader asked in both orders (head_vs_base.json; "
                        "needs a grader model for the outcome; the base runs first, and a "
                        "case's max_vs_base budgets hold the head to the base's figures)")
    r.add_argument("--fail-worse-than-base", action="store_true",
                   help="with --compare-base: a skill worse than its base (the base won more "
                        "case runs, or the head costs over 1.2x) fails the gate (exit 1)")
    r.add_argument("--post", action="store_true",
                   help="post the results on the merge or pull request: GitLab "
                        "(AEVAL_GITLAB_TOKEN; MR from CI variables or --mr/--project/"
                        "--gitlab-url), or GitHub inside Actions (AEVAL_GITHUB_TOKEN; the pull "
                        "request from the event)")
    r.add_argument("--mr", type=int, metavar="IID", help="merge request IID for --post")
    r.add_argument("--project", metavar="ID", help="GitLab project id or path for --post")
    r.add_argument("--gitlab-url", metavar="URL", help="GitLab URL for --post")
    r.add_argument("--runtime", action="append", metavar="NAME",
                   help="runtime to use (repeatable); default: builtin with a model, else "
                        "literal")
    r.add_argument("--model", help="executor model (litellm string), or AEVAL_MODEL")
    add_grader_options(r)
    r.add_argument("--epochs", type=int, default=1, help="runs of each case (default 1)")
    r.add_argument("--concurrency", type=int, help="case chains at once (default 4)")
    r.add_argument("--dask", metavar="ADDRESS|local",
                   help="run the tasks on Dask: `local` (a temporary local cluster, mutual "
                        "TLS on loopback) or a scheduler address tls://HOST:PORT, secured by "
                        "Dask's TLS config (pip install 'aeval-skills[dask]')")
    add_insecure_dask_option(r)
    r.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    r.add_argument("--resume", metavar="RUN_ID",
                   help="finish an interrupted run: only cases without grading.json run")
    r.add_argument("--baseline", metavar="RUN_ID|DIR",
                   help="compare with this run in regression.json (default: the store's "
                        "last-known-good baselines, refreshed by `aeval sweep`)")
    r.add_argument("--keep-workspaces", action="store_true",
                   help="keep each attempt's workspace for debugging")
    r.add_argument("--require-tested", action="store_true",
                   help="exit 2 when a case is untested (nothing runnable for its runtime: no "
                        "steps under literal, no self-contained doc block, a missing host "
                        "tool); by default untested cases are a warning, never a pass")
    add_min_tested_option(r)
    r.add_argument("--sandbox", choices=("auto", "require", "none"),
                   help="bubblewrap around every process a case starts: auto (default; "
                        "without bubblewrap, warn and run unsandboxed), require (exit 2 "
                        "without it), none [AEVAL_SANDBOX]")
    add_quiet_verbose(r)
    r.set_defaults(func=cmd_run)
    return r


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume:
        from aeval.tasks._engine.dask_address import dask_address_problem

        if problem := dask_address_problem(args.dask, args.dask_allow_insecure_tcp):
            print(f"aeval run: {problem}", file=sys.stderr)
            return EXIT_USAGE
        prefect_env(args.verbose)
        progress_logging(args.quiet)
        start_prefect()
        return resume_run(args)
    args.paths = args.paths or ["."]
    for p in args.paths:
        if not Path(p).exists():
            print(f"{p}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
    opts = resolve(args)
    if problem := run_option_problem(args, opts) or compare_base_problem(args) \
            or fail_worse_problem(args):
        print(f"aeval run: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if problem := endpoint_unreachable(opts.api_base, bool(opts.model or opts.grader_model)):
        print(f"aeval run: {problem}", file=sys.stderr)
        return ENVIRONMENT
    from aeval.skill.skill_md import discover

    roots: list[Path] = []
    if not args.changed_since:  # a folder without a skill is refused before anything starts
        roots, nothing = discover(args.paths)
        if nothing:
            print(nothing, file=sys.stderr)
            return EXIT_USAGE
    # what can refuse or end the run on its own does so before anything starts: the sandbox
    # it requires, the change it is asked about (a bad ref; no skill changed)
    sandbox = check_sandbox(opts.sandbox)
    if sandbox is None:
        return EXIT_USAGE
    changes = None
    if args.changed_since:
        from aeval.adapters.git import GitError, changed_skills

        try:
            changes = changed_skills(Path(args.paths[0]), args.changed_since, args.head)
        except GitError as exc:
            print(exc, file=sys.stderr)
            return EXIT_USAGE
        if not changes.skills:  # a change that touches no skill: nothing to start either
            for note in changes.notes():
                print(note)
            print(f"no skill changed since {args.changed_since}: nothing to evaluate")
            return OK
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    start_prefect()  # the embedded Prefect server boots while the flows are imported

    from aeval.run.store import RunStore, new_run_id

    settings = opts.settings
    model, runtimes = opts.model, opts.runtimes
    if not args.runtime:  # folded to the terminal like the rest (never wrapped when piped)
        make_console().print(inert(
            f"runtime: {runtimes[0]} "
            + (f"(model {model})" if model else "(no model configured: running the cases' "
               "`steps` verbatim; pass --model or set AEVAL_MODEL for an agent)")),
            markup=False, highlight=False)
    base = head = None
    if changes is not None:
        base, head = changes.base, changes.head
        for note in changes.notes():
            print(note)
        here = Path(args.paths[0]).resolve()
        shown = [str(s.relative_to(here)) if s.is_relative_to(here) else str(s)
                 for s in changes.skills]
        print(f"{len(changes.skills)} changed skill(s): {', '.join(shown)}")
        roots = changes.skills
    store = opts.store
    run_id = new_run_id()

    from aeval.flows.evaluate import evaluate, manifest_of
    from aeval.tasks._engine import stop_on_signals, use_global_model_limit

    if (runner := dask_task_runner(args, opts.concurrency)) is None:
        return EXIT_USAGE
    if (refused := dask_workers_refused(args.dask, roots, store, sandbox)) is not None:
        return refused
    # litellm takes seconds to import, pandas one: overlap the server start and the cases
    prefetch_model_client(bool(model or opts.named_grader))
    stop_on_signals()  # SIGTERM / SIGINT: cases cancelled, recorded, nothing left
    prefect_ready()  # before any flow: with a scrubbed environment
    if args.dask:  # model calls bounded across the worker processes, not per process
        use_global_model_limit(settings.model_concurrency)
    flow = evaluate.with_options(task_runner=runner)
    request = eval_request(
        args, opts, sandbox, paths=[str(p) for p in args.paths], run_id=run_id,
        runtimes=runtimes, epochs=args.epochs, skill_roots=[str(r) for r in roots], base=base,
        head=head, post=args.post, mr_iid=args.mr, project_id=args.project,
        gitlab_url=args.gitlab_url, fail_worse_than_base=args.fail_worse_than_base)
    if args.compare_base:
        from aeval.flows.head_vs_base import head_vs_base

        def call() -> RunManifest:
            return manifest_of(head_vs_base(return_state=True, request=request,
                                            concurrency=opts.concurrency))
    else:
        def call() -> RunManifest:
            return manifest_of(flow(return_state=True, request=request))
    manifest = run_flow(call, RunStore(store).run_dir(run_id))
    if manifest is None:
        return ENVIRONMENT
    if args.compare_base:  # before the summary, whose last line is the gate
        print_head_vs_base(RunStore(store).run_dir(run_id))
    print_summary(manifest, RunStore(store).run_dir(run_id))
    if manifest.delivery:
        print(f"post: {manifest.delivery}")
        if manifest.delivery.startswith("failed") and manifest.gate.exit_code == OK:
            return ENVIRONMENT  # the skills passed, the request did not get the report: retry
    return manifest.gate.exit_code


def add_sweep_parser(sub: argparse._SubParsersAction) -> None:
    """The `sweep` subcommand."""
    sw = sub.add_parser("sweep", help="evaluate a whole marketplace and refresh baselines",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="The nightly sweep: every skill, --epochs runs of each "
                        "case; passing cases become the last-known-good baselines that "
                        "regression.json compares against. A case run whose fingerprint (skill "
                        "files, case, runtime and its version, models, epoch, aeval version) "
                        "matches its last pass or fail keeps that verdict without running "
                        "(.aeval/verdicts.json); --no-skip runs everything.")
    sw.add_argument("marketplace", nargs="?", default=".", metavar="MARKETPLACE",
                    help="marketplace root (default: .)")
    sw.add_argument("--epochs", type=int, default=3, help="runs of each case (default 3)")
    sw.add_argument("--runtime", action="append", metavar="NAME",
                    help="runtime to use (repeatable); default: builtin with a model, else "
                         "literal")
    sw.add_argument("--model", help="executor model (litellm string), or AEVAL_MODEL")
    add_grader_options(sw)
    sw.add_argument("--concurrency", type=int, help="case chains at once (default 4)")
    sw.add_argument("--dask", metavar="ADDRESS|local",
                    help="run the tasks on Dask, as `aeval run --dask` does")
    add_insecure_dask_option(sw)
    sw.add_argument("--no-skip", action="store_true",
                    help="run every case, also those unchanged since their last verdict")
    add_min_tested_option(sw)
    sw.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    sw.add_argument("--resume", metavar="RUN_ID",
                    help="finish an interrupted sweep: only cases without grading.json run, "
                         "then the baselines refresh (its marketplace, epochs, runtimes and "
                         "models as it had them); its flow runs end as it does")
    add_quiet_verbose(sw)
    sw.set_defaults(func=cmd_sweep)


def resumed_sweep(args: argparse.Namespace) -> RunManifest | None:
    """`aeval sweep --resume RUN`: the run's manifest, its marketplace, epochs, runtimes and
    models set on ``args`` as the sweep had them; None (said why) when there is no such run."""
    from aeval.run.read import read_run
    from aeval.run.store import RunStore

    store = resolve(args).store
    try:
        run_dir = Path(args.resume) if Path(args.resume).is_dir() else RunStore(
            store).run_dir(args.resume)
        old = read_run(run_dir).manifest
    except (FileNotFoundError, ValueError) as exc:
        print(f"cannot resume {args.resume}: {exc}", file=sys.stderr)
        return None
    if len(old.paths) != 1 or old.base:
        print(f"cannot resume {old.run_id} as a sweep: it is not a sweep's run (`aeval run "
              f"--resume {old.run_id}`)", file=sys.stderr)
        return None
    args.marketplace, args.epochs, args.runtime = old.paths[0], old.epochs, old.runtimes
    args.model, args.grader_model, args.api_base = old.model, old.grader_model, old.api_base
    return old


def cmd_sweep(args: argparse.Namespace) -> int:
    resumed = resumed_sweep(args) if args.resume else None
    if args.resume and resumed is None:
        return EXIT_USAGE
    if not Path(args.marketplace).is_dir():
        print(f"{args.marketplace}: no such folder", file=sys.stderr)
        return EXIT_USAGE
    opts = resolve(args)
    if problem := run_option_problem(args, opts):
        print(f"aeval sweep: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if problem := endpoint_unreachable(opts.api_base, bool(opts.model or opts.grader_model)):
        print(f"aeval sweep: {problem}", file=sys.stderr)
        return ENVIRONMENT
    if not resumed:  # a marketplace without a skill is refused before anything starts
        from aeval.skill.skill_md import discover

        if (nothing := discover([args.marketplace])[1]) is not None:
            print(nothing, file=sys.stderr)
            return EXIT_USAGE
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    start_prefect()  # the embedded Prefect server boots while the flows are imported

    from aeval.flows.sweep import sweep
    from aeval.run.requests import SweepRequest
    from aeval.run.store import RunStore, new_run_id

    settings = opts.settings
    store = opts.store
    run_id = resumed.run_id if resumed else new_run_id()
    if resumed:
        print(f"resuming sweep {run_id} ({len(resumed.skill_roots)} skill(s))")
    from aeval.flows.evaluate import manifest_of
    from aeval.tasks._engine import stop_on_signals, use_global_model_limit

    if dask_task_runner(args, opts.concurrency) is None:
        return EXIT_USAGE  # a usage error now, not in the flow
    # the sweep's evaluate runs take the default --sandbox auto
    if (refused := dask_workers_refused(args.dask, [args.marketplace], store,
                                        "auto")) is not None:
        return refused
    stop_on_signals()  # SIGTERM / SIGINT: cases cancelled, recorded, nothing left
    prefect_ready()
    if args.dask:  # model calls bounded across the worker processes, not per process
        use_global_model_limit(settings.model_concurrency)
    request = SweepRequest(
        marketplace=str(Path(args.marketplace).resolve()), epochs=args.epochs,
        concurrency=opts.concurrency, dask=args.dask,
        dask_allow_insecure_tcp=args.dask_allow_insecure_tcp,
        skip_unchanged=not args.no_skip, min_tested=opts.min_tested,
        runtimes=opts.runtimes, model=opts.model, grader_model=opts.grader_model,
        api_base=opts.api_base, store=str(store), run_id=run_id, resume=bool(resumed),
        retries=settings.retries, retry_delay_s=settings.retry_delay_s)
    manifest = run_flow(lambda: manifest_of(sweep(return_state=True, request=request)),
                        RunStore(store).run_dir(run_id))
    if manifest is None:
        return ENVIRONMENT
    print(f"baselines refreshed: {store / 'baselines.json'}")
    print_summary(manifest, RunStore(store).run_dir(run_id))  # the gate: the last line
    return manifest.gate.exit_code


def add_compare_parser(sub: argparse._SubParsersAction) -> None:
    """The `compare` subcommand."""
    c = sub.add_parser("compare", help="run the same skills through several runtimes/models",
                       description="One evaluate run per runtime (x model), then one table: "
                       "elapsed and executor minutes, assertions passed/total, causal share, "
                       "self-corrections, protocol fidelity (– without a grader), requests, "
                       "tokens in and cached (compare.json, compare.md). A row whose runtime "
                       "refused the agent's tool calls is flagged: it measured the agent, "
                       "not the skill. Exits with the worst gate of its runs, in aeval run's "
                       "order: 1 a case failed in any row, 2, 4, 3, else 0.")
    c.add_argument("paths", nargs="+", metavar="PATH",
                   help="skill folders or marketplace roots")
    c.add_argument("--runtime", action="append", metavar="NAME[=MODEL]",
                   help="repeatable (default: builtin); NAME=MODEL gives that runtime its own "
                        "model string, e.g. claude-code=claude-sonnet-4-5 (offline: the "
                        "scripted model server picks each runtime's script by it)")
    c.add_argument("--model", action="append", help="repeatable: one row per model")
    add_grader_options(c)
    c.add_argument("--epochs", type=int, default=1, help="runs of each case (default 1)")
    c.add_argument("--concurrency", type=int, help="case chains at once (default 4)")
    c.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    add_quiet_verbose(c)
    c.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from aeval.capabilities import NO_MODEL_RUNTIMES
    from aeval.skill.skill_md import discover

    roots, nothing = discover(args.paths)
    if nothing:
        print(nothing, file=sys.stderr)
        return EXIT_USAGE
    opts = resolve(args, default_runtimes=["builtin"])
    variants = []
    for spec in opts.runtimes:
        rt, _, own_model = spec.partition("=")
        for m in ([None] if rt in NO_MODEL_RUNTIMES else [own_model] if own_model
                  else opts.models):
            if rt not in NO_MODEL_RUNTIMES and not m:
                print(f"runtime {rt} needs --model", file=sys.stderr)
                return EXIT_USAGE
            variants.append({"runtime": rt, "model": m})
    if len(variants) < 2:
        print("compare needs at least two runtimes or models", file=sys.stderr)
        return EXIT_USAGE
    import os

    from aeval.runtime.model_keys import config_problem

    for v in variants:  # each row's grader is the one named, else the row's model
        if problem := config_problem([v["runtime"]], v["model"], opts.named_grader,
                                     opts.api_base, os.environ):
            print(f"aeval compare: {problem}", file=sys.stderr)
            return EXIT_USAGE
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    start_prefect()  # the embedded Prefect server boots while the flows are imported
    from aeval.flows.compare import compare
    from aeval.run.store import new_run_id
    from aeval.tasks.studies.compare import render_compare

    store = opts.store
    compare_id = new_run_id()
    # as `run` does: litellm loads while the server starts, not inside the first case's wall
    prefetch_model_client(any(v["runtime"] == "builtin" for v in variants)
                          or bool(opts.named_grader))
    from aeval.tasks._engine import stop_on_signals

    stop_on_signals()  # SIGTERM / SIGINT: the flow runs Cancelled, nothing left running
    prefect_ready()
    report = compare(paths=[str(p) for p in args.paths], variants=variants, compare_id=compare_id,
                     concurrency=opts.concurrency, store=str(store),
                     grader_model=opts.named_grader, api_base=opts.api_base,
                     epochs=args.epochs,
                     skill_roots=[str(r) for r in roots])
    print(render_compare(report))
    print(f"report: {store / 'compare' / compare_id / 'compare.json'}")
    return report.gate.exit_code


REGRADE_EXITS = """exit codes of `aeval regrade` (first match wins):
  2  a usage error: RUN is not a run of the store
  4  internal error (aeval itself failed)
  3  a grader could not grade a case epoch the original grader judged (its provider
     failed, or its answers stayed invalid): the report is written, over fewer items; retry
  0  otherwise
"""


def add_regrade_parser(sub: argparse._SubParsersAction) -> None:
    """The `regrade` subcommand."""
    rg = sub.add_parser("regrade", help="re-grade a run's transcripts with other graders: "
                                        "agreement and kappa",
                        description="Replay every case and epoch of RUN (events, outputs, skill "
                        "edits) with its recorded assertions, grade it with each --grader-model, "
                        "and report every grader's verdicts beside the original's: raw "
                        "agreement, Cohen's kappa per pair, Fleiss' kappa across all, causal "
                        "share per grader, and the assertions they disagree on "
                        "(regrade-<id>.json in RUN's folder).", epilog=REGRADE_EXITS,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    rg.add_argument("run", metavar="RUN", help="run id, run folder, or latest")
    rg.add_argument("--grader-model", required=True, action="append", metavar="MODEL",
                    help="a grader model to re-grade with (litellm string); repeatable")
    rg.add_argument("--api-base", help="model API base URL, or AEVAL_API_BASE")
    rg.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    add_quiet_verbose(rg)
    rg.set_defaults(func=cmd_regrade)


def cmd_regrade(args: argparse.Namespace) -> int:
    from aeval.run.store import RunStore
    from aeval.runtime.model_keys import missing_client

    if problem := missing_client(None, args.grader_model[0]):
        print(f"aeval regrade: {problem}", file=sys.stderr)
        return EXIT_USAGE
    opts = resolve(args)
    store = opts.store
    try:
        source = RunStore(store).resolve(args.run)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    start_prefect()  # the embedded Prefect server boots while the flows are imported
    from aeval.flows.regrade import regrade
    from aeval.tasks.studies.compare import regrade_exit, render_regrade

    prefect_ready()
    report = regrade(run=str(source), grader_models=args.grader_model, store=str(store),
                     api_base=opts.api_base)
    print(render_regrade(report))
    print(f"regraded runs: {', '.join(report.regrade_runs)}")
    print(f"report: {source / f'regrade-{report.regrade_id}.json'}")
    code, reason = regrade_exit(report)
    print(f"exit {code}: {reason}")
    return code
