"""Hostile input that reached aeval's own readers (issue 44, item 2 and 3's leftovers): a
broken line inside events.jsonl loses only itself, a tool input nested hundreds of levels
deep is recorded (cut at the bound) instead of raising out of the runtime, and two case ids
that differ only in characters a Prefect key cannot hold get two artifact keys."""

from __future__ import annotations

import json
import re

from aeval.events import ToolCallEvent, ToolResultEvent, read_events, render_transcript
from aeval.isolation.redact import Redactor
from aeval.runtime.protocol import EventRecorder
from aeval.tasks.run.prefect_artifacts import artifact_key

PREFECT_KEY = re.compile(r"[a-z0-9-]+")


def recorded_session(path):
    rec = EventRecorder(path, Redactor())
    rec.message("user", "Summarise the quarterly sales in data/q3.csv")
    rec.tool_call("c1", "bash", {"command": "python3 $SKILL_DIR/scripts/summarise.py data/q3.csv"})
    rec.tool_result("c1", "bash", True, exit_code=0, output="total: 48210\n")
    rec.end("completed", "Q3 sales total 48,210.")
    rec.close()


def test_a_broken_line_in_the_middle_of_events_loses_only_that_line(tmp_path):
    path = tmp_path / "events.jsonl"
    recorded_session(path)
    lines = path.read_text().splitlines()
    for bad in ('{"seq": 2, "kind": "tool_result", "call_id": ',  # torn, then appended to
                "\x00\x00garbage written by something else",
                "[" * 5000 + "]" * 5000):  # a line nested past any reader
        path.write_text("\n".join([*lines[:2], bad, *lines[2:]]) + "\n")
        events = read_events(path)
        assert len(events) == len(lines) and events.skipped == 1
        assert any(isinstance(e, ToolResultEvent) and e.output == "total: 48210\n"
                   for e in events)
    path.write_bytes(b"\n".join(line.encode() for line in lines[:1]) + b"\n\xff\xfe\n"
                     + b"\n".join(line.encode() for line in lines[1:]) + b"\n")
    events = read_events(path)  # a line that is not even UTF-8
    assert len(events) == len(lines) and events.skipped == 1
    # the transcript the grader and the reader see says a line is missing, and that nothing
    # is missing when nothing is
    shown = render_transcript(events, "q3 summary")
    assert "1 line(s) of events.jsonl were not events" in shown and "total: 48210" in shown
    path.write_text("\n".join(lines) + "\n")
    assert "were not events" not in render_transcript(read_events(path), "q3 summary")


def test_a_tool_input_nested_hundreds_deep_is_recorded_cut(tmp_path):
    rec = EventRecorder(tmp_path / "events.jsonl", Redactor())
    for deep in (250, 5_000, 200_000):
        nested: object = "leaf"
        for _ in range(deep):
            nested = [nested]
        event = rec.tool_call(f"c{deep}", "write", {"path": "out.json", "content": nested})
        assert isinstance(event, ToolCallEvent) and event.input["path"] == "out.json"
        assert "nested deeper" in json.dumps(event.input)
    shallow = {"path": "a.json", "content": {"rows": [[1, 2], [3, 4]]}}
    assert rec.tool_call("c-ok", "write", shallow).input == shallow  # kept whole
    rec.close()
    assert len(read_events(tmp_path / "events.jsonl")) == 4


def test_case_ids_that_differ_only_in_punctuation_get_their_own_artifact_keys():
    pairs = [("c", "c."), ("train", "Train"), ("v1.2", "v1-2"), ("a_b", "a-b"),
             ("smoke test", "smoke-test"), ("ünïcode", "unicode")]
    for one, other in pairs:
        k1 = artifact_key("case", "csv-stats", one, "literal")
        k2 = artifact_key("case", "csv-stats", other, "literal")
        assert k1 != k2, (one, other)
        assert PREFECT_KEY.fullmatch(k1) and PREFECT_KEY.fullmatch(k2)
    # the dash between parts cannot shift a name from one part into the next
    assert artifact_key("case", "a-b", "c", "literal") != artifact_key("case", "a", "b-c",
                                                                      "literal")
    long = artifact_key("case", "x" * 300, "c", "literal")
    assert len(long) <= 200 and long != artifact_key("case", "x" * 300, "d", "literal")
    assert artifact_key("run", "summary") == "run-summary"  # plain keys stay as they were
