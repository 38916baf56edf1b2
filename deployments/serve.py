"""Serve aeval's Prefect deployments from one long-running process.

    python -m aeval.deployments.serve                  the MR deployment and the nightly sweep
    python -m aeval.deployments.serve --no-schedule    the same, the nightly without its cron

Deployments (``DEPLOYMENTS`` below is the one definition; ``deployments/prefect.yaml``, for
``prefect deploy`` and work pools, repeats it and a test keeps the two equal):

    aeval-mr/mr            flows/mr.py:evaluate_mr   triggered per merge request, e.g. from CI:
                           prefect deployment run 'aeval-mr/mr' --param repo=... --watch
    aeval-sweep/nightly    flows/sweep.py:sweep      cron "0 2 * * *" (UTC), 3 epochs

It needs a Prefect server (``prefect server start``; point ``PREFECT_API_URL`` at it): the
embedded server of ``aeval run`` lives only as long as its process. Flow runs execute here,
with this process's environment (model keys, ``AEVAL_GITLAB_TOKEN`` for ``post``) and working
directory (relative ``repo``, ``marketplace`` and ``store`` parameters resolve against it).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any

NIGHTLY_CRON = "0 2 * * *"
TAGS = ("aeval",)


@dataclass(frozen=True)
class DeploymentSpec:
    """One deployment as both ``prefect.yaml`` and ``prefect.serve`` see it."""

    name: str
    entrypoint: str  # path:function, relative to the project root (the folder of pyproject)
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    cron: str | None = None

    def flow(self):
        """The Prefect flow the entrypoint names (imported as a module, not as a file)."""
        path, _, func = self.entrypoint.partition(":")
        module = importlib.import_module("aeval." + path.removesuffix(".py").replace("/", "."))
        return getattr(module, func)

    @property
    def full_name(self) -> str:
        """``flow-name/deployment-name``, as ``prefect deployment run`` takes it."""
        return f"{self.flow().name}/{self.name}"


DEPLOYMENTS: tuple[DeploymentSpec, ...] = (
    DeploymentSpec(
        name="mr",
        entrypoint="flows/mr.py:evaluate_mr",
        description="Evaluate the skills a merge request changed (git diff base...head of the "
                    "repository at `repo`, checked out at head); with post, report on the MR.",
        parameters={"request": {"repo": ".", "base": "origin/main", "head": "HEAD",
                                "mr_iid": None, "post": False, "runtimes": ["literal"]}},
    ),
    DeploymentSpec(
        name="nightly",
        entrypoint="flows/sweep.py:sweep",
        description="Evaluate every skill of the marketplace several times; passing cases "
                    "become the last-known-good baselines.",
        parameters={"request": {"marketplace": ".", "epochs": 3, "runtimes": ["literal"]}},
        cron=NIGHTLY_CRON,
    ),
)


def runner_deployments(schedule: bool = True) -> list:
    """``RunnerDeployment`` objects for ``prefect.serve`` (``schedule=False``: no cron)."""
    return [spec.flow().to_deployment(
        name=spec.name, description=spec.description, parameters=dict(spec.parameters),
        cron=spec.cron if schedule else None, tags=list(TAGS)) for spec in DEPLOYMENTS]


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m aeval.deployments.serve`` command line."""
    p = argparse.ArgumentParser(
        prog="python -m aeval.deployments.serve",
        description="Serve the aeval-mr/mr and aeval-sweep/nightly deployments in this "
                    "process until interrupted (PREFECT_API_URL: the Prefect server).")
    p.add_argument("--no-schedule", action="store_true",
                   help=f"serve the nightly sweep without its cron ({NIGHTLY_CRON})")
    p.add_argument("--limit", type=int, metavar="N",
                   help="flow runs at once in this process (default: no limit)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted."""
    args = build_parser().parse_args(argv)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from aeval.hardening import harden_process

    harden_process()  # this process holds the model keys and the GitLab token
    from prefect import serve

    serve(*runner_deployments(schedule=not args.no_schedule), limit=args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
