"""`aeval post RUN`: (re)publish a finished run on a GitLab merge request or a GitHub pull
request.

    aeval post latest --mr 7                   MR from --mr, project and server from CI vars
    aeval post RUN_ID --mr 7 --project 42 --gitlab-url https://gitlab.example.com
    aeval post RUN_DIR --dry-run               print what would be posted; write nothing
    aeval post latest --forge github           PR from the Actions environment
    aeval post RUN_DIR --forge github --repo acme/skills --pr 12
    aeval post RUN_DIR --forge github --summary-only   only the job summary, no token

The forge is GitHub inside GitHub Actions (``GITHUB_ACTIONS=true``), else GitLab, unless
``--forge`` says. On GitHub: one comment per skill, one review with a suggestion comment per
fix whose lines are in the diff, one fallback comment, an ``aeval`` check run with
annotations (which never passes on a fork's pull request: its run folder came from the fork's
own workflow), and the gate in ``$GITHUB_STEP_SUMMARY``; the token is ``AEVAL_GITHUB_TOKEN``.

Writes ``gl-code-quality.json`` into the run folder, then posts one summary note per skill,
an inline suggestion per fix whose lines are in the MR diff, and one fallback note for the
rest. Rerunning edits aeval's own notes instead of adding new ones.

The token comes from ``AEVAL_GITLAB_TOKEN`` (GitLab) or ``AEVAL_GITHUB_TOKEN`` (GitHub) only
(never a flag, never printed). Exit codes: 0 posted; 2 a usage error (no such run, unfinished
run, MR / PR or token unknown, the forge refused the token or the request, a workflow_run's
PR whose head is not the tested commit); 3 the forge unreachable or failing (after the
client's retries); 4 an internal error (aeval itself failed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aeval.exit_codes import ENVIRONMENT as EXIT_ENVIRONMENT
from aeval.exit_codes import OK as EXIT_OK
from aeval.exit_codes import USAGE as EXIT_USAGE


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``post`` subcommand to the ``aeval`` parser."""
    p = subparsers.add_parser(
        "post", help="post a finished run on a GitLab merge request or a GitHub pull request",
        description="Post a finished run's verdicts and fix suggestions on a GitLab merge "
        "request or a GitHub pull request (idempotent: reposting edits aeval's notes). The "
        "token is read from AEVAL_GITLAB_TOKEN (a project access token with scope api) or "
        "AEVAL_GITHUB_TOKEN.")
    p.add_argument("run", nargs="?", default="latest", metavar="RUN",
                   help="run id, run folder, or latest (default)")
    p.add_argument("--mr", metavar="IID", help="merge request IID (default CI_MERGE_REQUEST_IID)")
    p.add_argument("--project", metavar="ID", help="project id or path (default CI_PROJECT_ID)")
    p.add_argument("--gitlab-url", metavar="URL", help="GitLab URL (default CI_SERVER_URL)")
    p.add_argument("--forge", choices=("gitlab", "github"),
                   help="where to post (default: github inside GitHub Actions, else gitlab)")
    p.add_argument("--repo", metavar="OWNER/NAME",
                   help="GitHub repository (default GITHUB_REPOSITORY)")
    p.add_argument("--pr", metavar="N", help="GitHub pull request number (default: from "
                   "GITHUB_EVENT_PATH)")
    p.add_argument("--github-api-url", metavar="URL",
                   help="GitHub REST API root (default GITHUB_API_URL, else api.github.com)")
    p.add_argument("--summary-only", action="store_true",
                   help="only what needs no token and no API call: GitHub, the gate in "
                        "$GITHUB_STEP_SUMMARY; GitLab (with --forge gitlab), "
                        "gl-code-quality.json in the run folder")
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
    from aeval.adapters.forges.diff import ForgeError
    from aeval.deployments.cli.options import resolve
    from aeval.run.read import read_run
    from aeval.run.store import RunStore
    from aeval.tasks.deliver.forge import forge_named, post_to_forge
    from aeval.tasks.deliver.read_run import load_run

    store = RunStore(resolve(args).store)
    try:
        run_dir = store.resolve(args.run)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return EXIT_USAGE
    manifest = read_run(run_dir).manifest
    if manifest.status != "finished":
        print(f"run {manifest.run_id} did not finish (status {manifest.status})",
              file=sys.stderr)
        return EXIT_USAGE
    repo_root = Path(args.repo_root) if args.repo_root else None
    if repo_root is not None and not repo_root.is_dir():
        print(f"--repo-root {repo_root}: no such folder", file=sys.stderr)
        return EXIT_USAGE
    bundle = load_run(run_dir, repo_root)
    try:
        if args.summary_only:
            print(forge_named(forge_of(args)).summary_only(bundle))
            return EXIT_OK
        posted = post_to_forge(bundle, target_of(args), report_url=args.report_url,
                               dry_run=args.dry_run)
    except ForgeError as exc:
        print(f"aeval post: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT if exc.transient else EXIT_USAGE
    print(posted.text(), end="")
    return EXIT_OK


def forge_of(args: argparse.Namespace, environ: dict[str, str] | None = None) -> str:
    """``--forge``, else the forge whose options were given, else github inside GitHub
    Actions (and not GitLab CI), else gitlab."""
    from aeval.tasks.deliver.forge import choose_forge

    return choose_forge(
        args.forge, github_args=bool(args.repo or args.pr or args.github_api_url
                                     or args.summary_only),
        gitlab_args=bool(args.mr or args.project or args.gitlab_url), environ=environ)


def target_of(args: argparse.Namespace) -> Any:
    """The `PostTarget` of the options: the chosen forge's request, project and URL."""
    from aeval.tasks.deliver.forge import PostTarget

    forge = forge_of(args)
    if forge == "github":
        return PostTarget(forge=forge, number=args.pr, project=args.repo,
                          url=args.github_api_url)
    return PostTarget(forge=forge, number=args.mr, project=args.project, url=args.gitlab_url)


def build_parser() -> argparse.ArgumentParser:
    """A parser with only ``post`` (for ``python -m aeval.deployments.cli.post`` and tests)."""
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
