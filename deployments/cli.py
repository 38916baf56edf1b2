"""The `aeval` command line.

    aeval run PATH...          evaluate skills (folders with SKILL.md) or whole marketplaces
    aeval validate PATH...     check SKILL.md and eval.config without running anything
    aeval schema NAME          print the JSON Schema of an artifact (or --write DIR)
    aeval show RUN             print the summary of a finished run

Exit codes of `run` (first match wins): 1 a case failed (a skill defect); 2 a usage error or
an invalid skill; 3 an environment error (and no skill failure); 0 everything passed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from aeval.hardening import harden_process

EXIT_USAGE = 2
EPILOG = """exit codes of `aeval run` (first match wins):
  1  a case failed: a skill defect (blocks the merge)
  2  a usage error, or a skill whose SKILL.md / eval.config cannot be loaded
  3  an environment error (model API, preflight, missing credential): retry, not a defect
  0  every case passed
"""


def _prefect_env(verbose: bool) -> None:
    """Quiet, offline defaults for the embedded Prefect, set before Prefect is imported."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    if not verbose:
        # The embedded server logs its own shutdown races at ERROR; nothing a user can act on.
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL", "WARNING")
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_TASK_RUNS_LEVEL", "WARNING")


def _console():
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(console.width, 120))
    return console


# ---- validate -------------------------------------------------------------------------------


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


# ---- schema ---------------------------------------------------------------------------------


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


# ---- run ------------------------------------------------------------------------------------


def _progress_logging(quiet: bool) -> None:
    from rich.logging import RichHandler

    logger = logging.getLogger("aeval.progress")
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(RichHandler(show_path=False, show_level=False, markup=False,
                                      log_time_format="%H:%M:%S"))


def _evidence_line(text: str, cap: int = 160) -> str:
    """The most telling line of evidence: the last non-empty one (tracebacks end there)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    last = lines[-1] if len(lines) == 1 else f"{lines[0][:80]} … {lines[-1]}"
    return last if len(last) <= cap else last[: cap - 1] + "…"


def print_summary(manifest, run_dir: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    from aeval.artifacts import Grading
    from aeval.store import read_model

    console = _console()
    table = Table(title=f"aeval run {manifest.run_id}", title_justify="left")
    for col in ("skill", "case", "runtime", "status", "first-attempt", "terminal", "tier"):
        table.add_column(col, no_wrap=True)
    style = {"pass": "green", "fail": "red", "error": "yellow", "invalid": "magenta"}

    def pct(x):
        return "–" if x is None else f"{x:.0%}"

    details = []
    for s in manifest.skills:
        if s.status == "invalid":
            table.add_row(s.name, "–", "–", "[magenta]invalid[/]", "–", "–", "–")
            details += [f"[magenta]{escape(s.name)}[/]: {escape(p)}" for p in s.problems]
            continue
        for c in s.cases:
            status = c.status + (f", {c.ungraded} ungraded" if c.ungraded else "")
            name = c.case_id + (f" #{c.epoch}" if c.epoch is not None else "")
            table.add_row(s.name, name, c.runtime, f"[{style[c.status]}]{status}[/]",
                          f"{pct(c.first_attempt_pass_rate)} ({c.passed}/{c.passed + c.failed})",
                          pct(c.terminal_pass_rate), str(s.tier or "–"))
            if c.status == "pass":
                continue
            head = f"[{style[c.status]}]{escape(s.name)}/{escape(name)} [{c.runtime}][/]"
            grading = run_dir / c.dir / "grading.json"
            if c.status == "error" or not grading.is_file():
                details.append(f"{head}: {escape(c.reason)}")
                continue
            g = read_model(grading, Grading)
            for e in g.expectations:
                if e.status == "failed":
                    details.append(f"{head} {e.id} {escape(e.text)}\n      "
                                   f"{escape(_evidence_line(e.evidence))}")
    console.print(table)
    if details:
        console.print("\nWhat failed, with evidence:")
        for d in details:
            console.print(f"  {d}")
    for s in manifest.skills:
        for w in s.warnings:
            console.print(f"[dim]lint: {escape(w)}[/]")
    g = manifest.gate
    console.print(f"\nartifacts: {run_dir}")
    console.print(f"exit {g.exit_code}: {escape(g.reason)}")


def _resume(args: argparse.Namespace) -> int:
    """Rerun an interrupted run: same id, same parameters, only the unfinished cases."""
    from aeval.artifacts import RunManifest
    from aeval.settings import Settings
    from aeval.store import RunStore, read_model

    settings = Settings()
    store = RunStore(Path(args.out or settings.home))
    try:
        run_dir = store.run_dir(args.resume) if not Path(args.resume).is_dir() else Path(
            args.resume)
        old = read_model(run_dir / "run.json", RunManifest)
    except (FileNotFoundError, ValueError) as exc:
        print(f"cannot resume {args.resume}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from flows.evaluate import evaluate
    from flows.runners import task_runner

    try:
        runner = task_runner(args.concurrency or settings.concurrency, args.dask)
    except (ImportError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    print(f"resuming run {old.run_id} ({len(old.skill_roots)} skill(s))")
    flow = evaluate.with_options(task_runner=runner)
    manifest = flow(
        paths=old.paths, run_id=old.run_id, runtimes=old.runtimes, epochs=old.epochs,
        store=str(run_dir.parent.parent), model=old.model, grader_model=old.grader_model,
        api_base=old.api_base, retries=settings.retries, retry_delay_s=settings.retry_delay_s,
        output_cap=settings.output_cap, skill_roots=old.skill_roots, base=old.base,
        head=old.head, resume=True, baseline=args.baseline)
    print_summary(manifest, run_dir)
    return manifest.gate.exit_code


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume:
        _prefect_env(args.verbose)
        _progress_logging(args.quiet)
        return _resume(args)
    args.paths = args.paths or ["."]
    for p in args.paths:
        if not Path(p).exists():
            print(f"{p}: no such file or folder", file=sys.stderr)
            return EXIT_USAGE
    if args.epochs < 1:
        print("--epochs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    _prefect_env(args.verbose)
    _progress_logging(args.quiet)

    from aeval.settings import Settings
    from aeval.skill import find_skill_roots
    from aeval.store import RunStore, new_run_id

    settings = Settings()
    model = args.model or settings.model
    runtimes = args.runtime or (["builtin"] if model else ["literal"])
    if not args.runtime:
        print(f"runtime: {runtimes[0]} "
              + (f"(model {model})" if model else "(no model configured: running the cases' "
                 "`steps` verbatim; pass --model or set AEVAL_MODEL for an agent)"))
    base = head = None
    if args.changed_since:
        from adapters.git import GitError, changed_skills

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
        roots = [r for p in args.paths for r in find_skill_roots(Path(p))]
    if not roots:
        print(f"no SKILL.md found under {', '.join(args.paths)}", file=sys.stderr)
        return EXIT_USAGE
    store = Path(args.out or settings.home)
    run_id = new_run_id()

    from flows.evaluate import evaluate
    from flows.runners import task_runner

    try:
        runner = task_runner(args.concurrency or settings.concurrency, args.dask)
    except (ImportError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    flow = evaluate.with_options(task_runner=runner)
    manifest = flow(
        paths=[str(p) for p in args.paths], run_id=run_id, runtimes=runtimes,
        epochs=args.epochs, store=str(store), model=model,
        grader_model=None if args.no_grader else (
            args.grader_model or settings.grader_model or model),
        api_base=args.api_base or settings.api_base, retries=settings.retries,
        retry_delay_s=settings.retry_delay_s,
        keep_workspaces=args.keep_workspaces or settings.keep_workspaces,
        output_cap=settings.output_cap, skill_roots=[str(r) for r in roots], base=base,
        head=head, post=args.post, mr_iid=args.mr, project_id=args.project,
        gitlab_url=args.gitlab_url, baseline=args.baseline)
    print_summary(manifest, RunStore(store).run_dir(run_id))
    if manifest.delivery:
        print(f"gitlab: {manifest.delivery}")
        if manifest.delivery.startswith("failed") and manifest.gate.exit_code == 0:
            return 3  # the skills passed, but the MR did not get the report: retry the job
    return manifest.gate.exit_code


# ---- sweep ----------------------------------------------------------------------------------


def cmd_sweep(args: argparse.Namespace) -> int:
    if not Path(args.marketplace).is_dir():
        print(f"{args.marketplace}: no such folder", file=sys.stderr)
        return EXIT_USAGE
    _prefect_env(args.verbose)
    _progress_logging(args.quiet)

    from prefect.task_runners import ThreadPoolTaskRunner

    from aeval.settings import Settings
    from aeval.store import RunStore, new_run_id
    from flows.sweep import sweep

    settings = Settings()
    model = args.model or settings.model
    store = Path(args.out or settings.home)
    run_id = new_run_id()
    flow = sweep.with_options(
        task_runner=ThreadPoolTaskRunner(max_workers=args.concurrency or settings.concurrency))
    manifest = flow(marketplace=str(args.marketplace), epochs=args.epochs,
                    runtimes=args.runtime or (["builtin"] if model else ["literal"]),
                    model=model, grader_model=None if args.no_grader else (
                        args.grader_model or settings.grader_model or model),
                    api_base=args.api_base or settings.api_base, store=str(store),
                    run_id=run_id)
    print_summary(manifest, RunStore(store).run_dir(run_id))
    print(f"baselines refreshed: {store / 'baselines.json'}")
    return manifest.gate.exit_code


# ---- compare / regrade ----------------------------------------------------------------------


def cmd_compare(args: argparse.Namespace) -> int:
    from aeval.settings import Settings
    from aeval.skill import find_skill_roots

    roots = [r for p in args.paths for r in find_skill_roots(Path(p))]
    if not roots:
        print(f"no SKILL.md found under {', '.join(args.paths)}", file=sys.stderr)
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
    _prefect_env(args.verbose)
    _progress_logging(args.quiet)
    from prefect.task_runners import ThreadPoolTaskRunner

    from aeval.store import new_run_id
    from flows.compare import compare
    from tasks.compare import render_compare

    store = Path(args.out or settings.home)
    compare_id = new_run_id()
    flow = compare.with_options(
        task_runner=ThreadPoolTaskRunner(max_workers=args.concurrency or settings.concurrency))
    report = flow(paths=[str(p) for p in args.paths], variants=variants, compare_id=compare_id,
                  store=str(store), grader_model=None if args.no_grader else (
                      args.grader_model or settings.grader_model),
                  api_base=args.api_base or settings.api_base, epochs=args.epochs,
                  skill_roots=[str(r) for r in roots])
    print(render_compare(report))
    print(f"report: {store / 'compare' / compare_id / 'compare.json'}")
    return 0


def cmd_regrade(args: argparse.Namespace) -> int:
    from aeval.settings import Settings
    from aeval.store import RunStore

    settings = Settings()
    store = Path(args.out or settings.home)
    try:
        source = RunStore(store).resolve(args.run)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    _prefect_env(args.verbose)
    _progress_logging(args.quiet)
    from flows.regrade import regrade

    report = regrade(run=str(source), grader_model=args.grader_model, store=str(store),
                     api_base=args.api_base or settings.api_base)
    rate = "–" if report.agreement_rate is None else f"{report.agreement_rate:.0%}"
    print(f"regrade of {report.source_run} with {report.grader_model} (original grader: "
          f"{report.original_grader or 'none'}): {report.agreements}/{report.compared} "
          f"assertions agree ({rate})")
    for d in report.disagreements:
        print(f"  {d.skill}/{d.case_id} [{d.runtime}] {d.assertion_id}: {d.original} -> "
              f"{d.regraded}  {d.text}")
    print(f"regraded runs: {', '.join(report.regrade_runs)}")
    return 0


# ---- runtimes -------------------------------------------------------------------------------


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
    _console().print(table)
    return 0


# ---- show -----------------------------------------------------------------------------------


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


# ---- parser ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="aeval", description="Test agent skills deterministically: install, execute, "
        "grade the first attempt, suggest grounded fixes.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"aeval {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

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
    r.add_argument("--post", action="store_true",
                   help="post the results on the GitLab MR (AEVAL_GITLAB_TOKEN; MR from CI "
                        "variables or --mr/--project/--gitlab-url)")
    r.add_argument("--mr", type=int, metavar="IID", help="merge request IID for --post")
    r.add_argument("--project", metavar="ID", help="GitLab project id or path for --post")
    r.add_argument("--gitlab-url", metavar="URL", help="GitLab URL for --post")
    r.add_argument("--runtime", action="append", metavar="NAME",
                   help="runtime to use (repeatable); default: builtin with a model, else "
                        "literal")
    r.add_argument("--model", help="executor model (litellm string), or AEVAL_MODEL")
    r.add_argument("--grader-model", help="grader model, or AEVAL_GRADER_MODEL (default: the "
                                          "executor model)")
    r.add_argument("--no-grader", action="store_true",
                   help="no grader model: natural-language assertions stay ungraded")
    r.add_argument("--api-base", help="model API base URL, or AEVAL_API_BASE")
    r.add_argument("--epochs", type=int, default=1, help="runs of each case (default 1)")
    r.add_argument("--concurrency", type=int, help="case chains at once (default 4)")
    r.add_argument("--dask", metavar="ADDRESS|local",
                   help="run the tasks on Dask: `local` (a temporary local cluster) or a "
                        "scheduler address tcp://HOST:PORT (pip install 'aeval[dask]')")
    r.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    r.add_argument("--resume", metavar="RUN_ID",
                   help="finish an interrupted run: only cases without grading.json run")
    r.add_argument("--baseline", metavar="RUN_ID|DIR",
                   help="compare with this run in regression.json (default: the store's "
                        "last-known-good baselines, refreshed by `aeval sweep`)")
    r.add_argument("--keep-workspaces", action="store_true",
                   help="keep each attempt's workspace for debugging")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    r.add_argument("-v", "--verbose", action="store_true", help="show Prefect's own logs")
    r.set_defaults(func=cmd_run)

    v = sub.add_parser("validate", help="check SKILL.md and eval.config files",
                       description="Load every skill at or under PATH; print problems as "
                       "path:field: problem. Exit 2 if any skill is invalid.")
    v.add_argument("paths", nargs="+", metavar="PATH")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("schema", help="print an artifact's JSON Schema",
                       description="Print the JSON Schema generated from the pydantic model.")
    s.add_argument("name", nargs="?", help="eval-config, run, grading, ... (omit with --write)")
    s.add_argument("--write", metavar="DIR", help="write every schema into DIR")
    s.set_defaults(func=cmd_schema)

    sw = sub.add_parser("sweep", help="evaluate a whole marketplace and refresh baselines",
                        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="The nightly sweep: every skill, --epochs runs of each "
                        "case; passing cases become the last-known-good baselines that "
                        "regression.json compares against.")
    sw.add_argument("marketplace", nargs="?", default=".", metavar="MARKETPLACE")
    sw.add_argument("--epochs", type=int, default=3, help="runs of each case (default 3)")
    sw.add_argument("--runtime", action="append", metavar="NAME")
    sw.add_argument("--model")
    sw.add_argument("--grader-model")
    sw.add_argument("--no-grader", action="store_true")
    sw.add_argument("--api-base")
    sw.add_argument("--concurrency", type=int)
    sw.add_argument("--out", help="run store folder (default .aeval)")
    sw.add_argument("-q", "--quiet", action="store_true")
    sw.add_argument("-v", "--verbose", action="store_true")
    sw.set_defaults(func=cmd_sweep)

    c = sub.add_parser("compare", help="run the same skills through several runtimes/models",
                       description="One evaluate run per runtime (x model), then one table: "
                       "wall minutes, assertions passed/total, causal share, self-corrections, "
                       "protocol fidelity, tokens in and cached (compare.json, compare.md).")
    c.add_argument("paths", nargs="+", metavar="PATH")
    c.add_argument("--runtime", action="append", metavar="NAME[=MODEL]",
                   help="repeatable (default: builtin); NAME=MODEL gives that runtime its own "
                        "model string, e.g. claude-code=claude-sonnet-4-5")
    c.add_argument("--model", action="append", help="repeatable: one row per model")
    c.add_argument("--grader-model")
    c.add_argument("--no-grader", action="store_true")
    c.add_argument("--api-base")
    c.add_argument("--epochs", type=int, default=1)
    c.add_argument("--concurrency", type=int)
    c.add_argument("--out", help="run store folder (default .aeval)")
    c.add_argument("-q", "--quiet", action="store_true")
    c.add_argument("-v", "--verbose", action="store_true")
    c.set_defaults(func=cmd_compare)

    rg = sub.add_parser("regrade", help="re-grade a run's transcripts with another grader",
                        description="Replay every case of RUN (events, outputs, skill edits) "
                        "with its recorded assertions, grade with --grader-model, and report "
                        "per-assertion disagreement with the original grader.")
    rg.add_argument("run", metavar="RUN", help="run id, run folder, or latest")
    rg.add_argument("--grader-model", required=True)
    rg.add_argument("--api-base")
    rg.add_argument("--out", help="run store folder (default .aeval)")
    rg.add_argument("-q", "--quiet", action="store_true")
    rg.add_argument("-v", "--verbose", action="store_true")
    rg.set_defaults(func=cmd_regrade)

    rt = sub.add_parser("runtimes", help="list the agent runtimes: installed, version, how to "
                                         "install")
    rt.set_defaults(func=cmd_runtimes)

    from deployments.post import add_parser as add_post_parser

    add_post_parser(sub)

    sh = sub.add_parser("show", help="summarize a finished run")
    sh.add_argument("run", nargs="?", default="latest", help="run id, run folder, or latest")
    sh.add_argument("--out", help="run store folder (default .aeval)")
    sh.set_defaults(func=cmd_show)
    return p


def _version() -> str:
    from aeval import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    harden_process()
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
