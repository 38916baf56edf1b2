"""A marketplace of prose skills (style guides and checklists: no eval.config, no script, no
shell block) through `aeval run` and `aeval sweep` under `literal`, real Prefect: every case
run is `untested`. That stays exit 0 by default, but it is never a plain green: the console's
last line, run.json's gate, the flow run's state (read back from the Prefect API) and the
`aeval.run.finished` event all say that no case was tested, and each epoch's row is named as
one. `--min-tested 1` (or AEVAL_MIN_TESTED) makes it exit 5, the flow run Failed.

On the code before this change the same runs ended `exit 0: every tested case passed; 3
untested: brand-voice/smoke, brand-voice/smoke, ...` (the epoch dropped), run.json's gate had
no `nothing_tested`, the flow runs were plain `Completed`, and `--min-tested` was unknown."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

PROSE = {
    "brand-voice": ("Write and review customer-facing copy in the company's brand voice. Use "
                    "when drafting announcements, release emails or landing-page text.",
                    "# Brand voice\n\nWe sound like a helpful colleague, not a press release.\n\n"
                    "## Rules\n\n1. Lead with what the reader gets, in one sentence.\n"
                    "2. Prefer plain words: *use*, not *utilize*.\n"
                    "3. No exclamation marks in product copy.\n\n"
                    "## Before you send\n\n- Read it aloud once.\n"
                    "- Cut every sentence that does not help the reader act.\n"),
    "meeting-notes": ("Turn a meeting transcript into decisions, owners and dates. Use when "
                      "asked to summarize a meeting or write minutes.",
                      "# Meeting notes\n\nStructure every summary as:\n\n"
                      "1. **Decisions** — one line each, in the past tense.\n"
                      "2. **Actions** — owner, task, due date (`@dana — update the runbook — "
                      "Fri`).\n3. **Open questions** — who will answer them.\n\n"
                      "Leave out small talk and anything nobody decided.\n"),
    "postmortem-review": ("Review an incident postmortem for blameless language, a timeline "
                          "and actionable follow-ups. Use when someone shares a postmortem "
                          "draft.",
                          "# Postmortem review\n\nCheck, in order:\n\n"
                          "- The timeline uses UTC and has detection, mitigation and "
                          "resolution times.\n- Causes name systems and decisions, never "
                          "people.\n- Every follow-up has an owner and a tracking ticket.\n\n"
                          "See [the template](references/template.md) for the sections.\n"),
}


def build_marketplace(root: Path) -> Path:
    for name, (description, body) in PROSE.items():
        skill = root / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n"
                                        f"---\n\n{body}")
    refs = root / "skills" / "postmortem-review" / "references"
    refs.mkdir()
    (refs / "template.md").write_text("# Incident title\n\n## Summary\n\n## Timeline (UTC)\n\n"
                                      "## Causes\n\n## Follow-ups\n")
    return root


def last_line(console: str) -> str:
    return console.rstrip().splitlines()[-1]


def the_run(store: Path) -> dict:
    (rd,) = (store / "runs").iterdir()
    return json.loads((rd / "run.json").read_text())


def flow_run_state(name: str):
    """The final state of the one flow run called ``name``, from the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    with get_client(sync_client=True) as client:
        (run,) = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
        return run.state


def run_finished_event(run_id: str, timeout: float = 180) -> dict:
    """The `aeval.run.finished` event of ``run_id`` as the server stored it (it persists
    events in the background, in batches)."""
    import httpx
    from prefect.settings import PREFECT_API_URL

    deadline = time.monotonic() + timeout
    while True:
        r = httpx.post(f"{PREFECT_API_URL.value()}/events/filter", timeout=10, json={
            "filter": {"event": {"name": ["aeval.run.finished"]},
                       "resource": {"id": [f"aeval.run.{run_id}"]}}, "limit": 5})
        if r.status_code in (429, 503) and time.monotonic() < deadline:  # busy: ask again
            time.sleep(0.5)
            continue
        r.raise_for_status()
        if found := r.json()["events"]:
            return found[0]
        assert time.monotonic() < deadline, f"no aeval.run.finished event for {run_id}"
        time.sleep(1)


def test_a_run_of_prose_skills_says_no_case_was_tested_everywhere(tmp_path, capsys):
    mp, store = build_marketplace(tmp_path / "marketplace"), tmp_path / "store"
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(store)])
    console = capsys.readouterr().out
    assert code == 0, console
    expected = ("exit 0: no case was tested (3 skill(s), 3 case run(s) untested: brand-voice, "
                "meeting-notes, postmortem-review)")
    assert last_line(console) == expected, console
    assert "every tested case passed" not in console

    run = the_run(store)
    assert run["gate"] == {"exit_code": 0, "reason": expected.removeprefix("exit 0: "),
                           "tested": 0, "untested": 3, "nothing_tested": True,
                           "min_tested": 0}

    state = flow_run_state(f"evaluate {run['run_id']}")
    assert (state.type.value, state.name) == ("COMPLETED", "NothingTested")
    assert state.message == f"aeval gate: {expected}"

    event = run_finished_event(run["run_id"])
    assert event["resource"]["aeval.nothing-tested"] == "true"
    assert event["payload"]["gate"]["nothing_tested"] is True
    assert event["payload"]["gate"]["tested"] == 0
    assert event["payload"]["gate"]["reason"] == expected.removeprefix("exit 0: ")


def test_a_sweep_of_prose_skills_names_each_epoch_and_says_no_case_was_tested(tmp_path, capsys):
    mp, store = build_marketplace(tmp_path / "marketplace"), tmp_path / "store"
    code = main(["sweep", str(mp), "--runtime", "literal", "--epochs", "2", "--out",
                 str(store)])
    console = capsys.readouterr().out
    assert code == 0, console
    expected = ("exit 0: no case was tested (3 skill(s), 6 case run(s) untested: brand-voice, "
                "meeting-notes, postmortem-review)")
    assert last_line(console) == expected, console
    # each epoch's row, and its line in the untested list, is named as one
    for name in PROSE:
        for epoch in (1, 2):
            assert f"{name}/smoke #{epoch} [literal]: " in console, console
    run = the_run(store)
    assert run["gate"]["nothing_tested"] and run["gate"]["untested"] == 6

    # the nightly's own flow run, what the UI's list shows, not only its evaluate subflow
    for flow_run in (f"sweep {mp.resolve()}", f"evaluate {run['run_id']}"):
        state = flow_run_state(flow_run)
        assert (state.type.value, state.name) == ("COMPLETED", "NothingTested"), flow_run
        assert "no case was tested" in state.message


def test_min_tested_makes_a_run_that_tested_nothing_exit_5(tmp_path, capsys, monkeypatch):
    mp = build_marketplace(tmp_path / "marketplace")
    code = main(["run", str(mp), "--runtime", "literal", "--min-tested", "1", "--out",
                 str(tmp_path / "run-store")])
    console = capsys.readouterr().out
    assert code == 5, console
    assert last_line(console) == (
        "exit 5: no case was tested (3 skill(s), 3 case run(s) untested: brand-voice, "
        "meeting-notes, postmortem-review): fewer than --min-tested 1")
    run = the_run(tmp_path / "run-store")
    assert run["gate"]["exit_code"] == 5 and run["gate"]["min_tested"] == 1
    state = flow_run_state(f"evaluate {run['run_id']}")
    assert (state.type.value, state.name) == ("FAILED", "NothingTested")
    assert state.message.startswith("aeval gate: exit 5: no case was tested")

    # the setting does the same for the nightly sweep
    monkeypatch.setenv("AEVAL_MIN_TESTED", "1")
    code = main(["sweep", str(mp), "--runtime", "literal", "--epochs", "1", "--out",
                 str(tmp_path / "sweep-store")])
    console = capsys.readouterr().out
    assert code == 5, console
    assert last_line(console).endswith("fewer than --min-tested 1")
    state = flow_run_state(f"sweep {mp.resolve()}")
    assert (state.type.value, state.name) == ("FAILED", "NothingTested")
