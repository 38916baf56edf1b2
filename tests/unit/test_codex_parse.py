"""The pure Codex log parser on raw logs recorded from real `codex exec --json` runs."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from aeval.adapters.runtimes._codex_parse import (
    CodexParser,
    classify_error_text,
    parse_codex,
    read_records,
    unwrap_command,
    usage_from_codex,
)
from aeval.events import EVENT_ADAPTER

DATA = Path(__file__).resolve().parent.parent / "data" / "codex"
WS = "/tmp/aeval-record/codex/workspace"
SKILL_MD = ".agents/skills/segmentation/SKILL.md"


def records(name: str) -> list[dict]:
    return read_records((DATA / name).read_text().splitlines())


def test_segmentation_log_maps_to_normalized_events_in_order():
    run = parse_codex(records("segmentation.jsonl"), workspace=WS, model="openai/scripted")
    kinds = [e["kind"] for e in run.events]
    assert kinds == ["message", "message", "tool_call", "tool_result", "tool_call",
                     "tool_result", "message", "tool_call", "tool_result", "tool_call",
                     "tool_result", "tool_call", "tool_result", "message", "usage"]
    for i, e in enumerate(run.events):  # every dict is a valid event once numbered
        EVENT_ADAPTER.validate_python({"seq": i, "t": 0, **e})
    calls = [e for e in run.events if e["kind"] == "tool_call"]
    assert [c["tool"] for c in calls] == ["bash", "bash", "edit_file", "bash", "bash"]
    assert calls[0]["input"] == {"command": f"cat {SKILL_MD}"}  # `/bin/bash -c '...'` unwrapped
    results = [e for e in run.events if e["kind"] == "tool_result"]
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]
    assert [r.get("exit_code") for r in results] == [0, 1, None, 0, 0]
    assert [r["ok"] for r in results] == [True, False, True, True, True]
    assert "KeyError: 'segment_train'" in results[1]["output"]
    assert results[2]["paths_written"] == [SKILL_MD]  # workspace-relative
    assert calls[2]["input"]["changes"] == [{"path": SKILL_MD, "kind": "update"}]
    assert "mIoU=0.8125" in results[3]["output"]
    assert run.events[0] == {"kind": "message", "role": "system",
                             "text": "[codex] Model metadata for `scripted` not found. "
                                     "Defaulting to fallback metadata; this can degrade "
                                     "performance and cause issues."}
    assert run.final_text.startswith("Done: trained, mIoU=0.8125")
    assert run.failure is None and not run.turn_failed
    assert run.tool_calls == 5 and run.turns_completed == 1


def test_usage_excludes_cached_tokens():
    run = parse_codex(records("segmentation.jsonl"), workspace=WS)
    (raw,) = [r["usage"] for r in records("segmentation.jsonl") if r["type"] == "turn.completed"]
    assert raw["cached_input_tokens"] > 0
    assert run.usage.cached_input_tokens == raw["cached_input_tokens"]
    assert run.usage.input_tokens == raw["input_tokens"] - raw["cached_input_tokens"]
    assert run.usage.prompt_tokens == raw["input_tokens"]
    assert run.usage.output_tokens == raw["output_tokens"]
    assert usage_from_codex({"input_tokens": 100, "cached_input_tokens": 30,
                             "cache_write_input_tokens": 20, "output_tokens": 7}).model_dump() \
        == {"input_tokens": 50, "cached_input_tokens": 30, "cache_write_tokens": 20,
            "output_tokens": 7, "requests": 0}


def test_turn_failed_with_429_is_a_transient_failure_reported_once():
    run = parse_codex(records("rate_limited.jsonl"), workspace=WS)
    errors = [e for e in run.events if e["kind"] == "error"]
    assert len(errors) == 1  # `error` then `turn.failed` with the same message
    assert errors[0]["transient"] is True and "429" in errors[0]["message"]
    assert run.turn_failed and run.failure.transient and run.failure.status_code == 429
    assert run.usage.requests == 0 and run.final_text == ""


def test_error_classification():
    assert classify_error_text("stream disconnected before completion: error sending "
                               "request").transient
    assert classify_error_text("We're currently experiencing high demand, which may cause "
                               "temporary errors.").transient
    assert classify_error_text("unexpected status 503 Service Unavailable").status_code == 503
    bad = classify_error_text('{"error":{"message":"bad","type":"invalid_request_error"}} 400')
    assert not bad.transient and bad.status_code == 400
    assert not classify_error_text("unexpected status 401 Unauthorized").transient


def test_incremental_feed_equals_whole_parse_and_started_items_call_once():
    recs = records("segmentation.jsonl")
    parser = CodexParser(workspace=WS)
    live = [e for r in recs for e in parser.feed(r)]
    assert live == parse_codex(recs, workspace=WS).events
    started = next(r for r in recs if r["type"] == "item.started")
    again = CodexParser()
    assert [e["kind"] for e in again.feed(started)] == ["tool_call"]
    assert again.feed(started) == []  # the same item id is called once


def test_read_records_skips_non_json_and_torn_lines():
    assert read_records(["noise", '{"type": "a"}', "", '{"type": "b"', "[1]"]) == [
        {"type": "a"}]


def test_unwrap_command():
    assert unwrap_command("/bin/bash -lc 'ls -la; env | sort'") == "ls -la; env | sort"
    assert unwrap_command("/bin/bash -c 'echo \"x\"'") == 'echo "x"'
    assert unwrap_command("python3 x.py") == "python3 x.py"
    assert unwrap_command("bash -c 'unterminated") == "bash -c 'unterminated"


def test_calls_codex_did_not_carry_out_are_events_from_its_session_record():
    """Codex's exec stream leaves out a call of a tool it has not got and a command its
    approval policy rejected; its session record (interleaved into raw.jsonl by the adapter)
    has them. Each becomes a tool_call and a refused tool_result, in the order they
    happened, with no duplicate of the calls the exec stream reports; each model response
    counts as one request."""
    run = parse_codex(records("refused.jsonl"), workspace=WS)
    calls = [e for e in run.events if e["kind"] == "tool_call"]
    results = [e for e in run.events if e["kind"] == "tool_result"]
    assert [c["input"]["command"] for c in calls] == [
        "cat .agents/skills/segmentation/SKILL.md | head -3", "echo hi",
        "python3 .agents/skills/segmentation/scripts/run.py segment_train --data fixtures "
        "--out outputs", "touch /etc/aeval-x",
        "sed -i 's/segment_train/train/' .agents/skills/segmentation/scripts/run.py; echo done"]
    assert [(r["ok"], r.get("refused")) for r in results] == [
        (True, None), (False, "unknown_tool"), (False, None), (False, "policy"), (True, None)]
    assert results[1]["output"] == "unsupported call: bash"
    assert "approval policy is Never" in results[3]["output"]
    assert run.tool_calls == 5  # refused calls count towards max_turns too
    assert run.usage.requests == 6  # five tool turns and the final answer
    assert all(EVENT_ADAPTER.validate_python({"seq": 0, "t": 0, **e}) for e in run.events)


def test_session_records_carry_the_times_they_happened_when_the_start_is_known():
    recs = records("refused.jsonl")
    first = next(r for r in recs if r.get("type") == "response_item")
    start = datetime.fromisoformat(first["timestamp"].replace("Z", "+00:00")).timestamp() - 2
    run = parse_codex(recs, workspace=WS)
    timed = CodexParser(workspace=WS, start_epoch=start)
    events = [e for r in recs for e in timed.feed(r)]
    refused = [e for e in events if e.get("refused")]
    assert refused and all(e["t"] >= 2 for e in refused)
    assert [{k: v for k, v in e.items() if k != "t"} for e in events] == run.events[:len(events)]


def test_a_file_change_that_failed_to_apply_records_no_path():
    """Only a patch Codex applied is its record of a change: a failed one changed nothing."""
    change = {"id": "item_9", "type": "file_change",
              "changes": [{"path": f"{WS}/{SKILL_MD}", "kind": "update"}]}
    parser = CodexParser(workspace=WS)
    (_, failed) = parser.feed({"type": "item.completed", "item": {**change, "status": "failed"}})
    assert failed["ok"] is False and failed["paths_written"] == []
    (_, done) = CodexParser(workspace=WS).feed(
        {"type": "item.completed", "item": {**change, "status": "completed"}})
    assert done["ok"] is True and done["paths_written"] == [SKILL_MD]
