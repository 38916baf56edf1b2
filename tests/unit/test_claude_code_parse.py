"""The pure `claude-code` stream parser on raw logs recorded from real Claude Code runs
(tests/data/claude-code/, re-recorded with its capture.py) and on small hand-made records."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aeval.adapters.runtimes._claude_code_parse import (
    START,
    STOP,
    api_error,
    message_record,
    parse_records,
    read_raw,
)
from aeval.errors import ModelPermanentError, ModelTransientError, RuntimeUnavailable
from aeval.events import EVENT_ADAPTER

DATA = Path(__file__).resolve().parents[1] / "data" / "claude-code"
SKILL_MD = ".claude/skills/segmentation/SKILL.md"


def raw(name: str) -> list[dict[str, Any]]:
    return read_raw(DATA / f"{name}.raw.jsonl")


def of(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["kind"] == kind]


def test_event_kinds_order_and_normalized_tool_names():
    run = parse_records(raw("edits-skill"))
    kinds = [e["kind"] for e in run.events]
    assert kinds == ["message", "message", "tool_call", "tool_result",
                     "tool_call", "tool_call", "tool_result", "tool_result",
                     "tool_call", "tool_result", "message", "tool_call", "tool_result",
                     "tool_call", "tool_result", "tool_call", "tool_result", "message",
                     "usage", "end"]
    assert run.events[0]["role"] == "user" and run.events[0]["text"].startswith("Train a segm")
    assert [e["tool"] for e in of(run.events, "tool_call")] == [
        "read_file", "list_dir", "Grep", "bash", "edit_file", "bash", "write_file"]
    # every result names the same tool as its call
    calls = {e["call_id"]: e["tool"] for e in of(run.events, "tool_call")}
    assert all(calls[e["call_id"]] == e["tool"] for e in of(run.events, "tool_result"))
    assert run.status == "completed" and run.error is None
    assert run.events[-1] == {"kind": "end", "status": "completed", "final_text": run.final_text}
    assert "mIoU=0.8125" in run.final_text
    for fields in run.events:  # every dict is a valid event once numbered
        EVENT_ADAPTER.validate_python({"seq": 0, "t": 0.0, **fields})


def test_tool_results_exit_codes_errors_and_paths_written():
    results = of(parse_records(raw("edits-skill")).events, "tool_result")
    read, glob, grep, failed, edit, rerun, write = results
    assert failed["ok"] is False and failed["exit_code"] == 1
    assert "KeyError: 'segment_train'" in failed["output"]
    assert rerun["ok"] is True and rerun["exit_code"] == 0 and "mIoU=0.8125" in rerun["output"]
    assert edit["ok"] is True and edit["paths_written"] == [SKILL_MD]
    assert write["paths_written"] == ["outputs/notes.md"]
    assert read["exit_code"] is None and read["paths_written"] == [] and "segment_train" in \
        read["output"]
    assert glob["output"].endswith("run.py") and "SKILL.md" in grep["output"]
    assert all(r["duration_s"] is not None and r["duration_s"] >= 0 for r in results)


def test_usage_is_deduplicated_per_message_and_totals_come_from_the_result():
    records = raw("edits-skill")
    assistant = [r for r in records if r["_type"] == "AssistantMessage"]
    ids = [r["message_id"] for r in assistant]
    assert len(ids) > len(set(ids))  # text and tool_use blocks of one answer share an id
    result = next(r for r in records if r["_type"] == "ResultMessage")["usage"]
    run = parse_records(records)
    u = run.usage
    assert u.requests == len(set(ids)) == 7
    assert u.input_tokens == result["input_tokens"]  # Anthropic's input excludes the cache
    assert u.cached_input_tokens == result["cache_read_input_tokens"] > 0
    assert u.cache_write_tokens == result["cache_creation_input_tokens"]
    assert u.output_tokens == result["output_tokens"] > len(set(ids))
    # de-duplicated per-message counts agree with the totals; a naive sum would not
    first = {r["message_id"]: r["usage"] for r in reversed(assistant)}
    assert sum(x["cache_read_input_tokens"] for x in first.values()) == u.cached_input_tokens
    assert sum(r["usage"]["cache_read_input_tokens"] for r in assistant) > u.cached_input_tokens
    (usage_event,) = of(run.events, "usage")
    assert usage_event["usage"] == u.model_dump() and usage_event["model"] == "claude-sonnet-4-5"


def test_reparsing_gives_back_the_events_the_live_run_emitted():
    for name in ("edits-skill", "overloaded-529", "timeout"):
        live = [json.loads(x) for x in (DATA / f"{name}.events.jsonl").read_text().splitlines()]
        assert parse_records(raw(name)).events == [
            {k: v for k, v in e.items() if k not in ("seq", "t")} for e in live], name


def test_overloaded_api_error_is_transient_and_ends_with_an_error_event():
    run = parse_records(raw("overloaded-529"))
    assert isinstance(run.error, ModelTransientError) and run.error.status_code == 529
    assert [e["kind"] for e in run.events] == ["message", "error"]  # no synthetic message
    assert run.events[-1]["transient"] is True and "529" in run.events[-1]["message"]
    assert run.events[-1]["error_type"] == "ModelTransientError"


def test_timeout_keeps_the_partial_run_and_its_usage():
    run = parse_records(raw("timeout"))
    assert run.status == "timeout" and run.error is None
    (result,) = of(run.events, "tool_result")
    assert result["ok"] is False and result["exit_code"] == 137  # killed with the CLI
    assert run.usage.requests == 1 and run.usage.input_tokens > 0  # from the messages
    assert run.events[-1]["kind"] == "end" and run.events[-1]["status"] == "timeout"


# ---- hand-made records ---------------------------------------------------------------------


def assistant(mid: str, *blocks: dict, **kw: Any) -> dict:
    return {"_type": "AssistantMessage", "content": list(blocks), "model": "m",
            "message_id": mid, "usage": {"input_tokens": 10, "output_tokens": 1}, **kw}


def tool_use(call_id: str, name: str, **args: Any) -> dict:
    return {"_type": "ToolUseBlock", "id": call_id, "name": name, "input": args}


def tool_result(call_id: str, content: Any, is_error: bool | None = None) -> dict:
    return {"_type": "UserMessage", "content": [{"_type": "ToolResultBlock",
                                                "tool_use_id": call_id, "content": content,
                                                "is_error": is_error}]}


def result(**kw: Any) -> dict:
    return {"_type": "ResultMessage", "subtype": "success", "is_error": False, "num_turns": 1,
            "usage": {"input_tokens": 10, "output_tokens": 5}, "result": "ok", **kw}


def test_written_paths_are_workspace_relative_and_only_when_the_write_worked():
    records = [
        {"_type": START, "workspace": "/w/ws", "prompt": "p"},
        assistant("m1", tool_use("a", "Write", file_path="/w/ws/out/a.txt", content="x"),
                  tool_use("b", "Write", file_path="/elsewhere/b.txt", content="x"),
                  tool_use("c", "Edit", file_path="./x/../c.md", old_string="1", new_string="2"),
                  tool_use("d", "MultiEdit", file_path="d.md", edits=[]),
                  tool_use("e", "Write", file_path="e.txt", content="x"),
                  tool_use("f", "Bash", command="false")),
        tool_result("a", "ok"), tool_result("b", "ok"), tool_result("c", "ok"),
        tool_result("d", [{"type": "text", "text": "done"}]),
        tool_result("e", "<tool_use_error>File has not been read yet</tool_use_error>", True),
        tool_result("f", "Permission denied", True),
        result(),
    ]
    results = of(parse_records(records).events, "tool_result")
    assert [r["paths_written"] for r in results] == [["out/a.txt"], [], ["c.md"], ["d.md"], [],
                                                     []]
    assert [r["tool"] for r in results] == ["write_file"] * 2 + ["edit_file"] * 2 + [
        "write_file", "bash"]
    assert results[3]["output"] == "done"
    assert results[4]["ok"] is False
    assert results[5]["ok"] is False and results[5]["exit_code"] is None  # no "Exit code N"


def test_long_tool_output_is_capped():
    records = [assistant("m1", tool_use("a", "Bash", command="yes")),
               tool_result("a", "y\n" * 5000), result()]
    (res,) = of(parse_records(records, cap=300).events, "tool_result")
    assert res["truncated"] is True and len(res["output"]) < 400


def test_max_turns_and_execution_errors():
    run = parse_records([assistant("m1", {"_type": "TextBlock", "text": "thinking aloud"}),
                         result(subtype="error_max_turns", is_error=True, num_turns=3)])
    assert run.status == "max_turns" and run.error is None
    assert run.events[-1]["kind"] == "end" and run.events[-1]["status"] == "max_turns"
    run = parse_records([result(subtype="error_during_execution", is_error=True,
                                errors=["tool crashed"])])
    assert run.status == "failed" and run.error is None
    assert [e["kind"] for e in run.events[-2:]] == ["error", "end"]
    assert "tool crashed" in run.events[-2]["message"]


def test_a_stream_without_a_result_is_a_runtime_failure():
    run = parse_records([{"_type": START, "prompt": "p"},
                         {"_type": STOP, "reason": "exception", "message": "ProcessError: boom"}])
    assert isinstance(run.error, RuntimeUnavailable) and "boom" in str(run.error)
    assert run.events[-1]["kind"] == "error" and run.events[-1]["transient"] is False


@pytest.mark.parametrize(("status", "kind", "text", "transient"), [
    (529, "server_error", "API Error: 529 overloaded", True),
    (429, "rate_limit", "API Error: Request rejected (429)", True),
    (500, "server_error", "API Error: 500", True),
    (None, "server_error", "API Error: Connection refused (ECONNREFUSED)", True),
    (None, "unknown", "API Error: Request timed out", True),
    (401, "authentication_failed", "Failed to authenticate. API Error: 401", False),
    (400, "invalid_request", "API Error: 400 prompt is too long", False),
    (None, "billing_error", "Credit balance is too low", False),
])
def test_api_errors_are_classified(status, kind, text, transient):
    err = api_error(text, status, kind)
    assert isinstance(err, ModelTransientError if transient else ModelPermanentError)


def test_status_is_read_from_the_message_when_the_result_lacks_it():
    records = [assistant("x", {"_type": "TextBlock", "text": "API Error: Request rejected (429)"},
                         model="<synthetic>", error="rate_limit"),
               result(is_error=True, result="API Error: Request rejected (429)")]
    run = parse_records(records)
    assert isinstance(run.error, ModelTransientError) and run.error.status_code == 429
    assert of(run.events, "message") == [] and run.usage.requests == 0


def test_sdk_messages_become_tagged_records():
    @dataclass
    class TextBlock:
        text: str

    @dataclass
    class AssistantMessage:
        content: list
        model: str
        usage: dict = field(default_factory=dict)

    rec = message_record(AssistantMessage([TextBlock("hi")], "m", {"input_tokens": 1}), 1.23456)
    assert rec == {"_type": "AssistantMessage", "_t": 1.235, "model": "m",
                   "content": [{"_type": "TextBlock", "text": "hi"}],
                   "usage": {"input_tokens": 1}}
    assert json.loads(json.dumps(rec)) == rec
    assert parse_records([rec])  # and the parser reads it back


def test_calls_claude_code_did_not_run_are_refused_with_the_reason_and_no_exit_code():
    """Texts as Claude Code 2.1 answers them (captured against the scripted server): a tool
    it has not got, arguments its schema rejects, and a permission aeval denied. A Bash
    command that ran and failed is not a refusal, nor is a file tool's own error."""
    records = [
        assistant("m1", tool_use("a", "bash", command="python3 run.py x"),
                  tool_use("b", "Edit", file_path="SKILL.md"),
                  tool_use("c", "WebFetch", url="https://example.com", prompt="x"),
                  tool_use("d", "Bash", command="false"),
                  tool_use("e", "Write", file_path="e.txt", content="x")),
        tool_result("a", "<tool_use_error>Error: No such tool available: bash. Tool names are "
                         "case-sensitive: call Bash instead.</tool_use_error>", True),
        tool_result("b", "<tool_use_error>InputValidationError: Edit failed due to the "
                         "following issues:\nThe required parameter `old_string` is "
                         "missing</tool_use_error>", True),
        tool_result("c", "aeval denied this call: WebFetch is not permitted in this evaluation "
                         "run (nobody can approve it)", True),
        tool_result("d", "Exit code 1\nNo such tool available", True),
        tool_result("e", "<tool_use_error>File has not been read yet</tool_use_error>", True),
        result(),
    ]
    results = of(parse_records(records).events, "tool_result")
    assert [r.get("refused") for r in results] == [
        "unknown_tool", "invalid_arguments", "policy", None, None]
    assert [r["exit_code"] for r in results] == [None, None, None, 1, None]
    assert all(EVENT_ADAPTER.validate_python({"seq": 0, "t": 0, **r}) for r in results)
