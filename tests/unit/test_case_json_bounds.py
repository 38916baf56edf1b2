"""JSON a case produced (a CLI runtime's output lines, a model's tool arguments, a grader's
answer) is read within bounds: a line nested 200,000 deep or holding an integer of a million
digits is that line's problem, skipped or refused as data; the records around it are read as
before, and aeval's own process never raises RecursionError (which no ``except ValueError``
of a reader catches: the case was `internal`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aeval import bounded_json
from aeval.adapters.llm import extract_json
from aeval.adapters.runtimes._claude_code_parse import read_raw
from aeval.adapters.runtimes._cli import stream_jsonl
from aeval.adapters.runtimes._codex_parse import parse_codex, read_records

DATA = Path(__file__).resolve().parent.parent / "data" / "codex"
WS = "/tmp/aeval-record/codex/workspace"
DEEP = "[" * 200_000 + "]" * 200_000
HUGE = "9" * 1_000_000


def test_a_codex_log_with_a_deep_line_and_deep_tool_arguments_still_parses():
    """A tool printed a 200,000-deep array on Codex's stdout, and the model called a tool
    with arguments nested as deep (Codex's session record keeps them verbatim): both are
    data; every other call of the run is still an event, in order."""
    lines = (DATA / "refused.jsonl").read_text().splitlines()
    hostile = []
    for line in lines:
        record = json.loads(line)
        payload = record.get("payload", {})
        if payload.get("type") == "function_call" and payload.get("name") == "bash":
            payload["arguments"] = '{"command": ' + DEEP + "}"
            line = json.dumps(record)
        hostile.append(line)
    hostile.insert(3, DEEP)
    hostile.insert(4, '{"type": "item.completed", "n": ' + HUGE + "}")
    run = parse_codex(read_records(hostile), workspace=WS)
    calls = [e for e in run.events if e["kind"] == "tool_call"]
    assert len(calls) == 5 and run.tool_calls == 5
    assert calls[1]["tool"] == "bash"
    assert calls[1]["input"]["input"].startswith('{"command": [[[')  # the raw text, as data


def test_a_cli_printing_a_deep_line_hands_on_every_other_record(tmp_path):
    """A real process writes what a CLI would, with a hostile line in the middle."""
    script = ("import sys\n"
              "print('{\"type\": \"thread.started\"}')\n"
              "print('{\"type\": \"item\", \"x\": ' + '[' * 200000 + ']' * 200000 + '}')\n"
              "print('{\"type\": \"item\", \"n\": ' + '9' * 1000000 + '}')\n"
              "print('{\"type\": \"turn.completed\"}')\n")
    seen: list[str] = []
    outcome = stream_jsonl([sys.executable, "-c", script], tmp_path, {}, 60,
                           tmp_path / "raw.jsonl", lambda r: seen.append(r["type"]) or False)
    assert outcome.returncode == 0
    assert seen == ["thread.started", "turn.completed"]
    assert len((tmp_path / "raw.jsonl").read_text().splitlines()) == 4  # the raw log keeps all


def test_a_claude_code_raw_log_with_a_deep_last_line_is_a_torn_line(tmp_path):
    raw = tmp_path / "raw.jsonl"
    raw.write_text('{"_type": "aeval.start", "_t": 0.0}\n' + DEEP + "\n")
    assert read_raw(raw) == [{"_type": "aeval.start", "_t": 0.0}]


def test_a_grader_answer_nested_too_deep_is_an_invalid_answer():
    """The grader's answer is re-asked when it is not valid: a ValueError, never a crash."""
    with pytest.raises(ValueError, match="nested deeper than"):
        extract_json('{"expectations": ' + DEEP + "}")


def test_a_grader_answer_with_an_open_fence_and_a_long_blank_run_is_read_at_once():
    """An answer that opens a fence it never closes, 200,000 blanks before its JSON: the
    fence pattern took quadratic time (minutes); a hang is this child's timeout."""
    code = ("from aeval.adapters.llm import extract_json\n"
            "answer = 'Here it is: ```json' + ' ' * 200_000 + '{\"ok\": true}'\n"
            "assert extract_json(answer) == {'ok': True}\n"
            "assert extract_json('```json\\n  {\"a\": 1}\\n```') == {'a': 1}\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("text, why", [
    (DEEP, "nested deeper than 100 levels"),
    ('{"n": ' + HUGE + "}", "an integer of 1000000 digits"),
    ('{"n": NaN}', "NaN is not a JSON number"),
    ("[" * 101 + "]" * 101, "nested deeper than 100 levels"),
    ('{"a": "' + "x" * 100 + '"}', "over the 50 read"),
])
def test_the_reader_says_which_bound(text, why):
    with pytest.raises(bounded_json.UnreadableJson, match=why):
        bounded_json.loads(text, max_bytes=50 if "x" * 100 in text else bounded_json.MAX_BYTES)


def test_a_record_within_the_bounds_reads_as_json_does():
    text = json.dumps({"cmd": "ls", "deep": [[[[1]]]] * 3, "n": 10 ** 50})
    assert bounded_json.loads(text) == json.loads(text)
    assert bounded_json.loads("[" * 100 + "]" * 100) == json.loads("[" * 100 + "]" * 100)
