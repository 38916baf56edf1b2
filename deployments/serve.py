"""Serve aeval's Prefect deployments from one long-running process.

    python -m aeval.deployments.serve --marketplace /srv/marketplace   MR deployment + nightly
    python -m aeval.deployments.serve --marketplace https://host/g/m.git --ref main
    python -m aeval.deployments.serve                                 the MR deployment only
    python -m aeval.deployments.serve --no-schedule ...               the nightly without cron
    python -m aeval.deployments.serve --marketplace ... --notify slack-webhook/ops
                                        + the Automation that notifies on a failing nightly

Deployments (``DEPLOYMENTS`` below is the one definition; ``deployments/prefect.yaml``, for
``prefect deploy`` and work pools, repeats it under other names and a test keeps the two
equal):

    aeval-mr/mr            aeval.flows.mr.evaluate_mr   triggered per merge request, from CI:
                           aeval trigger / prefect deployment run 'aeval-mr/mr' --param ...
    aeval-sweep/nightly    aeval.flows.sweep.sweep      cron "0 2 * * *" (UTC), 3 epochs, of
                           the marketplace named by --marketplace (or AEVAL_MARKETPLACE): there
                           is no default, and without one the nightly is not served

It needs a Prefect server (``prefect server start``; point ``PREFECT_API_URL`` at it). Flow
runs execute here, with this process's environment (model keys, ``AEVAL_GITLAB_TOKEN`` for
``post``) and working directory (a relative ``store`` resolves against it). Serving never takes
over a deployment of the same name that ``prefect deploy`` bound to a work pool: it stops with
one line instead (exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from aeval.deployments.naming import MR, NIGHTLY, NIGHTLY_ENTRYPOINT, POOL_SUFFIX
from aeval.exit_codes import OK
from aeval.exit_codes import USAGE as EXIT_USAGE

NIGHTLY_CRON = "0 2 * * *"
TAGS = ("aeval",)


@dataclass(frozen=True)
class DeploymentSpec:
    """One deployment as both ``prefect.yaml`` and ``prefect.serve`` see it."""

    name: str
    entrypoint: str  # a module path: aeval is installed, no checkout of it is needed
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    cron: str | None = None

    def flow(self):
        """The Prefect flow the entrypoint names."""
        module, _, func = self.entrypoint.rpartition(".")
        return getattr(importlib.import_module(module), func)

    @property
    def full_name(self) -> str:
        """``flow-name/deployment-name``, as ``prefect deployment run`` takes it."""
        return f"{self.flow().name}/{self.name}"


DEPLOYMENTS: tuple[DeploymentSpec, ...] = (
    DeploymentSpec(
        name=MR,
        entrypoint="aeval.flows.mr.evaluate_mr",
        description="Evaluate the skills a merge request changed: a clone of `repo` of this "
                    "run's own, at `head`, diffed against `base`; with post, report on the MR.",
    ),
    DeploymentSpec(
        name=NIGHTLY,
        entrypoint=NIGHTLY_ENTRYPOINT,
        description="Evaluate every skill of the marketplace several times; passing cases "
                    "become the last-known-good baselines. Ends Failed when a case fails.",
        parameters={"request": {"epochs": 3, "runtimes": ["literal"]}},
        cron=NIGHTLY_CRON,
    ),
)


def nightly_parameters(marketplace: str, ref: str | None = None) -> dict[str, Any]:
    """The nightly's parameters with its marketplace (and ref) filled in."""
    spec = next(s for s in DEPLOYMENTS if s.name == "nightly")
    request = {**spec.parameters["request"], "marketplace": marketplace}
    return {"request": request | ({"ref": ref} if ref else {})}


def runner_deployments(schedule: bool = True, marketplace: str | None = None,
                       ref: str | None = None) -> list:
    """``RunnerDeployment`` objects for ``prefect.serve`` (``schedule=False``: no cron); the
    nightly only with a ``marketplace``."""
    from prefect.deployments.runner import EntrypointType

    out = []
    for spec in DEPLOYMENTS:
        params = dict(spec.parameters)
        if spec.name == "nightly":
            if not marketplace:
                continue
            params = nightly_parameters(marketplace, ref)
        out.append(spec.flow().to_deployment(
            name=spec.name, description=spec.description, parameters=params,
            cron=spec.cron if schedule else None, tags=list(TAGS),
            entrypoint_type=EntrypointType.MODULE_PATH))
    return out


def pool_bound(names: list[str]) -> list[tuple[str, str]]:
    """Deployments of these names that exist on the server bound to a work pool (made by
    ``prefect deploy``): serving them here would silently take them over."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    found = []
    with get_client(sync_client=True) as client:
        for name in names:
            try:
                dep = client.read_deployment_by_name(name)
            except ObjectNotFound:
                continue
            if dep.work_pool_name:
                found.append((name, dep.work_pool_name))
    return found


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m aeval.deployments.serve`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m aeval.deployments.serve",
        description="Serve the aeval-mr/mr deployment, and with --marketplace the "
                    "aeval-sweep/nightly one, in this process until interrupted "
                    "(PREFECT_API_URL: the Prefect server).")
    p.add_argument("--marketplace", default=os.environ.get("AEVAL_MARKETPLACE"),
                   metavar="PATH|GIT_URL",
                   help="the marketplace the nightly sweeps: a folder (absolute, on this "
                        "machine) or a git URL cloned per run [AEVAL_MARKETPLACE]; without "
                        "it the nightly is not served")
    p.add_argument("--ref", metavar="REF", help="branch, tag or commit of a git --marketplace")
    p.add_argument("--no-schedule", action="store_true",
                   help=f"serve the nightly sweep without its cron ({NIGHTLY_CRON})")
    p.add_argument("--notify", default=os.environ.get("AEVAL_NOTIFY_BLOCK"), metavar="TYPE/NAME",
                   help="a notification block (`prefect block ls`): create or update the "
                        "Automation that notifies through it when a nightly fails or tests "
                        "nothing [AEVAL_NOTIFY_BLOCK]")
    p.add_argument("--limit", type=int, metavar="N",
                   help="flow runs at once in this process (default: no limit)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted; exit 2 when a deployment of ours is a work pool's."""
    args = build_parser().parse_args(argv)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from aeval.isolation.hardening import harden_process

    harden_process()  # this process holds the model keys and the GitLab token
    marketplace = args.marketplace
    if marketplace and "://" not in marketplace and not marketplace.startswith("git@"):
        marketplace = os.path.abspath(marketplace)
        if not os.path.isdir(marketplace):
            print(f"serve: --marketplace {args.marketplace}: no such folder", file=sys.stderr)
            return EXIT_USAGE
    deployments = runner_deployments(schedule=not args.no_schedule, marketplace=marketplace,
                                     ref=args.ref)
    names = [f"{d.flow_name}/{d.name}" for d in deployments]
    if taken := pool_bound(names):
        name, pool = taken[0]
        print(f"serve: {name} exists on this server as a deployment of work pool {pool!r} "
              f"(prefect deploy): serving it here would take it over. prefect.yaml names its "
              f"deployments *{POOL_SUFFIX}; delete the old one (prefect deployment delete "
              f"{name}) to serve here", file=sys.stderr)
        return EXIT_USAGE
    if not marketplace:
        print("serve: aeval-sweep/nightly not served: no --marketplace (or AEVAL_MARKETPLACE)",
              flush=True)
    if marketplace:
        from aeval.deployments.automations import NO_BLOCK_HINT, create_from_cli

        if not args.notify:
            print(f"serve: no Automation for a failing nightly: {NO_BLOCK_HINT}", flush=True)
        elif (code := create_from_cli(args.notify, "serve")) != OK:
            return code
    from prefect import serve

    serve(*deployments, limit=args.limit)
    return OK


if __name__ == "__main__":
    sys.exit(main())
