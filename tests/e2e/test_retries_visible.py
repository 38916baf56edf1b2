"""Prefect's retries show as retries (issue 44, item 9), and the retries a user sets reach
``aeval sweep``: a step killed from outside on every attempt, swept with
``AEVAL_RETRIES=1``, runs twice (not the default three times), and the case's task run in
Prefect says it ran twice (run_count 2, a Retrying state in its history) before ending
EnvironmentError."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.e2e.test_outside_kill import INDEXER, Killer
from tests.e2e.test_reuse_inputs import sweep, write_skill

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def test_a_sweep_takes_aeval_retries_and_prefect_shows_the_retry(tmp_path, monkeypatch):
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter

    monkeypatch.setenv("AEVAL_RETRIES", "1")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    marker = f"notes-{uuid.uuid4().hex[:12]}"
    mp = tmp_path / "mp"
    skill = write_skill(
        mp, "notes-index", "Index a folder of markdown notes into outputs/index.txt.",
        "Run `python3 $SKILL_DIR/scripts/index_notes.py <notes> outputs/index.txt`.",
        {"id": "index", "prompt": "Index the notes in fixtures/notes.",
         "expected_outcome": "outputs/index.txt lists every note.",
         "files": ["fixtures/"],
         "steps": [f"mkdir -p outputs && python3 $SKILL_DIR/scripts/index_notes.py "
                   f"fixtures/notes outputs/index.txt {marker}"],
         "assertions": [{"type": "file_contains", "path": "outputs/index.txt",
                         "pattern": "^standup\\.md$"}]})
    (skill / "scripts").mkdir()
    (skill / "scripts" / "index_notes.py").write_text(INDEXER)
    notes = skill / "fixtures" / "notes"
    notes.mkdir(parents=True)
    (notes / "standup.md").write_text("# Standup\n")
    (notes / ".lock").write_text("held by the notes service\n")
    store = tmp_path / "store"

    with Killer(marker):
        code, case = sweep(mp, store)
    assert code == 3 and case["status"] == "error", case
    assert case["attempts"] == 2, case  # the first and the one retry AEVAL_RETRIES allows

    (run_dir,) = (store / "runs").iterdir()
    flow_run_id = json.loads((run_dir / "run.json").read_text())["flow_run_id"]
    with get_client(sync_client=True) as client:
        (task_run,) = [t for t in client.read_task_runs(flow_run_filter=FlowRunFilter(
            id={"any_": [flow_run_id]})) if t.name.startswith("case ")]
        history = [s.name for s in client.read_task_run_states(task_run.id)]
    assert task_run.run_count == 2, (task_run.run_count, history)
    assert task_run.state.name == "EnvironmentError", history
    assert any(n in ("Retrying", "AwaitingRetry") for n in history), history
