"""`aeval trigger`: run the MR deployment on a Prefect server from CI, wait for it (bounded),
write its reports, and exit with its gate, as `aeval run` would have.

    aeval trigger aeval-mr/mr --repo URL --base SHA --head SHA --mr 7 --timeout 3000

`prefect deployment run --watch` waited without end on a run stuck Late, exited 1 (the "skill
defect" code) on an environment error, and left the CI job without junit.xml and the Code
Quality report. Here: the flow run's gate is the exit code; a run no process picked up within
--timeout is cancelled and exits 3 (retry); the junit.xml and gl-code-quality.json the flow
run attached (artifact ``ci-reports``) are written into ``<out>/runs/<run-id>/``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from aeval.deployments.cli._common import EXIT_USAGE, add_verbose, flag_problem
from aeval.deployments.cli.options import resolve
from aeval.exit_codes import ENVIRONMENT as EXIT_ENVIRONMENT
from aeval.exit_codes import OK

TRIGGER_EXITS = """exit codes of `aeval trigger` (first match wins):
  1  a case failed: a skill defect (blocks the merge)
  2  a usage error: a bad flag, no PREFECT_API_URL, no such deployment, a request the flow
     refused (an agent runtime without a model, a model whose key the serving side lacks),
     or an invalid skill
  4  internal error (the flow run's gate, or aeval itself)
  3  an environment error: the server unreachable, the run not started or not finished
     within --timeout (then cancelled), the head not fetchable, or an environment error of
     the run: retry, not a defect
  0  every changed skill passed, or none changed
"""
_GATE = re.compile(r"^aeval gate: exit (\d+): ")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``trigger`` subcommand to the ``aeval`` parser."""
    p = subparsers.add_parser(
        "trigger", help="run the MR deployment on a Prefect server, wait, exit with its gate",
        description="Trigger a run of the MR deployment (served by `python -m "
        "aeval.deployments.serve` or deployed with prefect.yaml) for one merge request, wait "
        "for it at most --timeout seconds, write its junit.xml and gl-code-quality.json into "
        "<out>/runs/<run-id>/, and exit with its gate. PREFECT_API_URL names the server.",
        epilog=TRIGGER_EXITS, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("deployment", nargs="?", default="aeval-mr/mr",
                   help="flow/deployment name (default aeval-mr/mr; aeval-mr/mr-pool for "
                        "prefect.yaml's work-pool deployment)")
    p.add_argument("--repo", required=True,
                   help="the marketplace repository as the serving side reaches it: a git "
                        "URL (no credentials in it: they would be stored as a parameter) or a "
                        "path there")
    p.add_argument("--base", required=True, help="base commit of the MR")
    p.add_argument("--head", required=True, help="head commit of the MR (what is evaluated)")
    p.add_argument("--mr", type=int, metavar="IID", help="merge request IID")
    p.add_argument("--post", choices=("true", "false"), default="false",
                   help="post the results on the MR from the serving side (default false)")
    p.add_argument("--project", metavar="ID", help="GitLab project id or path for --post")
    p.add_argument("--gitlab-url", metavar="URL", help="GitLab URL for --post")
    p.add_argument("--runtime", action="append", metavar="NAME",
                   help="runtime (repeatable); default: builtin with a model, else literal")
    p.add_argument("--model", help="executor model, or AEVAL_MODEL (the key is the serving "
                                   "side's)")
    p.add_argument("--grader-model", help="grader model, or AEVAL_GRADER_MODEL")
    p.add_argument("--api-base", help="model API base URL, or AEVAL_API_BASE")
    p.add_argument("--report-url", metavar="URL",
                   help="where the serving side's run folders are browsable, or "
                        "AEVAL_REPORT_URL")
    p.add_argument("--timeout", type=float, default=3000, metavar="SECONDS",
                   help="wait at most this long for the run to finish (default 3000); then "
                        "cancel it and exit 3")
    p.add_argument("--out", help="where the reports go: <out>/runs/<run-id>/ (default .aeval, "
                                 "or AEVAL_HOME)")
    add_verbose(p)
    p.set_defaults(func=cmd_trigger)
    return p


def exit_code_of(state) -> int:
    """The exit code a finished MR flow run's state stands for."""
    if state.is_completed():
        return OK
    m = _GATE.match(state.message or "")
    if m:
        return int(m.group(1))
    if state.is_failed() and "parameters" in (state.message or "").lower():
        return EXIT_USAGE  # the flow refused its request (pydantic)
    return EXIT_ENVIRONMENT  # crashed, cancelled, head not fetchable: a retry may fix it


def write_reports(client, flow_run_id, out: Path) -> list[Path]:
    """The ``ci-reports`` artifact of the flow run, as files under ``<out>/runs/<run-id>/``."""
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )

    from aeval.tasks.run.ci_reports import CI_REPORTS_KEY, parse_ci_reports

    arts = client.read_artifacts(artifact_filter=ArtifactFilter(
        flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]),
        key=ArtifactFilterKey(any_=[CI_REPORTS_KEY])))
    if not arts:
        return []
    run_id, files = parse_ci_reports(str(arts[0].data or ""))
    if not run_id or "/" in run_id or run_id.startswith("."):
        return []
    from aeval.run.store import atomic_write_text

    folder = out / "runs" / run_id
    return [atomic_write_text(folder / name, text) for name, text in files.items()]


def cmd_trigger(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from aeval.run.requests import MrRequest

    opts = resolve(args)
    if not os.environ.get("PREFECT_API_URL"):
        print("aeval trigger: PREFECT_API_URL is not set (the Prefect server that serves the "
              "deployment)", file=sys.stderr)
        return EXIT_USAGE
    try:
        request = MrRequest(
            repo=args.repo, base=args.base, head=args.head, mr_iid=args.mr,
            post=args.post == "true", project_id=args.project, gitlab_url=args.gitlab_url,
            runtimes=opts.runtimes, model=opts.model, grader_model=opts.named_grader,
            api_base=opts.api_base,
            report_url=args.report_url or os.environ.get("AEVAL_REPORT_URL") or None)
    except ValidationError as exc:
        print(f"aeval trigger: {flag_problem(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if args.timeout <= 0:
        print("aeval trigger: --timeout must be positive", file=sys.stderr)
        return EXIT_USAGE
    from aeval.deployments.cli.console import prefect_env

    prefect_env(args.verbose)
    import httpx
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.exceptions import ObjectNotFound
    from prefect.states import Cancelling

    params = {"request": request.model_dump(mode="json", exclude_defaults=True)}
    try:
        run = run_deployment(args.deployment, parameters=params, timeout=args.timeout,
                             poll_interval=2)
    except ObjectNotFound:
        print(f"aeval trigger: no deployment {args.deployment} on {os.environ['PREFECT_API_URL']}"
              " (serve it with `python -m aeval.deployments.serve`, or `prefect deploy`)",
              file=sys.stderr)
        return EXIT_USAGE
    except (httpx.HTTPError, OSError) as exc:
        print(f"aeval trigger: the Prefect server is unreachable: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return EXIT_ENVIRONMENT
    state = run.state
    print(f"flow run {run.name} ({run.id}): {state.name if state else '?'}"
          + (f": {state.message}" if state and state.message else ""))
    with get_client(sync_client=True) as client:
        if state is None or not state.is_final():
            client.set_flow_run_state(run.id, Cancelling(message=f"aeval trigger: not "
                                      f"finished after {args.timeout:.0f} s"), force=True)
            print(f"aeval trigger: the run was {state.name if state else 'not started'} after "
                  f"{args.timeout:.0f} s (is a serve process or worker running?): cancelled; "
                  "exit 3", file=sys.stderr)
            return EXIT_ENVIRONMENT
        for path in write_reports(client, run.id, opts.store):
            print(f"wrote {path}")
    code = exit_code_of(state)
    print(f"exit {code}")
    return code
