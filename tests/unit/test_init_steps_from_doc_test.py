"""`aeval init` without a model: the template's steps are only what the doc test found
self-contained; every other block stays a commented-out TODO step saying what it needs, and
the literal runtime runs no comment (a case of TODOs only is untested, never a pass)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval.adapters import get_runtime
from aeval.events import ToolCallEvent, read_events
from aeval.isolation.redact import Redactor
from aeval.isolation.shell import base_env
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, Limits
from aeval.skill.contract import EvalConfig
from aeval.skill.contract_draft import TODO_MARK, documented_blocks, template_config, unfilled
from aeval.skill.shell_blocks import plan_blocks
from aeval.skill.skill_md import load_skill
from aeval.verdicts.doctest import BlockOutcome
from aeval.verdicts.self_contained import steps_from_doc_test

SYNC_MD = """---
name: crm-sync
description: Sync contacts from the ACME CRM into a local SQLite file.
  Use when contacts must be refreshed.
---

# CRM sync

Set your token first:

```bash
export ACME_TOKEN=<your-api-token>
```

Check what would change, without writing anything:

```bash
python3 scripts/sync.py --token "$ACME_TOKEN" --dry-run
```

Look at the bundled sample export:

```bash
cd fixtures
head -3 contacts.csv
```

Import the sample:

```bash
python3 scripts/sync.py --from fixtures/contacts.csv --db contacts.db
```
"""


@pytest.fixture
def crm(tmp_path: Path):
    d = tmp_path / "crm-sync"
    (d / "scripts").mkdir(parents=True)
    (d / "fixtures").mkdir()
    (d / "SKILL.md").write_text(SYNC_MD)
    (d / "scripts" / "sync.py").write_text("import sys\n")
    (d / "fixtures" / "contacts.csv").write_text("name,email\nAda,ada@example.com\n")
    return load_skill(d)


def _lines(skill) -> list[int]:
    return [p.line for p in plan_blocks(documented_blocks(skill))]


def test_a_block_that_ran_but_needs_a_skipped_blocks_variable_is_left_to_the_author(crm):
    token, dry, look, sample = _lines(crm)
    config, _ = template_config(crm, steps_from_doc_test(crm, [
        BlockOutcome(token, "skipped", "placeholder: angle-bracket placeholder "
                                       "'<your-api-token>'"),
        BlockOutcome(dry, "ok"), BlockOutcome(look, "ok"), BlockOutcome(sample, "ok")]))
    steps = config["evals"][0]["steps"]
    # the token block and the dry run that reads the exported token: the author's to supply
    assert steps[0].startswith(f"# {TODO_MARK}: SKILL.md line {token}: placeholder")
    assert steps[1].startswith(f"# {TODO_MARK}: SKILL.md line {dry}: it ran, but it may "
                               f"depend on SKILL.md line {token}")
    assert '\n# python3 "$SKILL_DIR/scripts/sync.py" --token "$ACME_TOKEN" --dry-run' in steps[1]
    # a clean block's `cd` takes nothing from the blocks after it: they stay steps
    assert steps[2] == "cd fixtures\nhead -3 contacts.csv"
    assert steps[3] == ('python3 "$SKILL_DIR/scripts/sync.py" --from fixtures/contacts.csv '
                        "--db contacts.db")
    EvalConfig.model_validate(config)
    left = {p.field: p.message for p in unfilled(config, "crm-sync/eval.config")}
    assert "placeholder '<your-api-token>'" in left["evals[0].steps[0]"]


def test_a_defect_in_the_skills_own_code_stays_a_step_and_what_is_not_reached_is_todo(crm):
    token, dry, look, sample = _lines(crm)
    config, left_out = template_config(crm, steps_from_doc_test(crm, [
        BlockOutcome(token, "skipped", "placeholder"),
        BlockOutcome(dry, "defect", "the skill's sync.py rejects what SKILL.md documents"),
        BlockOutcome(look, "missing_tool", "needs head", tool="head")]))  # then a timeout
    steps = config["evals"][0]["steps"]
    assert steps[1] == 'python3 "$SKILL_DIR/scripts/sync.py" --token "$ACME_TOKEN" --dry-run'
    assert steps[2].startswith(f"# {TODO_MARK}: SKILL.md line {look}: needs head;")
    assert steps[3].startswith(f"# {TODO_MARK}: SKILL.md line {sample}: not reached")
    assert f"SKILL.md line {look}: needs head" in left_out


def request(tmp_path: Path, steps: list[str]) -> ExecutionRequest:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ExecutionRequest(prompt="p", case_id="c", workspace=ws, home=tmp_path,
                            skill_name="s", skill_description="d", skill_dir=ws, steps=steps,
                            env=base_env(tmp_path), limits=Limits(timeout_s=30),
                            raw_log=tmp_path / "raw.jsonl")


def run(tmp_path: Path, steps: list[str]):
    rec = EventRecorder(tmp_path / "events.jsonl", Redactor())
    result = get_runtime("literal").run(request(tmp_path, steps), rec)
    rec.close()
    calls = [e.input["command"] for e in read_events(tmp_path / "events.jsonl")
             if isinstance(e, ToolCallEvent)]
    return result, calls


def test_a_case_whose_every_step_is_a_todo_comment_is_untested_with_what_it_needs(tmp_path):
    todo = (f"# {TODO_MARK}: SKILL.md line 21: needs pdftotext; make it runnable here, then "
            "uncomment it\n# pdftotext -layout input.pdf out.txt")
    result, calls = run(tmp_path, [todo, "  # nothing here either\n\n"])
    assert result.status == "untested" and calls == []
    assert "needs pdftotext" in result.final_text


def test_comment_steps_are_not_run_and_the_others_are(tmp_path):
    result, calls = run(tmp_path, ["# TODO: needs the reader's invoice.pdf\n# ocr invoice.pdf",
                                   "echo ran > out.txt", "# a note\ncat out.txt"])
    assert result.status == "completed" and result.final_text == "all 2 step(s) succeeded"
    assert calls == ["echo ran > out.txt", "# a note\ncat out.txt"]
