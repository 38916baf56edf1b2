"""`SessionTail`: aeval reading a CLI's session record inside the attempt, where the agent's
tools can write. It reads a growing file incrementally and never follows what the agent
could plant (a symlink at any level, a FIFO)."""

from __future__ import annotations

import json
import os
import threading

from aeval.adapters.runtimes._cli import SessionTail

PATTERN = ("sessions", "*", "rollout-*.jsonl")


def keep_calls(record: dict) -> bool:
    return record.get("type") == "call"


def test_lines_arrive_as_the_file_grows_and_only_complete_kept_records(tmp_path):
    day = tmp_path / "sessions" / "01"
    day.mkdir(parents=True)
    f = day / "rollout-1.jsonl"
    f.write_text(json.dumps({"type": "meta", "huge": "x" * 1000}) + "\n"
                 + json.dumps({"type": "call", "n": 1}) + "\n" + '{"type": "call", "n"')
    tail = SessionTail(tmp_path, PATTERN, keep_calls)
    assert [json.loads(x)["n"] for x in tail.lines()] == [1]
    with f.open("a") as fh:
        fh.write(': 2}\nnot json\n' + json.dumps({"type": "call", "n": 3}) + "\n")
    assert [json.loads(x)["n"] for x in tail.lines()] == [2, 3]
    assert tail.lines() == []
    tail.close()


def test_a_missing_file_is_no_lines_until_it_appears(tmp_path):
    tail = SessionTail(tmp_path, PATTERN, keep_calls)
    assert tail.lines() == []
    (tmp_path / "sessions" / "01").mkdir(parents=True)
    (tmp_path / "sessions" / "01" / "rollout-1.jsonl").write_text('{"type": "call"}\n')
    assert len(tail.lines()) == 1


def test_planted_symlinks_are_never_followed_at_any_level(tmp_path):
    secret = tmp_path / "host"
    (secret / "01").mkdir(parents=True)
    (secret / "01" / "rollout-1.jsonl").write_text('{"type": "call", "secret": 1}\n')
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "sessions").symlink_to(secret)  # the folder swapped for a link
    assert SessionTail(tmp_path / "home", PATTERN, keep_calls).lines() == []
    home2 = tmp_path / "home2"
    (home2 / "sessions").mkdir(parents=True)
    (home2 / "sessions" / "01").symlink_to(secret / "01")  # a day folder as a link
    assert SessionTail(home2, PATTERN, keep_calls).lines() == []
    home3 = tmp_path / "home3"
    (home3 / "sessions" / "01").mkdir(parents=True)
    (home3 / "sessions" / "01" / "rollout-1.jsonl").symlink_to(
        secret / "01" / "rollout-1.jsonl")  # the file itself as a link
    assert SessionTail(home3, PATTERN, keep_calls).lines() == []


def test_a_planted_fifo_does_not_hang_aeval(tmp_path):
    day = tmp_path / "sessions" / "01"
    day.mkdir(parents=True)
    os.mkfifo(day / "rollout-1.jsonl")
    out: list = []
    worker = threading.Thread(target=lambda: out.append(
        SessionTail(tmp_path, PATTERN, keep_calls).lines()), daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive() and out == [[]]


def test_reading_stops_at_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(SessionTail, "LIMIT", 1000)
    day = tmp_path / "sessions" / "01"
    day.mkdir(parents=True)
    line = json.dumps({"type": "call", "pad": "x" * 80}) + "\n"
    (day / "rollout-1.jsonl").write_text(line * 100)
    tail = SessionTail(tmp_path, PATTERN, keep_calls)
    got = len(tail.lines()) + len(tail.lines())
    assert 0 < got <= 1000 // len(line) + 1
