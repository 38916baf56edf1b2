"""Codex ``exec --json`` output -> normalized events, usage and final text. Pure: no I/O, no
clock, so a recorded raw.jsonl re-parses to the same events as the live run produced.

The native stream (Codex CLI 0.17x), one JSON object per line:

    thread.started {thread_id}            turn.started
    item.started | item.completed {item}  item types: command_execution{command,
        aggregated_output, exit_code, status}, file_change{changes[{path, kind}], status},
        agent_message{text}, reasoning{text}, mcp_tool_call, web_search, todo_list,
        error{message} (a warning: the run goes on)
    error {message}                        the turn is failing (model API, stream)
    turn.completed {usage{input_tokens, cached_input_tokens, cache_write_input_tokens,
        output_tokens, reasoning_output_tokens}}   input_tokens INCLUDES cached tokens
    turn.failed {error{message}}

Mapping: command_execution -> ``bash`` tool_call + tool_result (exit code); file_change ->
``write_file`` (only additions) or ``edit_file`` with ``paths_written`` relative to the
workspace; agent_message -> assistant message; item errors -> system message; ``error`` and
``turn.failed`` -> an error event and `CodexParser.failure`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from aeval.adapters.llm import TRANSIENT_STATUS

from aeval.events import Usage
from aeval.shell import cap_text

TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})
"""Item types that are tool calls: what the max-turns guard counts."""

_TRANSIENT_TEXT = re.compile(
    r"stream disconnected|exceeded retry limit|too many requests|rate.?limit|overloaded|"
    r"high demand|temporar|service unavailable|internal server error|bad gateway|"
    r"gateway timeout|timed? ?out|connection (?:refused|reset|closed|error)|"
    r"error sending request|server_error|try again", re.IGNORECASE)
_STATUS = re.compile(r"\b([45]\d\d)\b")


@dataclass(frozen=True)
class Failure:
    """Why the run could not go on: a model API or runtime error, classified."""

    message: str
    transient: bool
    status_code: int | None = None


def classify_error_text(text: str) -> Failure:
    """An error message from a CLI -> transient (408/409/429/5xx, disconnects, overload) or
    permanent (any other 4xx, invalid requests, auth)."""
    codes = [int(c) for c in _STATUS.findall(text)]
    transient = next((c for c in codes if c in TRANSIENT_STATUS or c >= 500), None)
    if transient is not None:
        return Failure(text, transient=True, status_code=transient)
    if codes:  # another 4xx: bad request, auth, not found
        return Failure(text, transient=False, status_code=codes[0])
    return Failure(text, transient=bool(_TRANSIENT_TEXT.search(text)))


def unwrap_command(command: str) -> str:
    """``/bin/bash -lc 'cmd'`` -> ``cmd`` (how Codex reports a shell call); else unchanged."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) == 3 and PurePosixPath(argv[0]).name in ("bash", "sh", "zsh") \
            and argv[1] in ("-c", "-lc"):
        return argv[2]
    return command


def relative_path(path: str, workspace: str | None) -> str:
    """``path`` relative to the workspace when it lies inside it (POSIX), else as given."""
    if workspace:
        p, ws = PurePosixPath(path), PurePosixPath(workspace)
        if p.is_relative_to(ws):
            return p.relative_to(ws).as_posix()
    return path


def usage_from_codex(usage: dict[str, Any]) -> Usage:
    """Codex usage (``input_tokens`` INCLUDES cached and cache-write tokens) -> aeval Usage
    (``input_tokens`` EXCLUDES them)."""
    def get(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    cached, written = get("cached_input_tokens"), get("cache_write_input_tokens")
    return Usage(input_tokens=max(0, get("input_tokens") - cached - written),
                 cached_input_tokens=cached, cache_write_tokens=written,
                 output_tokens=get("output_tokens"))


@dataclass
class CodexParser:
    """Feed it the records one by one (`feed`); it returns the normalized events for each
    (dicts: ``kind`` plus the event's fields, ready for `EventRecorder.emit`) and keeps the
    totals. ``workspace`` turns absolute paths into workspace-relative ones."""

    workspace: str | None = None
    output_cap: int = 16_000
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    final_text: str = ""
    failure: Failure | None = None
    turn_failed: bool = False
    tool_calls: int = 0
    turns_completed: int = 0
    thread_id: str | None = None
    _called: set[str] = field(default_factory=set)
    _last_error: str | None = None

    def feed(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        kind = record.get("type")
        if kind == "thread.started":
            self.thread_id = record.get("thread_id")
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = record.get("item")
            if isinstance(item, dict):
                return self._item(item, done=kind == "item.completed")
        elif kind == "turn.completed":
            self.turns_completed += 1
            usage = usage_from_codex(record.get("usage") or {})
            self.usage = self.usage + usage
            return [{"kind": "usage", "usage": usage.model_dump(), "model": self.model}]
        elif kind == "error":
            return self._error(str(record.get("message", "")))
        elif kind == "turn.failed":
            err = record.get("error") or {}
            message = str(err.get("message", "")) if isinstance(err, dict) else str(err)
            self.turn_failed = True
            return self._error(message or "the turn failed")
        return []

    def _error(self, message: str) -> list[dict[str, Any]]:
        failure = classify_error_text(message)
        self.failure = failure
        if message == self._last_error:  # turn.failed repeats the error that preceded it
            return []
        self._last_error = message
        return [{"kind": "error", "message": message, "transient": failure.transient,
                 "error_type": "codex"}]

    def _call(self, item: dict[str, Any]) -> list[dict[str, Any]]:
        """The tool_call of a tool item, once per item id."""
        item_id = str(item.get("id", ""))
        if item_id in self._called:
            return []
        self._called.add(item_id)
        self.tool_calls += 1
        tool, args = self._describe(item)
        return [{"kind": "tool_call", "call_id": item_id, "tool": tool, "input": args}]

    def _describe(self, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        kind = item.get("type")
        if kind == "command_execution":
            return "bash", {"command": unwrap_command(str(item.get("command", "")))}
        if kind == "file_change":
            changes = [{"path": relative_path(str(c.get("path", "")), self.workspace),
                        "kind": c.get("kind")} for c in item.get("changes") or []
                       if isinstance(c, dict)]
            only_adds = bool(changes) and all(c["kind"] == "add" for c in changes)
            first = changes[0]["path"] if changes else ""
            return ("write_file" if only_adds else "edit_file"), {"path": first,
                                                                  "changes": changes}
        if kind == "mcp_tool_call":
            name = f"mcp:{item.get('server', '?')}/{item.get('tool', '?')}"
            args = item.get("arguments")
            return name, args if isinstance(args, dict) else {"arguments": args}
        if kind == "web_search":
            return "web_search", {"query": item.get("query", "")}
        return str(kind), {}

    def _item(self, item: dict[str, Any], done: bool) -> list[dict[str, Any]]:
        kind = item.get("type")
        if kind in TOOL_ITEMS:
            out = self._call(item)
            if done:
                out.append(self._result(item))
            return out
        if not done:
            return []
        if kind == "agent_message":
            text = str(item.get("text", ""))
            self.final_text = text
            return [{"kind": "message", "role": "assistant", "text": text}]
        if kind == "error":
            return [{"kind": "message", "role": "system",
                     "text": f"[codex] {item.get('message', '')}"}]
        return []  # reasoning, todo_list: kept in the raw log only

    def _result(self, item: dict[str, Any]) -> dict[str, Any]:
        tool, args = self._describe(item)
        status = item.get("status")
        result: dict[str, Any] = {"kind": "tool_result", "call_id": str(item.get("id", "")),
                                  "tool": tool}
        if item.get("type") == "command_execution":
            code = item.get("exit_code")
            output, truncated = cap_text(str(item.get("aggregated_output") or ""),
                                         self.output_cap)
            result.update(ok=status == "completed" and code == 0,
                          exit_code=code if isinstance(code, int) else None,
                          output=output, truncated=truncated)
        elif item.get("type") == "file_change":
            paths = [c["path"] for c in args["changes"]]
            result.update(ok=status == "completed", paths_written=paths,
                          output="\n".join(f"{c['kind']} {c['path']}" for c in args["changes"]))
        else:
            text = item.get("result") or item.get("error") or ""
            output, truncated = cap_text(text if isinstance(text, str) else str(text),
                                         self.output_cap)
            result.update(ok=status in (None, "completed"), output=output,
                          truncated=truncated)
        return result


@dataclass(frozen=True)
class ParsedRun:
    """Everything a Codex log says, normalized."""

    events: list[dict[str, Any]]
    usage: Usage
    final_text: str
    failure: Failure | None
    turn_failed: bool
    tool_calls: int
    turns_completed: int


def read_records(lines: Iterable[str]) -> list[dict[str, Any]]:
    """JSON objects of a JSONL text, one per line; other lines (and a torn last line) are
    skipped: the raw log keeps them."""
    out = []
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def parse_codex(records: Iterable[dict[str, Any]], workspace: str | None = None,
                output_cap: int = 16_000, model: str | None = None) -> ParsedRun:
    """A whole Codex JSONL log (parsed records) -> normalized events, usage, final text."""
    parser = CodexParser(workspace=workspace, output_cap=output_cap, model=model)
    events = [e for r in records for e in parser.feed(r)]
    return ParsedRun(events=events, usage=parser.usage, final_text=parser.final_text,
                     failure=parser.failure, turn_failed=parser.turn_failed,
                     tool_calls=parser.tool_calls, turns_completed=parser.turns_completed)
