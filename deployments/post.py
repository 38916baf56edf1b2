"""`aeval post RUN --mr IID`: (re)publish a finished run on a GitLab merge request.

    aeval post latest --mr 7                   MR from --mr, project and server from CI vars
    aeval post RUN_ID --mr 7 --project 42 --gitlab-url https://gitlab.example.com
    aeval post RUN_DIR --dry-run               print what would be posted; write nothing

Writes ``gl-code-quality.json`` into the run folder, then posts one summary note per skill,
an inline suggestion per fix whose lines are in the MR diff, and one fallback note for the
rest. Rerunning edits aeval's own notes instead of adding new ones.

The token comes from ``AEVAL_GITLAB_TOKEN`` only (never a flag, never printed). Exit codes:
0 posted; 2 a usage error (no such run, unfinished run, MR or token unknown, GitLab refused
the token or the MR); 3 GitLab unreachable or failing (after python-gitlab's retries); 4 an
internal error (aeval itself failed).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``post`` subcommand to the ``aeval`` parser."""
    p = subparsers.add_parser(
        "post", help="post a finished run on a GitLab merge request",
        description="Post a finished run's verdicts and fix suggestions on a GitLab merge "
        "request (idempotent: reposting edits aeval's notes). The token is read from "
        "AEVAL_GITLAB_TOKEN (a project access token with scope api).")
    p.add_argument("run", nargs="?", default="latest", metavar="RUN",
                   help="run id, run folder, or latest (default)")
    p.add_argument("--mr", metavar="IID", help="merge request IID (default CI_MERGE_REQUEST_IID)")
    p.add_argument("--project", metavar="ID", help="project id or path (default CI_PROJECT_ID)")
    p.add_argument("--gitlab-url", metavar="URL", help="GitLab URL (default CI_SERVER_URL)")
    p.add_argument("--repo-root", metavar="DIR",
                   help="repository root the skill paths map into (default: git rev-parse "
                        "--show-toplevel of each skill)")
    p.add_argument("--report-url", metavar="URL",
                   help="link to the run's report, e.g. the CI job artifacts (default "
                        "AEVAL_REPORT_URL)")
    p.add_argument("--out", metavar="DIR", help="run store folder (default .aeval, or AEVAL_HOME)")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would be posted; post and write nothing")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show the traceback of an internal error")
    p.set_defaults(func=cmd_post)
    return p


def cmd_post(args: argparse.Namespace) -> int:
    """Run ``aeval post``; the exit code."""
    from aeval.adapters.gitlab import GitLabConfigError, GitLabError, GitLabMR, GitLabTarget
    from aeval.tasks.deliver import (
        REPORT_URL_ENV,
        DeliveryResult,
        deliver,
        load_run,
        plan_as_text,
        plan_delivery,
        write_code_quality_report,
    )

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
    if manifest.status != "finished":
        print(f"run {manifest.run_id} did not finish (status {manifest.status})",
              file=sys.stderr)
        return EXIT_USAGE
    repo_root = Path(args.repo_root) if args.repo_root else None
    if repo_root is not None and not repo_root.is_dir():
        print(f"--repo-root {repo_root}: no such folder", file=sys.stderr)
        return EXIT_USAGE
    bundle = load_run(run_dir, repo_root)
    report_url = args.report_url or os.environ.get(REPORT_URL_ENV)

    try:
        target = GitLabTarget.resolve(args.gitlab_url, args.project, args.mr)
        mr = GitLabMR.connect(target)
    except GitLabConfigError as exc:
        if not args.dry_run:
            print(f"aeval post: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"-- no GitLab access ({exc}): showing the bodies as if the MR were empty and "
              "nothing were in its diff")
        plan = plan_delivery(bundle, refs=None, diffs=[], notes=[], discussions=[],
                             report_url=report_url)
        print(plan_as_text(plan), end="")
        print(DeliveryResult(**plan.model_dump(), dry_run=True).summary())
        return 0

    if not args.dry_run:
        path = write_code_quality_report(bundle)
        print(f"wrote {path}")
    try:
        result = deliver(mr, bundle, report_url=report_url, dry_run=args.dry_run)
    except GitLabError as exc:
        print(f"aeval post: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT if exc.transient else EXIT_USAGE
    if args.dry_run:
        print(plan_as_text(result), end="")
    else:
        for a in result.actions:
            where = f" at {a.position.new_path}:{a.position.new_line}" if a.position else ""
            print(f"{a.kind}{where} {a.marker}")
        for r in result.rejected:
            print(f"GitLab refused the inline position of {r}: moved to the fallback note")
        for s in result.skipped:
            print(f"skipped: {s}")
    print(f"{target.url} project {target.project_id} MR !{target.mr_iid}: {result.summary()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """A parser with only ``post`` (for ``python -m aeval.deployments.post`` and tests)."""
    p = argparse.ArgumentParser(prog="aeval")
    add_parser(p.add_subparsers(dest="command", metavar="COMMAND"))
    return p


def main(argv: list[str] | None = None) -> int:
    """``aeval post ...`` without the rest of the command line: ``main(["post", ...])``."""
    args = build_parser().parse_args(argv)
    if not getattr(args, "func", None):
        build_parser().print_help()
        return EXIT_USAGE
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
