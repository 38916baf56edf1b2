"""The `aeval` command line: the parser and `main`. The commands live beside it in
``evaluate.py`` (run, sweep, compare, regrade), ``info.py`` (validate, schema, runtimes,
show), ``init.py`` (init), ``trigger_accuracy.py`` (triggers), ``trigger_deployment.py``
(trigger), ``uplift.py`` (uplift) and ``post.py`` (post); what they print, in ``console.py``.

Exit codes of `run` (first match wins): `aeval.exit_codes`, the one table the gate, the
``--help`` epilog and the README share; 4 (aeval itself failed: one line, the traceback with
-v) applies to every command.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from aeval.deployments.cli._common import (
    EPILOG,
    EXIT_INTERNAL,
    EXIT_USAGE,
    add_grader_options,
    add_quiet_verbose,
    add_verbose,
)
from aeval.deployments.cli.console import QuietPipe, inert, prefect_env
from aeval.deployments.cli.evaluate import cmd_compare, cmd_regrade, cmd_run, cmd_sweep
from aeval.deployments.cli.info import cmd_runtimes, cmd_schema, cmd_show, cmd_validate
from aeval.deployments.cli.init import add_parser as add_init_parser
from aeval.deployments.cli.trigger_accuracy import cmd_triggers

from aeval.exit_codes import INTERRUPTED
from aeval.isolation.hardening import harden_process, limit_malloc_arenas

TRIGGERS_EXITS = """exit codes of `aeval triggers` (first match wins):
  2  a usage error, or a skill whose SKILL.md / eval.config cannot be loaded
  4  internal error (aeval failed on a trial, or itself)
  3  a trial ended in an environment error (model API, timeout) after retries
  0  otherwise: every trial ran (precision and recall are reported, not gated)
"""
REGRADE_EXITS = """exit codes of `aeval regrade` (first match wins):
  2  a usage error: RUN is not a run of the store
  4  internal error (aeval itself failed)
  3  a grader could not grade a case epoch the original grader judged (its provider
     failed, or its answers stayed invalid): the report is written, over fewer items; retry
  0  otherwise
"""

class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: an unknown flag is reported with this subcommand's usage
    (`aeval run --modle x` shows `usage: aeval run ...`), not the top-level one."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def add_insecure_dask_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dask-allow-insecure-tcp", action="store_true",
                        help="accept a plain tcp:// Dask scheduler: anyone who can reach it "
                             "runs code on its workers as their user (deployments/README.md)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="aeval", description="Test agent skills deterministically: install, execute, "
        "grade the first attempt, suggest grounded fixes.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"aeval {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)

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
    r.add_argument("--sandbox", choices=("auto", "require", "none"),
                   help="bubblewrap around every process a case starts: auto (default; "
                        "without bubblewrap, warn and run unsandboxed), require (exit 2 "
                        "without it), none [AEVAL_SANDBOX]")
    add_quiet_verbose(r)
    r.set_defaults(func=cmd_run)

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

    s = sub.add_parser("schema", help="print an artifact's JSON Schema",
                       description="Print the JSON Schema generated from the pydantic model.")
    s.add_argument("name", nargs="?", help="eval-config, run, grading, ... (omit with --write)")
    s.add_argument("--write", metavar="DIR", help="write every schema into DIR")
    add_verbose(s)
    s.set_defaults(func=cmd_schema)

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
    sw.add_argument("--out", help="run store folder (default .aeval, or AEVAL_HOME)")
    add_quiet_verbose(sw)
    sw.set_defaults(func=cmd_sweep)

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

    from aeval.deployments.cli.uplift import add_parser as add_uplift_parser

    add_uplift_parser(sub)  # `aeval uplift`: with and without the skill, paired

    rt = sub.add_parser("runtimes", help="list the agent runtimes: installed, version, how to "
                                         "install")
    add_verbose(rt)
    rt.set_defaults(func=cmd_runtimes)

    from aeval.deployments.cli.post import add_parser as add_post_parser

    add_post_parser(sub)

    from aeval.deployments.cli.trigger_deployment import add_parser as add_trigger_parser

    add_trigger_parser(sub)  # `aeval trigger`: the MR deployment from CI, with its gate

    t = sub.add_parser(
        "triggers", help="trigger accuracy: does the agent load the skill among distractors?",
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

    add_init_parser(sub, run_parser=r)
    return p


def _version() -> str:
    from aeval import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    """Parse, dispatch, return the exit code. Output to a closed pipe ends quietly; an
    unexpected exception prints one line (the traceback with -v) and exits 4."""
    limit_malloc_arenas()  # before any thread starts
    parser = build_parser()
    args = parser.parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    prefect_env(verbose)  # before any command imports Prefect
    harden_process()
    saved, sys.stdout = sys.stdout, QuietPipe(sys.stdout)
    try:
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        return args.func(args)
    except KeyboardInterrupt:
        print("aeval: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as exc:  # the last line of defence: one line, exit 4
        if verbose:
            traceback.print_exc()
        detail = inert(str(exc)).strip().splitlines()
        print(f"aeval: internal error: {type(exc).__name__}"
              f"{': ' + detail[0][:300] if detail else ''}"
              f"{'' if verbose else '; rerun with -v for the traceback'}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        sys.stdout.flush()
        sys.stdout = saved


if __name__ == "__main__":  # the program, as `aeval` runs it (aeval.deployments.cli.program)
    from aeval.deployments.cli.program import run

    run()
