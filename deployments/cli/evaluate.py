"""The commands that evaluate: run (and --resume), sweep, compare, regrade."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aeval.deployments.cli._common import EXIT_USAGE
from aeval.deployments.cli.console import (
    prefect_env,
    prefect_ready,
    print_summary,
    progress_logging,
    start_prefect,
)

from aeval.exit_codes import ENVIRONMENT


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
        return 3
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

    from aeval.artifacts import RunManifest
    from aeval.run.store import read_model

    try:
        # No flow-run heartbeats from the command line: Prefect's heartbeat thread sleeps in
        # whole seconds and the flow's end joins it (0.5 s at the end of every run on average,
        # up to 1 s). The run's own process watches it, a killed run is `aeval run --resume`d;
        # the served deployments (deployments/serve.py) keep Prefect's heartbeats.
        with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            return call()
    except Exception as exc:
        try:
            published = read_model(run_dir / "run.json", RunManifest)
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


def resume_run(args: argparse.Namespace) -> int:
    """Rerun an interrupted run: same id, same parameters, only the unfinished cases."""
    from aeval.artifacts import RunManifest
    from aeval.run.layout import RunLayout
    from aeval.run.requests import EvalRequest
    from aeval.run.store import RunStore, read_model
    from aeval.settings import Settings

    settings = Settings()
    store = RunStore(Path(args.out or settings.home))
    try:
        run_dir = store.run_dir(args.resume) if not Path(args.resume).is_dir() else Path(
            args.resume)
        old = read_model(run_dir / "run.json", RunManifest)
    except (FileNotFoundError, ValueError) as exc:
        print(f"cannot resume {args.resume}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from aeval.flows.evaluate import evaluate, manifest_of
    from aeval.tasks._engine import use_global_model_limit

    if (runner := dask_task_runner(args, args.concurrency or settings.concurrency)) is None:
        return EXIT_USAGE
    sandbox = check_sandbox(args.sandbox or settings.sandbox)
    if sandbox is None:
        return EXIT_USAGE
    refused = dask_workers_refused(args.dask, old.skill_roots, RunLayout(run_dir).store, sandbox)
    if refused is not None:
        return refused
    print(f"resuming run {old.run_id} ({len(old.skill_roots)} skill(s))")
    prefect_ready()  # before any flow: with a scrubbed environment
    if args.dask:  # model calls bounded across the worker processes, not per process
        use_global_model_limit(settings.model_concurrency)
    flow = evaluate.with_options(task_runner=runner)
    request = EvalRequest(
        paths=old.paths, run_id=old.run_id, runtimes=old.runtimes, epochs=old.epochs,
        store=str(RunLayout(run_dir).store), model=old.model, grader_model=old.grader_model,
        api_base=old.api_base, retries=settings.retries, retry_delay_s=settings.retry_delay_s,
        output_cap=settings.output_cap, skill_roots=old.skill_roots, base=old.base,
        head=old.head, resume=True, baseline=args.baseline, sandbox=sandbox,
        require_tested=args.require_tested)
    manifest = run_flow(lambda: manifest_of(flow(return_state=True, request=request)), run_dir)
    if manifest is None:
        return ENVIRONMENT
    print_summary(manifest, run_dir)
    return manifest.gate.exit_code


MAX_EPOCHS = 100  # as the request models allow


def run_option_problem(args: argparse.Namespace) -> str | None:
    """The first problem of `run`/`sweep` options that would otherwise surface only later,
    found before anything starts (no server, no import of Prefect): an unknown runtime, an
    agent runtime without a model, a model (or grader model) whose provider key is not set —
    each was one environment error per case after retries (exit 3) — or an epoch count out
    of range (an internal error). None when there is none."""
    import os

    from aeval.isolation.model_keys import config_problem
    from aeval.settings import Settings

    if not 1 <= args.epochs <= MAX_EPOCHS:
        return f"--epochs {args.epochs}: must be from 1 to {MAX_EPOCHS}"
    if args.concurrency is not None and args.concurrency < 1:
        return f"--concurrency {args.concurrency}: must be at least 1"
    settings = Settings()
    model = args.model or settings.model
    runtimes = args.runtime or (["builtin"] if model else ["literal"])
    grader = None if args.no_grader else (args.grader_model or settings.grader_model or model)
    return config_problem(runtimes, model, grader, args.api_base or settings.api_base,
                          os.environ)


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume:
        prefect_env(args.verbose)
        progress_logging(args.quiet)
        start_prefect()
        return resume_run(args)
    args.paths = args.paths or ["."]
    for p in args.paths:
        if not Path(p).exists():
            print(f"{p}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
    if problem := run_option_problem(args):
        print(f"aeval run: {problem}", file=sys.stderr)
        return EXIT_USAGE
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    start_prefect()  # the embedded Prefect server boots while the flows are imported

    from aeval.run.requests import EvalRequest
    from aeval.run.store import RunStore, new_run_id
    from aeval.settings import Settings
    from aeval.skill.skill_md import discover

    settings = Settings()
    sandbox = check_sandbox(args.sandbox or settings.sandbox)
    if sandbox is None:
        return EXIT_USAGE
    model = args.model or settings.model
    runtimes = args.runtime or (["builtin"] if model else ["literal"])
    if not args.runtime:
        print(f"runtime: {runtimes[0]} "
              + (f"(model {model})" if model else "(no model configured: running the cases' "
                 "`steps` verbatim; pass --model or set AEVAL_MODEL for an agent)"))
    base = head = None
    if args.changed_since:
        from aeval.adapters.git import GitError, changed_skills

        try:
            changes = changed_skills(Path(args.paths[0]), args.changed_since, args.head)
        except GitError as exc:
            print(exc, file=sys.stderr)
            return EXIT_USAGE
        base, head = changes.base, changes.head
        for note in changes.notes():
            print(note)
        if not changes.skills:
            print(f"no skill changed since {args.changed_since}: nothing to evaluate")
            return 0
        here = Path(args.paths[0]).resolve()
        shown = [str(s.relative_to(here)) if s.is_relative_to(here) else str(s)
                 for s in changes.skills]
        print(f"{len(changes.skills)} changed skill(s): {', '.join(shown)}")
        roots = changes.skills
    else:
        roots, nothing = discover(args.paths)
        if nothing:
            print(nothing, file=sys.stderr)
            return EXIT_USAGE
    store = Path(args.out or settings.home)
    run_id = new_run_id()

    from aeval.flows.evaluate import evaluate, manifest_of
    from aeval.tasks._engine import use_global_model_limit

    if (runner := dask_task_runner(args, args.concurrency or settings.concurrency)) is None:
        return EXIT_USAGE
    if (refused := dask_workers_refused(args.dask, roots, store, sandbox)) is not None:
        return refused
    # litellm takes seconds to import, pandas one: overlap the server start and the cases
    prefetch_model_client(bool(model or args.grader_model or settings.grader_model))
    prefect_ready()  # before any flow: with a scrubbed environment
    if args.dask:  # model calls bounded across the worker processes, not per process
        use_global_model_limit(settings.model_concurrency)
    flow = evaluate.with_options(task_runner=runner)
    request = EvalRequest(
        paths=[str(p) for p in args.paths], run_id=run_id, runtimes=runtimes,
        epochs=args.epochs, store=str(store), model=model,
        grader_model=None if args.no_grader else (
            args.grader_model or settings.grader_model or model),
        api_base=args.api_base or settings.api_base, retries=settings.retries,
        retry_delay_s=settings.retry_delay_s,
        keep_workspaces=args.keep_workspaces or settings.keep_workspaces, sandbox=sandbox,
        require_tested=args.require_tested,
        output_cap=settings.output_cap, skill_roots=[str(r) for r in roots], base=base,
        head=head, post=args.post, mr_iid=args.mr, project_id=args.project,
        gitlab_url=args.gitlab_url, baseline=args.baseline)
    manifest = run_flow(lambda: manifest_of(flow(return_state=True, request=request)),
                        RunStore(store).run_dir(run_id))
    if manifest is None:
        return ENVIRONMENT
    print_summary(manifest, RunStore(store).run_dir(run_id))
    if manifest.delivery:
        print(f"gitlab: {manifest.delivery}")
        if manifest.delivery.startswith("failed") and manifest.gate.exit_code == 0:
            return 3  # the skills passed, but the MR did not get the report: retry the job
    return manifest.gate.exit_code


def cmd_sweep(args: argparse.Namespace) -> int:
    if not Path(args.marketplace).is_dir():
        print(f"{args.marketplace}: no such folder", file=sys.stderr)
        return EXIT_USAGE
    if problem := run_option_problem(args):
        print(f"aeval sweep: {problem}", file=sys.stderr)
        return EXIT_USAGE
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    start_prefect()  # the embedded Prefect server boots while the flows are imported

    from aeval.flows.sweep import sweep

    from aeval.run.requests import SweepRequest
    from aeval.run.store import RunStore, new_run_id
    from aeval.settings import Settings

    settings = Settings()
    model = args.model or settings.model
    store = Path(args.out or settings.home)
    run_id = new_run_id()
    from aeval.flows.evaluate import manifest_of
    from aeval.tasks._engine import use_global_model_limit

    if dask_task_runner(args, args.concurrency or settings.concurrency) is None:
        return EXIT_USAGE  # a usage error now, not in the flow
    # the sweep's evaluate runs take the default --sandbox auto
    if (refused := dask_workers_refused(args.dask, [args.marketplace], store,
                                        "auto")) is not None:
        return refused
    prefect_ready()
    if args.dask:  # model calls bounded across the worker processes, not per process
        use_global_model_limit(settings.model_concurrency)
    request = SweepRequest(
        marketplace=str(Path(args.marketplace).resolve()), epochs=args.epochs,
        concurrency=args.concurrency or settings.concurrency, dask=args.dask,
        dask_allow_insecure_tcp=args.dask_allow_insecure_tcp,
        skip_unchanged=not args.no_skip,
        runtimes=args.runtime or (["builtin"] if model else ["literal"]), model=model,
        grader_model=None if args.no_grader else (
            args.grader_model or settings.grader_model or model),
        api_base=args.api_base or settings.api_base, store=str(store), run_id=run_id)
    manifest = run_flow(lambda: manifest_of(sweep(return_state=True, request=request)),
                        RunStore(store).run_dir(run_id))
    if manifest is None:
        return ENVIRONMENT
    print_summary(manifest, RunStore(store).run_dir(run_id))
    print(f"baselines refreshed: {store / 'baselines.json'}")
    return manifest.gate.exit_code


def cmd_compare(args: argparse.Namespace) -> int:
    from aeval.settings import Settings
    from aeval.skill.skill_md import discover

    roots, nothing = discover(args.paths)
    if nothing:
        print(nothing, file=sys.stderr)
        return EXIT_USAGE
    settings = Settings()
    models = args.model or ([settings.model] if settings.model else [None])
    runtimes = args.runtime or ["builtin"]
    variants = []
    for spec in runtimes:
        rt, _, own_model = spec.partition("=")
        for m in ([None] if rt in ("literal", "replay") else [own_model] if own_model
                  else models):
            if rt not in ("literal", "replay") and not m:
                print(f"runtime {rt} needs --model", file=sys.stderr)
                return EXIT_USAGE
            variants.append({"runtime": rt, "model": m})
    if len(variants) < 2:
        print("compare needs at least two runtimes or models", file=sys.stderr)
        return EXIT_USAGE
    import os

    from aeval.isolation.model_keys import config_problem

    grader = None if args.no_grader else (args.grader_model or settings.grader_model)
    for v in variants:
        if problem := config_problem([v["runtime"]], v["model"], grader,
                                     args.api_base or settings.api_base, os.environ):
            print(f"aeval compare: {problem}", file=sys.stderr)
            return EXIT_USAGE
    prefect_env(args.verbose)
    progress_logging(args.quiet)
    start_prefect()  # the embedded Prefect server boots while the flows are imported
    from aeval.flows.compare import compare
    from aeval.tasks.studies.compare import render_compare

    from aeval.run.store import new_run_id

    store = Path(args.out or settings.home)
    compare_id = new_run_id()
    # as `run` does: litellm loads while the server starts, not inside the first case's wall
    prefetch_model_client(any(v["runtime"] == "builtin" for v in variants)
                          or bool(args.grader_model or settings.grader_model))
    prefect_ready()
    report = compare(paths=[str(p) for p in args.paths], variants=variants, compare_id=compare_id,
                     concurrency=args.concurrency or settings.concurrency,
                     store=str(store), grader_model=None if args.no_grader else (
                         args.grader_model or settings.grader_model),
                     api_base=args.api_base or settings.api_base, epochs=args.epochs,
                     skill_roots=[str(r) for r in roots])
    print(render_compare(report))
    print(f"report: {store / 'compare' / compare_id / 'compare.json'}")
    return report.gate.exit_code


def cmd_regrade(args: argparse.Namespace) -> int:
    from aeval.run.store import RunStore
    from aeval.settings import Settings

    settings = Settings()
    store = Path(args.out or settings.home)
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
                     api_base=args.api_base or settings.api_base)
    print(render_regrade(report))
    print(f"regraded runs: {', '.join(report.regrade_runs)}")
    print(f"report: {source / f'regrade-{report.regrade_id}.json'}")
    code, reason = regrade_exit(report)
    print(f"exit {code}: {reason}")
    return code
