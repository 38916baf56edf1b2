"""The `aeval` command line: the parser and `main`. The commands live in
``commands_eval.py`` (run, sweep, compare, regrade), ``commands_info.py`` (validate, schema,
runtimes, show) and ``post.py`` (post); what they print, in ``console.py``.

Exit codes of `run` (first match wins): 1 a case failed (a skill defect); 2 a usage error or
an invalid skill; 3 an environment error (and no skill failure); 0 everything passed.
"""

from __future__ import annotations

import argparse
import sys

from aeval.deployments.cli_common import EPILOG, EXIT_USAGE
from aeval.deployments.commands_eval import cmd_compare, cmd_regrade, cmd_run, cmd_sweep
from aeval.deployments.commands_info import cmd_runtimes, cmd_schema, cmd_show, cmd_validate

from aeval.hardening import harden_process


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
                        "scheduler address tcp://HOST:PORT (pip install 'aeval-skills[dask]')")
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

    from aeval.deployments.post import add_parser as add_post_parser

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
