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
workspace (Codex's own record of what the patch changed, once applied: what Δ attribution
ties a skill edit to); agent_message -> assistant message; item errors -> system message;
``error`` and ``turn.failed`` -> an error event and `CodexParser.failure`.

What that stream leaves out, Codex's own session record (the rollout,
``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``) holds, and the adapter interleaves its
records (`ROLLOUT_TYPES`) into the same raw log:

    response_item {payload{type: function_call{name, arguments, call_id} |
        custom_tool_call{name, input, call_id} | function_call_output{call_id, output} |
        custom_tool_call_output{call_id, output}}}      every call the model made, and its answer
    event_msg {payload{type: item_started | item_completed, item{id = call_id}}}
                                          a call Codex carried out (the exec stream reports it)
    token_usage_record {payload{response_id, usage}}    one per model response

A call with an answer and no item is one the exec stream never shows: a tool Codex has not
got (``unsupported call: bash``), a command its approval policy rejected, arguments it could
not parse. It becomes a tool_call and a tool_result (``refused`` when Codex did not run it)
at the times the rollout gives. Each model response counts one request in the turn's usage.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from aeval import bounded_json
from aeval.adapters.llm import TRANSIENT_STATUS
from aeval.events import Usage
from aeval.isolation.shell import cap_text

TOOL_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})
"""Item types that are tool calls: what the max-turns guard counts."""
ROLLOUT_TYPES = frozenset({"response_item", "event_msg", "token_usage_record"})
"""Record types of Codex's session record (the rollout) that the parser reads."""
ROLLOUT_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
ROLLOUT_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
SHELL_CALLS = frozenset({"exec_command", "shell", "container.exec", "local_shell"})
_REFUSALS = (
    (re.compile(r"^\s*(?:unsupported call|unknown tool|no such tool)", re.I), "unknown_tool"),
    (re.compile(r"failed to parse (?:function )?arguments|invalid (?:function )?arguments|"
                r"missing field", re.I), "invalid_arguments"),
    (re.compile(r"reject(?:ed)? (?:the )?command|approval policy|not approved|declined|"
                r"denied by|sandbox denied", re.I), "policy"),
)
"""Codex's answer to a call it did not run (0.17x), and what it means."""

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
    start_epoch: float | None = None  # the run's start (Unix s): rollout times -> event `t`
    usage: Usage = field(default_factory=Usage)
    final_text: str = ""
    failure: Failure | None = None
    turn_failed: bool = False
    tool_calls: int = 0
    turns_completed: int = 0
    thread_id: str | None = None
    _called: set[str] = field(default_factory=set)
    _last_error: str | None = None
    _pending: dict[str, tuple[str, dict[str, Any], dict[str, float]]] = field(
        default_factory=dict)  # rollout call id -> (tool, input, t) until its answer
    _carried_out: set[str] = field(default_factory=set)  # call ids the exec stream reports
    _responses: set[str] = field(default_factory=set)  # model responses seen, all turns
    _counted: int = 0  # responses already counted in a usage event

    def feed(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        kind = record.get("type")
        if kind in ROLLOUT_TYPES:
            return self._rollout(record)
        if kind == "thread.started":
            self.thread_id = record.get("thread_id")
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = record.get("item")
            if isinstance(item, dict):
                return self._item(item, done=kind == "item.completed")
        elif kind == "turn.completed":
            self.turns_completed += 1
            usage = usage_from_codex(record.get("usage") or {}).model_copy(
                update={"requests": self._uncounted()})
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

    def _uncounted(self) -> int:
        n = len(self._responses) - self._counted
        self._counted = len(self._responses)
        return n

    def finish(self) -> list[dict[str, Any]]:
        """At the end of the run: a usage event for model responses no turn counted (a turn
        that failed or was stopped)."""
        n = self._uncounted()
        if not n:
            return []
        self.usage = self.usage + Usage(requests=n)
        return [{"kind": "usage", "usage": Usage(requests=n).model_dump(), "model": self.model}]

    def _t(self, record: dict[str, Any]) -> dict[str, float]:
        """``t`` of a rollout record (its ISO timestamp), when the run's start is known."""
        stamp = record.get("timestamp")
        if self.start_epoch is None or not isinstance(stamp, str):
            return {}
        try:
            at = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return {}
        return {"t": round(max(0.0, at - self.start_epoch), 3)}

    def _rollout(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        """A record of Codex's session record: a call the exec stream does not show becomes
        events once answered; a model response counts one request."""
        payload = record.get("payload")
        if not isinstance(payload, dict):
            return []
        kind, what = record.get("type"), payload.get("type")
        if kind == "token_usage_record":
            self._responses.add(str(payload.get("response_id") or len(self._responses)))
        elif kind == "event_msg" and what in ("item_started", "item_completed"):
            item = payload.get("item")
            if isinstance(item, dict) and item.get("id"):
                self._carried_out.add(str(item["id"]))
        elif kind == "response_item" and what in ROLLOUT_CALLS:
            call_id = str(payload.get("call_id") or payload.get("id") or "")
            if call_id:
                tool, args = rollout_call(payload)
                self._pending[call_id] = (tool, args, self._t(record))
        elif kind == "response_item" and what in ROLLOUT_OUTPUTS:
            call_id = str(payload.get("call_id") or "")
            pending = self._pending.pop(call_id, None)
            if pending is None or call_id in self._carried_out:
                return []  # the exec stream reported this call
            tool, args, t_call = pending
            output = payload.get("output")
            if isinstance(output, dict):  # {content, success}
                output = output.get("content")
            text, truncated = cap_text(str(output or ""), self.output_cap)
            refused = next((k for pattern, k in _REFUSALS if pattern.search(text[:400])), None)
            self.tool_calls += 1
            return [{"kind": "tool_call", "call_id": call_id, "tool": tool, "input": args,
                     **t_call},
                    {"kind": "tool_result", "call_id": call_id, "tool": tool,
                     "ok": refused is None, "output": text, "truncated": truncated,
                     **({"refused": refused} if refused else {}), **self._t(record)}]
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
            ok = status == "completed"  # a patch that failed to apply changed nothing
            paths = [c["path"] for c in args["changes"]] if ok else []
            result.update(ok=ok, paths_written=paths,
                          output="\n".join(f"{c['kind']} {c['path']}" for c in args["changes"]))
        else:
            text = item.get("result") or item.get("error") or ""
            output, truncated = cap_text(text if isinstance(text, str) else str(text),
                                         self.output_cap)
            result.update(ok=status in (None, "completed"), output=output,
                          truncated=truncated)
        return result


def rollout_call(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A call of the rollout -> (normalized tool, input): Codex's shell tools are ``bash``
    with the command line, as the exec stream's command_execution; others keep their name and
    their arguments (a JSON object, when they parse as one)."""
    name = str(payload.get("name") or payload.get("type") or "?")
    raw = payload.get("arguments", payload.get("input", payload.get("action")))
    args: Any = raw
    if isinstance(raw, str):
        try:
            args = bounded_json.loads(raw)
        except ValueError:
            args = raw
    if not isinstance(args, dict):
        args = {"input": args}
    if name in SHELL_CALLS:
        cmd = args.get("cmd", args.get("command"))
        if isinstance(cmd, list):
            cmd = unwrap_command(shlex.join(str(c) for c in cmd))
        if isinstance(cmd, str):
            return "bash", {"command": cmd, **{k: v for k, v in args.items()
                                               if k not in ("cmd", "command")}}
    return name, args


def wants_rollout(record: dict[str, Any]) -> bool:
    """Whether a record of the rollout is one the parser reads (kept in the raw log; the
    rest, instructions and history, is left out)."""
    payload = record.get("payload")
    if not isinstance(payload, dict):
        return False
    kind, what = record.get("type"), payload.get("type")
    return (kind == "token_usage_record"
            or (kind == "event_msg" and what in ("item_started", "item_completed"))
            or (kind == "response_item" and what in ROLLOUT_CALLS | ROLLOUT_OUTPUTS))


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
            record = bounded_json.loads(line)
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
    events += parser.finish()
    return ParsedRun(events=events, usage=parser.usage, final_text=parser.final_text,
                     failure=parser.failure, turn_failed=parser.turn_failed,
                     tool_calls=parser.tool_calls, turns_completed=parser.turns_completed)
