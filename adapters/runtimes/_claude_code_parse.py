"""The `claude-code` raw stream -> aeval's normalized events. Pure: no I/O, no SDK import.

The adapter writes every claude-agent-sdk message as one JSON record (`message_record`) to
raw.jsonl, framed by two records of its own: ``aeval.start`` (prompt, model, workspace) first
and, when the run ended without a ``ResultMessage``, ``aeval.stop`` (timeout, crash). The same
`StreamParser` maps records to event fields live and when a recorded run is re-parsed
(`parse_records`), so a replay yields the events the live run emitted.

Mapping:
- ``AssistantMessage``: ``TextBlock`` -> message (assistant), ``ToolUseBlock`` -> tool_call with
  the tool name normalized (`TOOL_NAMES`; others kept as Claude Code names them). Thinking is
  not a message. The CLI's synthetic ``API Error: ...`` messages become the error event.
- ``UserMessage``: ``ToolResultBlock`` -> tool_result (ok = not is_error; Bash exit code from
  ``Exit code N``; ``paths_written`` from the Write / Edit inputs, workspace-relative;
  ``refused`` for a call Claude Code did not run: `REFUSALS`); text
  (the prompt, a skill's body injected by the Skill tool) -> message (user).
- ``ResultMessage`` -> one usage event with the run's totals, then end (or error).

Usage: each content block arrives as its own AssistantMessage carrying the same message id and
the same (message_start) usage, so per-message counts are de-duplicated by id, and totals come
from the final ResultMessage (Anthropic's convention, as aeval's: ``input_tokens`` excludes
cache reads and writes). Without a ResultMessage (timeout) the de-duplicated sum is used.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aeval import bounded_json
from aeval.adapters.llm import classify
from aeval.errors import EnvironmentFailure, ModelTransientError, RuntimeUnavailable
from aeval.events import Usage
from aeval.isolation.shell import cap_text

START, STOP = "aeval.start", "aeval.stop"
TOOL_NAMES = {
    "Bash": "bash",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "LS": "list_dir",
    "Glob": "list_dir",
}
"""Claude Code tool name -> aeval's normalized name; tools not listed keep their own name."""
WRITE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
               "NotebookEdit": "notebook_path"}
"""Tools that write one file, and the input field naming it."""
DENIED = "aeval denied this call"
"""How aeval's permission callback starts a refusal (the claude-code adapter)."""
REFUSALS = (
    (re.compile(r"^\s*<tool_use_error>\s*(?:Error:\s*)?No such tool available", re.I),
     "unknown_tool"),
    (re.compile(r"^\s*<tool_use_error>\s*InputValidationError", re.I), "invalid_arguments"),
    (re.compile(rf"^\s*(?:{re.escape(DENIED)}|Permission to use \S+ has been denied|"
                r"Claude requested permissions to|The user doesn't want to proceed)", re.I),
     "policy"),
)
"""Tool results of calls Claude Code did not run: no such tool, arguments its schema
rejected, a permission refused (aeval's callback, or Claude Code's own rules)."""
SYNTHETIC_MODEL = "<synthetic>"
TRANSIENT_KINDS = frozenset({"rate_limit", "server_error"})
_EXIT = re.compile(r"^Exit code (-?\d+)")
_CONNECTION = re.compile(r"timed? ?out|ECONN|connection|socket hang up|overloaded", re.I)
_STATUS = re.compile(r"API Error: (?:\D{0,40}\()?(\d{3})\b")


def message_record(message: Any, t: float) -> dict[str, Any]:
    """One SDK message as a JSON-ready record: ``_type`` (the class), ``_t`` (seconds since the
    run started), then its fields; nested dataclasses (content blocks) carry ``_type`` too."""
    return {"_type": type(message).__name__, "_t": round(t, 3), **_plain(message)}


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_block(v) for v in obj]
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return str(obj)


def _block(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"_type": type(obj).__name__, **_plain(obj)}
    return _plain(obj)


def read_raw(path: Path) -> list[dict[str, Any]]:
    """Records of a raw.jsonl; a torn last line (a killed run) is ignored."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(bounded_json.loads(line))
        except ValueError:
            if i == len(lines) - 1:
                break
            raise
    return out


class ClaudeCodeAPIError(Exception):
    """A model-API failure as Claude Code reports it (what `classify` reads: its status)."""

    def __init__(self, text: str, status_code: int | None):
        super().__init__(text)
        self.status_code = status_code


def api_error(text: str, status: int | None, kind: str | None) -> EnvironmentFailure:
    """A model-API failure reported by Claude Code, on aeval's error tree: the HTTP status
    decides when there is one (`aeval.adapters.llm.classify`: 408/409/429/5xx/overloaded are
    transient); without one, Claude Code's error kind (rate_limit, server_error) or a
    connection / timeout message make it transient."""
    exc = classify(ClaudeCodeAPIError(text, status))
    if status is None and (kind in TRANSIENT_KINDS or _CONNECTION.search(text)):
        return ModelTransientError(exc.args[0] if exc.args else text, None)
    return exc


def _usage(raw: dict[str, Any] | None, requests: int) -> Usage:
    raw = raw or {}

    def n(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value > 0 else 0

    return Usage(input_tokens=n("input_tokens"), cached_input_tokens=n("cache_read_input_tokens"),
                 cache_write_tokens=n("cache_creation_input_tokens"),
                 output_tokens=n("output_tokens"), requests=requests)


def _text(content: Any) -> str:
    """Text of a tool result's content: a string, or text blocks (images are named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, dict):
            if block.get("type") == "text" or "text" in block:
                parts.append(str(block.get("text", "")))
            else:
                parts.append(f"[{block.get('type', 'content')}]")
        else:
            parts.append(str(block))
    return "\n".join(parts)


@dataclass
class _Call:
    tool: str
    name: str
    input: dict[str, Any]
    t: float | None


@dataclass
class ParsedRun:
    """What a raw stream amounts to: the events' fields, in order, and the run's outcome."""

    events: list[dict[str, Any]]
    usage: Usage
    final_text: str
    status: str
    error: EnvironmentFailure | None = None
    model: str | None = None


@dataclass
class StreamParser:
    """Maps raw records to event fields (dicts with ``kind``), one record at a time.

    `feed` returns the events a record yields now; `finish` the closing usage and end (or
    error) events. ``cap`` bounds a tool output, as aeval's own tools do.
    """

    cap: int = 16_000
    workspace: str | None = None
    model: str | None = None
    calls: dict[str, _Call] = field(default_factory=dict)
    per_message: dict[str, Usage] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    stop: dict[str, Any] | None = None
    last_text: str = ""
    api_failure: tuple[str, str | None] | None = None  # (text, error kind) of the last one

    def feed(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        kind = record.get("_type")
        handler = {
            START: self._start, STOP: self._stop, "SystemMessage": self._system,
            "AssistantMessage": self._assistant, "UserMessage": self._user,
            "ResultMessage": self._result,
        }.get(str(kind))
        return handler(record) if handler else []

    # ---- records -------------------------------------------------------------------------

    def _start(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        self.workspace = rec.get("workspace") or self.workspace
        self.model = rec.get("model") or self.model
        prompt = rec.get("prompt")
        return [{"kind": "message", "role": "user", "text": prompt}] if prompt else []

    def _stop(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        self.stop = rec
        return []

    def _system(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        data = rec.get("data") or {}
        if rec.get("subtype") == "init":
            self.workspace = self.workspace or data.get("cwd")
            self.model = self.model or data.get("model")
        return []

    def _assistant(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        synthetic = rec.get("model") == SYNTHETIC_MODEL
        if rec.get("error") or synthetic:
            text = "\n".join(b.get("text", "") for b in rec.get("content") or []
                             if isinstance(b, dict) and "text" in b).strip()
            self.api_failure = (text or f"Claude Code API error: {rec.get('error')}",
                                rec.get("error"))
            return out
        mid = rec.get("message_id") or rec.get("uuid") or f"_{len(self.per_message)}"
        if mid not in self.per_message:
            self.per_message[mid] = _usage(rec.get("usage"), 1)
        for block in rec.get("content") or []:
            btype = block.get("_type") if isinstance(block, dict) else None
            if btype == "TextBlock" and block.get("text", "").strip():
                self.last_text = block["text"]
                out.append({"kind": "message", "role": "assistant", "text": block["text"]})
            elif btype in ("ToolUseBlock", "ServerToolUseBlock"):
                name = str(block.get("name", "?"))
                tool = TOOL_NAMES.get(name, name)
                args = block.get("input") if isinstance(block.get("input"), dict) else {}
                self.calls[block["id"]] = _Call(tool, name, args, rec.get("_t"))
                out.append({"kind": "tool_call", "call_id": block["id"], "tool": tool,
                            "input": args})
        return out

    def _user(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        content = rec.get("content")
        if isinstance(content, str):
            return [{"kind": "message", "role": "user", "text": content}] if content else []
        out: list[dict[str, Any]] = []
        for block in content or []:
            btype = block.get("_type") if isinstance(block, dict) else None
            if btype in ("ToolResultBlock", "ServerToolResultBlock"):
                out.append(self._tool_result(block, rec.get("_t")))
            elif btype == "TextBlock" and block.get("text", "").strip():
                out.append({"kind": "message", "role": "user", "text": block["text"]})
        return out

    def _tool_result(self, block: dict[str, Any], t: float | None) -> dict[str, Any]:
        call_id = str(block.get("tool_use_id"))
        call = self.calls.get(call_id)
        ok = not block.get("is_error")
        text = _text(block.get("content"))
        exit_code = None
        if call is not None and call.name == "Bash":
            match = _EXIT.match(text)
            exit_code = int(match.group(1)) if match else (0 if ok else None)
        output, truncated = cap_text(text, self.cap)
        written = []
        if ok and call is not None and call.name in WRITE_TOOLS:
            rel = self._relative(call.input.get(WRITE_TOOLS[call.name]))
            written = [rel] if rel else []
        duration = None
        if call is not None and call.t is not None and t is not None:
            duration = round(max(0.0, t - call.t), 3)
        refused = None if ok else next((kind for pattern, kind in REFUSALS
                                         if pattern.match(text)), None)
        if refused is not None:
            exit_code = None
        return {"kind": "tool_result", "call_id": call_id,
                "tool": call.tool if call else "unknown", "ok": ok, "exit_code": exit_code,
                "output": output, "truncated": truncated, "duration_s": duration,
                "paths_written": written, "refused": refused}

    def _relative(self, path: Any) -> str | None:
        """A written path relative to the workspace root, or None when outside it."""
        if not isinstance(path, str) or not path:
            return None
        if not posixpath.isabs(path):
            rel = posixpath.normpath(path)
            return None if rel == ".." or rel.startswith("../") else rel
        if not self.workspace:
            return None
        root = posixpath.normpath(self.workspace)
        full = posixpath.normpath(path)
        if full.startswith(root + "/"):
            return full[len(root) + 1:]
        return None

    def _result(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        self.result = rec
        return []

    # ---- the end ---------------------------------------------------------------------------

    def finish(self) -> tuple[list[dict[str, Any]], ParsedRun]:
        """The closing events (usage, then end or error) and the outcome of the run (whose
        ``events`` are only these closing ones)."""
        res = self.result
        requests = len(self.per_message)
        if res is not None and res.get("usage"):
            usage = _usage(res["usage"], requests)
        else:
            usage = sum(self.per_message.values(), Usage())
        out: list[dict[str, Any]] = []
        if usage.requests or usage.prompt_tokens or usage.output_tokens:
            out.append({"kind": "usage", "usage": usage.model_dump(), "model": self.model})
        error: EnvironmentFailure | None = None
        final = self.last_text
        if self.stop is not None and self.stop.get("reason") == "timeout":
            status = "timeout"
            final = str(self.stop.get("message") or "timeout")
        elif res is not None:
            subtype = str(res.get("subtype") or "")
            status_code = res.get("api_error_status")
            if res.get("is_error") and (self.api_failure or status_code is not None
                                        or res.get("terminal_reason") == "api_error"):
                text, kind = self.api_failure or (str(res.get("result") or ""), None)
                if status_code is None:
                    match = _STATUS.search(text)
                    status_code = int(match.group(1)) if match else None
                error = api_error(text, status_code, kind)
                status = "failed"
            elif subtype == "error_max_turns":
                status = "max_turns"
                final = final or f"stopped at max_turns ({res.get('num_turns')} turns)"
            elif res.get("is_error") or subtype.startswith("error"):
                status = "failed"
                reason = "; ".join(res.get("errors") or []) or str(res.get("result") or subtype)
                out.append({"kind": "error", "message": f"Claude Code: {reason}",
                            "transient": False, "error_type": subtype or "error"})
            else:
                status = "completed"
                final = str(res.get("result") or final)
        else:
            reason = (self.stop or {}).get("message") or "the stream ended without a result"
            error = RuntimeUnavailable(f"Claude Code stopped: {reason}")
            status = "failed"
        if error is not None:
            out.append({"kind": "error", "message": str(error),
                        "transient": isinstance(error, ModelTransientError),
                        "error_type": type(error).__name__})
        else:
            out.append({"kind": "end", "status": status, "final_text": final})
        return out, ParsedRun(events=out, usage=usage, final_text=final, status=status,
                              error=error, model=self.model)


def parse_records(records: Iterable[dict[str, Any]], cap: int = 16_000) -> ParsedRun:
    """The whole mapping of a recorded raw stream: events (fields, in order, without seq/t),
    usage totals, final text, status and the error the run raised (None if it did not)."""
    parser = StreamParser(cap=cap)
    events: list[dict[str, Any]] = []
    for record in records:
        events += parser.feed(record)
    _, run = parser.finish()
    run.events = events + run.events
    return run
