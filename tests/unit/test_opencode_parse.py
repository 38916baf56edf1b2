"""The pure OpenCode log parser on raw logs recorded from real `opencode run --format json`
runs."""

from __future__ import annotations

from pathlib import Path

from aeval.adapters.runtimes._opencode_parse import (
    OpenCodeParser,
    normalize_tool,
    parse_opencode,
    read_records,
)
from aeval.events import EVENT_ADAPTER

DATA = Path(__file__).resolve().parent.parent / "data" / "opencode"
WS = "/tmp/aeval-record/opencode/workspace"
SKILL_MD = ".opencode/skills/segmentation/SKILL.md"


def records(name: str) -> list[dict]:
    return read_records((DATA / name).read_text().splitlines())


def test_segmentation_log_maps_to_normalized_events_in_order():
    run = parse_opencode(records("segmentation.jsonl"), workspace=WS, model="mock/scripted")
    kinds = [e["kind"] for e in run.events]
    assert kinds == ["message", "tool_call", "tool_result", "usage",
                     "tool_call", "tool_result", "usage",
                     "message", "tool_call", "tool_result", "usage",
                     "tool_call", "tool_result", "usage",
                     "tool_call", "tool_result", "usage",
                     "message", "usage"]
    for i, e in enumerate(run.events):
        EVENT_ADAPTER.validate_python({"seq": i, "t": 0, **e})
    calls = [e for e in run.events if e["kind"] == "tool_call"]
    assert [c["tool"] for c in calls] == ["read_file", "bash", "edit_file", "bash", "bash"]
    results = [e for e in run.events if e["kind"] == "tool_result"]
    assert [r["exit_code"] for r in results] == [None, 1, None, 0, 0]
    assert [r["ok"] for r in results] == [True, False, True, True, True]
    assert "KeyError: 'segment_train'" in results[1]["output"]
    assert calls[2]["input"]["path"] == SKILL_MD
    assert results[2]["paths_written"] == [SKILL_MD]
    assert results[0]["paths_written"] == []  # a read writes nothing
    assert all(r["duration_s"] is not None and r["duration_s"] >= 0 for r in results)
    assert run.final_text.startswith("Done: trained, mIoU=0.8125")
    assert run.failure is None and run.steps == 6 and run.last_reason == "stop"


def test_usage_input_excludes_cache_reads_and_output_includes_reasoning():
    run = parse_opencode(records("segmentation.jsonl"), workspace=WS)
    usages = [e["usage"] for e in run.events if e["kind"] == "usage"]
    # the fourth request was scripted: 100 uncached + 50 cached input, 20 output (5 reasoning)
    assert usages[3] == {"input_tokens": 100, "cached_input_tokens": 50,
                         "cache_write_tokens": 0, "output_tokens": 20, "requests": 1}
    assert run.usage.requests == 6 and run.usage.cached_input_tokens > run.usage.input_tokens
    assert run.usage.input_tokens == sum(u["input_tokens"] for u in usages)


def test_rate_limit_error_is_transient():
    run = parse_opencode(records("rate_limited.jsonl"), workspace=WS)
    (err,) = run.events
    assert err["kind"] == "error" and err["transient"] is True and "429" in err["message"]
    assert run.failure.transient and run.failure.status_code == 429
    assert run.steps == 0 and run.usage.requests == 0


def test_error_classification_by_status_and_name():
    parser = OpenCodeParser()
    (bad,) = parser.feed({"type": "error", "error": {"name": "APIError", "data": {
        "message": "bad request", "statusCode": 400, "isRetryable": False}}})
    assert bad["transient"] is False and parser.failure.status_code == 400
    (auth,) = parser.feed({"type": "error", "error": {"name": "ProviderAuthError",
                                                      "data": {"message": "no key"}}})
    assert auth["transient"] is False
    (down,) = parser.feed({"type": "error", "error": {"name": "APIError", "data": {
        "message": "upstream", "statusCode": 502}}})
    assert down["transient"] is True


def test_tool_normalization_and_failed_tools():
    assert [normalize_tool(t) for t in ("bash", "read", "write", "edit", "list", "glob",
                                        "grep", "apply_patch")] == [
        "bash", "read_file", "write_file", "edit_file", "list_dir", "list_dir", "grep",
        "edit_file"]
    parser = OpenCodeParser(workspace="/w")
    call, result = parser.feed({"type": "tool_use", "part": {
        "tool": "write", "callID": "c1", "state": {
            "status": "error", "input": {"filePath": "/w/out/a.txt", "content": "x"},
            "error": "permission denied"}}})
    assert call["tool"] == "write_file" and call["input"]["path"] == "out/a.txt"
    assert result["ok"] is False and result["output"] == "permission denied"
    assert result["paths_written"] == []  # nothing was written


def test_incremental_feed_equals_whole_parse():
    recs = records("segmentation.jsonl")
    parser = OpenCodeParser(workspace=WS)
    assert [e for r in recs for e in parser.feed(r)] == parse_opencode(recs, WS).events


INVALID = ("Model tried to call unavailable tool 'read_file'. Available tools: bash, edit, glob, "
           "grep, invalid, read, skill, task, todowrite, webfetch, write.")


def test_a_call_opencode_could_not_make_is_the_tool_the_model_named_failed_and_refused():
    """OpenCode 1.18 turns a call of a tool it has not got into a *completed* call of its
    `invalid` tool (as recorded against the scripted server): that is a refused call of the
    named tool, not a success of a tool called `invalid`."""
    parser = OpenCodeParser(workspace="/w")
    call, result = parser.feed({"type": "tool_use", "part": {
        "tool": "invalid", "callID": "c1", "state": {
            "status": "completed", "input": {"tool": "read_file", "error": INVALID},
            "output": f"The arguments provided to the tool are invalid: {INVALID}"}}})
    assert call["tool"] == result["tool"] == "read_file"
    assert result["ok"] is False and result["refused"] == "unknown_tool"
    _, denied = parser.feed({"type": "tool_use", "part": {
        "tool": "bash", "callID": "c2", "state": {
            "status": "error", "input": {"command": "cat /etc/shadow"},
            "error": "The user rejected permission to use this specific tool call."}}})
    assert denied["ok"] is False and denied["refused"] == "policy"
    _, ran = parser.feed({"type": "tool_use", "part": {
        "tool": "bash", "callID": "c3", "state": {
            "status": "completed", "input": {"command": "false"}, "output": "",
            "metadata": {"exit": 1}}}})
    assert ran["ok"] is False and "refused" not in ran
    assert all(EVENT_ADAPTER.validate_python({"seq": 0, "t": 0, **e}) for e in (result, denied))


def test_with_the_run_start_a_finished_tool_call_carries_the_times_it_really_ran():
    parser = OpenCodeParser(workspace="/w", start_epoch=1000.0)
    call, result = parser.feed({"type": "tool_use", "part": {
        "tool": "bash", "callID": "c1", "state": {
            "status": "completed", "input": {"command": "sleep 1"}, "output": "",
            "time": {"start": 1002_500, "end": 1003_750}}}})
    assert (call["t"], result["t"]) == (2.5, 3.75)
    assert "t" not in OpenCodeParser(workspace="/w").feed({"type": "tool_use", "part": {
        "tool": "bash", "callID": "c1", "state": {"status": "completed", "input": {},
                                                  "time": {"start": 1, "end": 2}}}})[0]


def test_a_patch_records_every_file_its_text_names_and_a_failed_one_none():
    """OpenCode's apply_patch (offered to GPT models) has no filePath: the files it changed
    are the ones its patch text names, what ties a skill edit to it."""
    patch = (f"*** Begin Patch\n*** Update File: {WS}/{SKILL_MD}\n@@\n-a\n+b\n"
             "*** Add File: .opencode/skills/segmentation/refs/new.md\n+x\n"
             "*** Delete File: notes.md\n*** End Patch")

    def patched(status: str) -> dict:
        state = {"status": status, "input": {"patchText": patch}, "metadata": {},
                 **({"output": "Success."} if status == "completed" else {"error": "no"})}
        (_, result) = OpenCodeParser(workspace=WS).feed(
            {"type": "tool_use", "part": {"tool": "apply_patch", "callID": "p1",
                                          "state": state}})
        return result

    done = patched("completed")
    assert done["tool"] == "edit_file" and done["paths_written"] == [
        SKILL_MD, ".opencode/skills/segmentation/refs/new.md", "notes.md"]
    assert patched("error")["paths_written"] == []
