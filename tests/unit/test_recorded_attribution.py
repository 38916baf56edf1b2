"""Δ attribution by the runtime's own records: each runtime's recorded stream of the paper's
case, re-parsed, in which the watch stamped the SKILL.md edit inside the window of the failing
`segment_train` command that came before the edit's call (what Codex does: it reports an
apply_patch only once applied, and a busy machine's watch reads late). The edit is the call
whose record names SKILL.md, never the failing command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aeval.adapters.runtimes._claude_code_parse import parse_records, read_raw
from aeval.adapters.runtimes._codex_parse import parse_codex
from aeval.adapters.runtimes._codex_parse import read_records as codex_records
from aeval.adapters.runtimes._opencode_parse import parse_opencode
from aeval.adapters.runtimes._opencode_parse import read_records as opencode_records
from aeval.events import EVENT_ADAPTER, Event, ToolCallEvent
from aeval.isolation.workspace import FileChange
from aeval.verdicts.attribution import attribute_changes

DATA = Path(__file__).resolve().parent.parent / "data"


def codex() -> tuple[list[dict[str, Any]], str]:
    lines = (DATA / "codex" / "segmentation.jsonl").read_text().splitlines()
    return (parse_codex(codex_records(lines), workspace="/tmp/aeval-record/codex/workspace")
            .events, ".agents/skills/segmentation")


def claude_code() -> tuple[list[dict[str, Any]], str]:
    return (parse_records(read_raw(DATA / "claude-code" / "edits-skill.raw.jsonl")).events,
            ".claude/skills/segmentation")


def opencode() -> tuple[list[dict[str, Any]], str]:
    lines = (DATA / "opencode" / "segmentation.jsonl").read_text().splitlines()
    return (parse_opencode(opencode_records(lines),
                           workspace="/tmp/aeval-record/opencode/workspace").events,
            ".opencode/skills/segmentation")


def live(parsed: list[dict[str, Any]]) -> list[Event]:
    """The parsed events as the recorder numbers them, one second apart, after the prompt
    (event 0): each call's window runs from its tool_call to its tool_result."""
    return [EVENT_ADAPTER.validate_python({"seq": 0, "t": 0.0, "kind": "message",
                                           "role": "user", "text": "Train ..."})] + [
        EVENT_ADAPTER.validate_python({"seq": i, "t": float(i), **e})
        for i, e in enumerate(parsed, 1)]


def failing_command(events: list[Event]) -> ToolCallEvent:
    return next(e for e in events if isinstance(e, ToolCallEvent) and e.tool == "bash"
                and "segment_train" in e.input.get("command", ""))


@pytest.mark.parametrize("recorded", [codex, claude_code, opencode])
def test_an_edit_seen_during_a_failing_command_is_tied_to_the_call_whose_record_names_it(
        recorded):
    parsed, skill = recorded()
    events = live(parsed)
    failing = failing_command(events)
    (edit,) = [e for e in events if isinstance(e, ToolCallEvent) and e.tool == "edit_file"]
    assert failing.seq < edit.seq
    for at in (failing.t + 0.5, failing.t + 1.1):  # inside its window, just after its result
        seen = FileChange(path="SKILL.md", change="modified", diff="-a\n+b\n", at_s=at)
        (c,) = attribute_changes([seen], events, skill)
        assert (c.event_seq, c.tool, c.attribution) == (edit.seq, "edit_file", "recorded")


def test_the_codex_case_of_the_issue_event_5_is_the_failing_command_event_8_the_patch():
    events = live(codex()[0])
    assert failing_command(events).seq == 5
    seen = FileChange(path="SKILL.md", change="modified", diff="-a\n+b\n", at_s=5.5)
    (c,) = attribute_changes([seen], events, ".agents/skills/segmentation")
    assert (c.event_seq, c.attribution) == (8, "recorded")
    assert events[8].input["changes"] == [{"path": ".agents/skills/segmentation/SKILL.md",
                                           "kind": "update"}]


def test_a_change_no_record_names_is_still_tied_by_time():
    """The runner was changed while the failing command ran (no tool's record names it): the
    command it happened during, as before."""
    parsed, skill = codex()
    events = live(parsed)
    failing = failing_command(events)
    seen = FileChange(path="scripts/run.py", change="modified", diff="-a\n+b\n",
                      at_s=failing.t + 0.5)
    (c,) = attribute_changes([seen], events, skill)
    assert (c.event_seq, c.tool, c.attribution) == (failing.seq, "bash", "during_call")
