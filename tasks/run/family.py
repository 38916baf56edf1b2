"""A resumed run's Prefect family: the flow runs it started in end as it did."""

from __future__ import annotations

from prefect.states import State


def settle(flow_run_id: str | None, outcome: State, resumed_in: str | None) -> None:
    """Set flow run ``flow_run_id`` (a resumed run's original, or its sweep's) to the resumed
    run's ``outcome`` (type, name and message; forced: a Failed run is final to Prefect's
    orchestration), saying which flow run finished it. Nothing when it is the flow run
    running now or unknown (a run.json from before flow run ids were recorded)."""
    from prefect.client.orchestration import get_client

    if not flow_run_id or flow_run_id == resumed_in:
        return
    message = f"resumed in flow run {resumed_in}: {outcome.message or outcome.type.value}"
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(flow_run_id, State(type=outcome.type, name=outcome.name,
                                                     message=message), force=True)


def current_flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    return flow_run.id
