"""OpenCode ``run --format json`` output -> normalized events, usage and final text. Pure: no
I/O, no clock, so a recorded raw.jsonl re-parses to the same events as the live run produced.

The native stream (OpenCode 1.18), one JSON object per line, each with ``type``,
``timestamp``, ``sessionID`` and a ``part``:

    step_start                  one model request begins
    text {part.text}            assistant text (complete)
    tool_use {part{tool, callID, state{status: completed|error, input, output | error,
              metadata{exit, ...}, time{start, end}}}}   a finished tool call
    step_finish {part{reason, tokens{input, output, reasoning, cache{read, write}}}}
                                ``input`` EXCLUDES cache reads and writes
    error {error{name, data{message, statusCode, isRetryable, responseBody}}}

Tool names are normalized: bash -> bash, read -> read_file, write -> write_file, edit /
multiedit / patch / apply_patch -> edit_file, list / glob -> list_dir; others keep their name.
A write or edit that succeeded records the file it names (``filePath``, or each file of a
patch's text) in ``paths_written``: OpenCode's own record of what the call changed.
A call OpenCode could not make (its ``invalid`` tool: an unknown tool, bad arguments) is the
tool the model named, failed and ``refused``; so is one its permission rules rejected. With
``start_epoch`` (when the run started, Unix seconds) a tool call's events carry the times the
tool really started and ended: OpenCode reports a tool call only once it has finished.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from aeval.adapters.llm import TRANSIENT_STATUS
from aeval.adapters.runtimes._codex_parse import (
    Failure,
    classify_error_text,
    read_records,
    relative_path,
)
from aeval.events import Usage
from aeval.isolation.shell import cap_text

__all__ = ["OpenCodeParser", "ParsedRun", "normalize_tool", "parse_opencode", "read_records"]

TOOL_NAMES = {"bash": "bash", "read": "read_file", "write": "write_file", "edit": "edit_file",
              "multiedit": "edit_file", "patch": "edit_file", "apply_patch": "edit_file",
              "list": "list_dir", "glob": "list_dir"}
WRITING_TOOLS = frozenset({"write_file", "edit_file"})
INVALID_TOOL = "invalid"
"""OpenCode's stand-in for a call it could not make (an unknown tool, or arguments that failed
the tool's schema): it "completes" with the complaint as output, the model's own arguments
replaced by ``{tool, error}``."""
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$",
                         re.M)
_UNKNOWN_TOOL = re.compile(r"unavailable tool|no such tool|unknown tool", re.I)
_REFUSED_PERMISSION = re.compile(r"rejected permission|rule which prevents you from using|"
                                 r"permission (?:was )?denied by|auto-rejected", re.I)


def normalize_tool(name: str) -> str:
    """OpenCode's tool name -> aeval's normalized name."""
    return TOOL_NAMES.get(name, name)


def usage_from_tokens(tokens: dict[str, Any]) -> Usage:
    """``step_finish.tokens`` -> Usage. OpenCode's ``input`` already excludes cache reads and
    writes; ``output`` excludes ``reasoning``, which aeval counts as output."""
    def get(obj: Any, key: str) -> int:
        value = obj.get(key) if isinstance(obj, dict) else None
        return int(value) if isinstance(value, int | float) and value > 0 else 0

    cache = tokens.get("cache") or {}
    return Usage(input_tokens=get(tokens, "input"), cached_input_tokens=get(cache, "read"),
                 cache_write_tokens=get(cache, "write"),
                 output_tokens=get(tokens, "output") + get(tokens, "reasoning"), requests=1)


def classify_opencode_error(error: dict[str, Any]) -> Failure:
    """An ``error`` record's error -> a classified failure."""
    name = str(error.get("name") or "Error")
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    message = f"{name}: {data.get('message') or error.get('message') or ''}".strip()
    code = data.get("statusCode")
    if isinstance(code, int):
        transient = code in TRANSIENT_STATUS or code >= 500 or (
            bool(data.get("isRetryable")) and code not in (400, 401, 403, 404))
        return Failure(f"{message} (HTTP {code})", transient=transient, status_code=code)
    if name in ("ProviderAuthError", "ContextOverflowError", "MessageOutputLengthError"):
        return Failure(message, transient=False)
    if data.get("isRetryable"):
        return Failure(message, transient=True)
    return classify_error_text(message)


@dataclass
class OpenCodeParser:
    """Feed it the records one by one (`feed`); it returns the normalized events for each
    (dicts: ``kind`` plus the event's fields, ready for `EventRecorder.emit`) and keeps the
    totals. ``workspace`` turns absolute paths into workspace-relative ones."""

    workspace: str | None = None
    output_cap: int = 16_000
    model: str | None = None
    start_epoch: float | None = None
    usage: Usage = field(default_factory=Usage)
    final_text: str = ""
    failure: Failure | None = None
    steps: int = 0
    last_reason: str | None = None
    tool_calls: int = 0

    def feed(self, record: dict[str, Any]) -> list[dict[str, Any]]:
        kind = record.get("type")
        part = record.get("part") if isinstance(record.get("part"), dict) else {}
        if kind == "step_start":
            self.steps += 1
        elif kind == "text":
            text = str(part.get("text") or "")
            if not text.strip():
                return []
            self.final_text = text
            return [{"kind": "message", "role": "assistant", "text": text}]
        elif kind == "tool_use":
            return self._tool(part)
        elif kind == "step_finish":
            self.last_reason = part.get("reason")
            usage = usage_from_tokens(part.get("tokens") or {})
            self.usage = self.usage + usage
            return [{"kind": "usage", "usage": usage.model_dump(), "model": self.model}]
        elif kind == "error":
            error = record.get("error") if isinstance(record.get("error"), dict) else {}
            self.failure = classify_opencode_error(error)
            return [{"kind": "error", "message": self.failure.message,
                     "transient": self.failure.transient, "error_type": "opencode"}]
        return []

    def _path(self, raw: Any) -> str | None:
        if not isinstance(raw, str) or not raw:
            return None
        if PurePosixPath(raw).is_absolute():
            return relative_path(raw, self.workspace)
        return PurePosixPath(raw).as_posix()

    def _patched(self, patch: Any) -> list[str]:
        """The files a ``patch`` / ``apply_patch`` call's patch text names (its ``*** Add
        File:``, ``*** Update File:``, ``*** Delete File:``, ``*** Move to:`` lines)."""
        if not isinstance(patch, str):
            return []
        paths = (self._path(m.group(1).strip()) for m in _PATCH_FILE.finditer(patch))
        return list(dict.fromkeys(p for p in paths if p))

    def _t(self, ms: Any) -> dict[str, float]:
        """``t`` (seconds since the run started) of an OpenCode timestamp, when the parser
        knows when the run started: a finished tool call arrives only after it ran, so its
        events carry the times it really started and ended (what ties a skill edit to it)."""
        if self.start_epoch is None or not isinstance(ms, int | float):
            return {}
        return {"t": round(max(0.0, ms / 1000 - self.start_epoch), 3)}

    def _tool(self, part: dict[str, Any]) -> list[dict[str, Any]]:
        self.tool_calls += 1
        tool = normalize_tool(str(part.get("tool") or "?"))
        call_id = str(part.get("callID") or part.get("id") or f"call-{self.tool_calls}")
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        args = dict(state.get("input") or {})
        refused = None
        if tool == INVALID_TOOL:  # the call OpenCode could not make: name it as the model did
            error = str(args.get("error") or state.get("output") or "")
            tool = normalize_tool(str(args.get("tool") or INVALID_TOOL))
            refused = "unknown_tool" if _UNKNOWN_TOOL.search(error) else "invalid_arguments"
        path = self._path(args.get("filePath") or args.get("path"))
        if path is not None and tool in ("read_file", "write_file", "edit_file"):
            args["path"] = path
        status = state.get("status")
        metadata = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
        code = metadata.get("exit")
        code = code if isinstance(code, int) else None
        ok = status == "completed" and code in (None, 0) and refused is None
        text = state.get("output") if status == "completed" else state.get("error")
        if status == "error" and _REFUSED_PERMISSION.search(str(text or "")):
            refused = "policy"
        output, truncated = cap_text(str(text or ""), self.output_cap)
        times = state.get("time") if isinstance(state.get("time"), dict) else {}
        duration = None
        if isinstance(times.get("start"), int | float) and isinstance(times.get("end"),
                                                                       int | float):
            duration = max(0.0, (times["end"] - times["start"]) / 1000)
        named = [path] if path is not None else self._patched(args.get("patchText"))
        written = named if ok and tool in WRITING_TOOLS else []
        return [
            {"kind": "tool_call", "call_id": call_id, "tool": tool, "input": args,
             **self._t(times.get("start"))},
            {"kind": "tool_result", "call_id": call_id, "tool": tool, "ok": ok,
             "exit_code": code, "output": output, "truncated": truncated,
             "duration_s": duration, "paths_written": written,
             **({"refused": refused} if refused else {}), **self._t(times.get("end"))},
        ]


@dataclass(frozen=True)
class ParsedRun:
    """Everything an OpenCode log says, normalized."""

    events: list[dict[str, Any]]
    usage: Usage
    final_text: str
    failure: Failure | None
    steps: int
    last_reason: str | None
    tool_calls: int


def parse_opencode(records: Iterable[dict[str, Any]], workspace: str | None = None,
                   output_cap: int = 16_000, model: str | None = None) -> ParsedRun:
    """A whole OpenCode JSONL log (parsed records) -> normalized events, usage, final text."""
    parser = OpenCodeParser(workspace=workspace, output_cap=output_cap, model=model)
    events = [e for r in records for e in parser.feed(r)]
    return ParsedRun(events=events, usage=parser.usage, final_text=parser.final_text,
                     failure=parser.failure, steps=parser.steps,
                     last_reason=parser.last_reason, tool_calls=parser.tool_calls)
