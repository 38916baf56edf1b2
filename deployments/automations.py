"""The Prefect Automation that tells someone a nightly sweep failed or tested nothing.

    python -m aeval.deployments.automations --notify slack-webhook/ops   create or update it
    python -m aeval.deployments.serve --marketplace ... --notify slack-webhook/ops   the same,
                                                                          then serve

Trigger: a flow run of the nightly deployment (``aeval-sweep/nightly``, or ``nightly-pool``
from prefect.yaml) entering a Failed or Crashed state under any name (a gate that is not 0,
``Misconfigured``, ``TooFewTested``, Prefect's ``TimedOut``), or a Completed state under a name
other than ``Completed`` (``NothingTested``: every case run untested, a green that proves
nothing). Action: ``SendNotification`` through a notification block the user created (Slack,
e-mail, Teams ...: ``prefect block ls`` shows them as ``TYPE/NAME``). Idempotent by name:
calling it again updates the one automation instead of adding another.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from aeval.exit_codes import OK
from aeval.exit_codes import USAGE as EXIT_USAGE

AUTOMATION_NAME = "aeval: nightly failed or tested nothing"
NOTIFY_ENV = "AEVAL_NOTIFY_BLOCK"
NO_BLOCK_HINT = (
    "no notification block: create one (in the UI: Blocks > + > Slack Webhook, Email, ...; "
    "or `prefect block create slack-webhook`), then pass --notify TYPE/NAME (as `prefect "
    f"block ls` shows it) or set {NOTIFY_ENV}")


class NotifyBlockError(ValueError):
    """The named notification block is malformed or not on the server."""


def nightly_names() -> tuple[str, list[str]]:
    """The nightly's flow name and its deployment names (served and ``prefect deploy``ed)."""
    from aeval.deployments.naming import NIGHTLY, POOL_SUFFIX
    from aeval.flows.sweep import sweep

    return sweep.name, [NIGHTLY, NIGHTLY + POOL_SUFFIX]


def nightly_trigger():
    """An event trigger on a nightly flow run's state change to Failed/Crashed (any name) or
    to a Completed state named otherwise (``NothingTested``)."""
    from prefect.events.schemas.automations import EventTrigger, Posture

    flow, deployments = nightly_names()
    return EventTrigger(
        expect={"prefect.flow-run.*"},
        match={"prefect.resource.id": "prefect.flow-run.*",
               "prefect.state-type": ["FAILED", "CRASHED", "COMPLETED"],
               "prefect.state-name": "!Completed"},
        match_related=[
            {"prefect.resource.role": "flow", "prefect.resource.name": flow},
            {"prefect.resource.role": "deployment", "prefect.resource.name": deployments},
        ],
        posture=Posture.Reactive, threshold=1)


BODY = ("aeval's nightly {{ flow_run.name }} ended {{ flow_run.state.name }}: "
        "{{ flow_run.state.message }}\n{{ flow_run|ui_url }}")


def block_document_id(client, block: str):
    """The id of the block ``TYPE/NAME`` (``slack-webhook/ops``)."""
    from prefect.exceptions import ObjectNotFound

    block_type, sep, name = block.partition("/")
    if not sep or not block_type or not name:
        raise NotifyBlockError(f"--notify {block}: expected TYPE/NAME as `prefect block ls` "
                               "shows it, e.g. slack-webhook/ops")
    try:
        return client.read_block_document_by_name(name, block_type_slug=block_type).id
    except ObjectNotFound:
        raise NotifyBlockError(f"--notify {block}: no such block on this server; "
                               + NO_BLOCK_HINT) from None


def ensure_nightly_automation(block: str) -> Any:
    """Create, or update in place, the automation named ``AUTOMATION_NAME``; returns it as
    the server has it."""
    from prefect.automations import Automation, SendNotification
    from prefect.client.orchestration import get_client
    from prefect.events.schemas.automations import AutomationCore

    with get_client(sync_client=True) as client:
        core = AutomationCore(
            name=AUTOMATION_NAME, enabled=True,
            description="Notifies when aeval's nightly sweep fails, crashes or tests nothing "
                        "(made by aeval.deployments.automations).",
            trigger=nightly_trigger(),
            actions=[SendNotification(block_document_id=block_document_id(client, block),
                                      subject="aeval nightly: {{ flow_run.state.name }}",
                                      body=BODY)])
        existing = client.read_automations_by_name(AUTOMATION_NAME)
        if existing:
            client.update_automation(existing[0].id, core)
            for extra in existing[1:]:  # one by name, whoever made the others
                client.delete_automation(extra.id)
            automation_id = existing[0].id
        else:
            automation_id = client.create_automation(core)
        return Automation(**client.read_automation(automation_id).model_dump())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m aeval.deployments.automations",
        description=f"Create or update the Prefect Automation {AUTOMATION_NAME!r}: notify "
                    "through a notification block when a nightly sweep fails or tests "
                    "nothing (PREFECT_API_URL: the Prefect server).")
    p.add_argument("--notify", default=os.environ.get(NOTIFY_ENV), metavar="TYPE/NAME",
                   help=f"the notification block, e.g. slack-webhook/ops [{NOTIFY_ENV}]")
    return p


def create_from_cli(block: str | None, prog: str) -> int:
    """Shared by this module's command line and ``serve --notify``: one line either way."""
    if not block:
        print(f"{prog}: {NO_BLOCK_HINT}", file=sys.stderr)
        return EXIT_USAGE
    try:
        automation = ensure_nightly_automation(block)
    except NotifyBlockError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{prog}: automation {automation.name!r} ({automation.id}) notifies {block}",
          flush=True)
    return OK


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    return create_from_cli(args.notify, "automations")


if __name__ == "__main__":
    sys.exit(main())
