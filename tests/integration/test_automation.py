"""The nightly's Automation as code (issue 44 item 9): made by one call, idempotent by name,
and its trigger, judged by Prefect's own matching, covers the state-change events a real
Prefect server emits for a nightly flow run that ends Failed or Completed `NothingTested`,
and not a green nightly's or another deployment's."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prefect.blocks.notifications import CustomWebhookNotificationBlock
from prefect.client.orchestration import get_client
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter
from prefect.server.events.schemas.automations import EventTrigger as ServerEventTrigger
from prefect.server.events.schemas.events import ReceivedEvent
from prefect.states import Completed, Failed

from aeval.deployments import automations
from aeval.deployments.serve import runner_deployments

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture
def inbox():
    """A local webhook: the notifications Prefect sends, as (subject, body) pairs."""
    received: list[tuple[str, str]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((data["subject"], data["body"]))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    CustomWebhookNotificationBlock(
        name="aeval-ops", url=f"http://127.0.0.1:{server.server_port}/hook",
        json_data={"subject": "{{subject}}", "body": "{{body}}"}).save("aeval-ops",
                                                                       overwrite=True)
    yield received
    server.shutdown()


def state_events(client, flow_run_id, state_name: str, timeout: float = 30.0) -> list:
    """The events the server emitted for this flow run entering ``state_name``."""
    flt = EventFilter(event=EventNameFilter(name=[f"prefect.flow-run.{state_name}"]),
                      resource=EventResourceFilter(id=[f"prefect.flow-run.{flow_run_id}"]))
    deadline = time.monotonic() + timeout
    while True:
        events = client.read_events(filter=flt, limit=50).events
        if events or time.monotonic() > deadline:
            return [ReceivedEvent.model_validate(e.model_dump()) for e in events]
        time.sleep(0.5)


def test_the_automation_is_made_once_and_fires_on_a_failed_or_vacuous_nightly(inbox, tmp_path):
    block = "custom-webhook/aeval-ops"
    first = automations.ensure_nightly_automation(block)
    again = automations.ensure_nightly_automation(block)
    with get_client(sync_client=True) as client:
        named = client.read_automations_by_name(automations.AUTOMATION_NAME)
        assert [a.id for a in named] == [first.id] == [again.id]
        stored = client.read_automation(first.id)
        assert stored.enabled
        [action] = stored.actions
        assert action.type == "send-notification"
        assert action.block_document_id == client.read_block_document_by_name(
            "aeval-ops", block_type_slug="custom-webhook").id
        trigger = ServerEventTrigger.model_validate(stored.trigger.model_dump())

        nightly, mr = ({d.name: d for d in runner_deployments(
            schedule=False, marketplace=str(tmp_path))}[n] for n in ("nightly", "mr"))
        nightly_id, mr_id = nightly.apply(), mr.apply()

        def run_ending(deployment_id, state, **parameters):
            run = client.create_flow_run_from_deployment(deployment_id, parameters=parameters)
            client.set_flow_run_state(run.id, state, force=True)
            [event] = state_events(client, run.id, state.name)
            return event

        failed = run_ending(nightly_id, Failed(message="aeval gate: exit 1: 1 case(s) failed"))
        vacuous = run_ending(nightly_id, Completed(name="NothingTested",
                                                   message="aeval gate: exit 0: no case was "
                                                           "tested"))
        green = run_ending(nightly_id, Completed())
        other = run_ending(mr_id, Failed(message="aeval gate: exit 1"),
                           request={"repo": str(tmp_path), "base": "a", "head": "b"})
    assert trigger.covers(failed)
    assert trigger.covers(vacuous)
    assert not trigger.covers(green)
    assert not trigger.covers(other)
    # and Prefect acts on it: the block receives one notification per covered run
    deadline = time.monotonic() + 60
    while len(inbox) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2)
    assert sorted(subject for subject, _ in inbox) == ["aeval nightly: Failed",
                                                       "aeval nightly: NothingTested"]
    assert any("no case was tested" in body for _, body in inbox)


def test_without_a_block_one_line_says_how(capsys):
    assert automations.main([]) == 2
    err = capsys.readouterr().err
    assert "no notification block" in err and "--notify TYPE/NAME" in err
    assert automations.main(["--notify", "slack-webhook/nope"]) == 2
    assert "no such block" in capsys.readouterr().err
