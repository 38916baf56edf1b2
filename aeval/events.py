"""Normalized executor events and token usage: what every runtime reports, in one shape.

Each line of events.jsonl is one `Event`. Runtimes translate their native stream into these
(the native stream is kept beside them as raw.jsonl), so grading, Δ attribution, transcripts
and replay never depend on which agent ran.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from aeval.strict import StrictModel


class Usage(BaseModel):
    """Token counts. ``input_tokens`` EXCLUDES cached tokens: total prompt = input + cached +
    cache_write. Add two with ``+``."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(0, ge=0, description="Uncached prompt tokens (cache reads excluded).")
    cached_input_tokens: int = Field(0, ge=0, description="Prompt tokens read from a cache.")
    cache_write_tokens: int = Field(0, ge=0, description="Prompt tokens written to a cache.")
    output_tokens: int = Field(0, ge=0, description="Generated tokens, reasoning included.")
    requests: int = Field(0, ge=0, description="Number of model requests counted.")

    def __add__(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cached_input_tokens + self.cache_write_tokens


Refusal = Literal["unknown_tool", "invalid_arguments", "policy"]
REFUSALS: dict[str, str] = {
    "unknown_tool": "the runtime has no tool of that name",
    "invalid_arguments": "the runtime rejected its arguments before running it",
    "policy": "the runtime's own permission rules refused it",
}
"""Why a runtime did not run a tool call, as a person reads it."""


class _Event(StrictModel):
    seq: int = Field(ge=0, description="Position in the run, from 0, assigned by the recorder.")
    t: float = Field(ge=0, description="Seconds since the execution started.")


class MessageEvent(_Event):
    """Text from the model (assistant) or handed to it (user, system)."""

    kind: Literal["message"] = "message"
    role: Literal["assistant", "user", "system"]
    text: str


class ToolCallEvent(_Event):
    """The executor asked to run a tool."""

    kind: Literal["tool_call"] = "tool_call"
    call_id: str = Field(description="Id that ties the call to its result.")
    tool: str = Field(description="Normalized tool name: bash, read_file, write_file, edit_file, "
                                  "list_dir, or the runtime's own name for others.")
    input: dict[str, Any] = Field(default_factory=dict, description="The call's arguments.")


class ToolResultEvent(_Event):
    """What a tool call returned. ``ok`` false is a first-attempt error."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    tool: str
    ok: bool = Field(description="False for a non-zero exit, an exception or a tool error.")
    exit_code: int | None = Field(None, description="Exit code for commands.")
    output: str = Field("", description="Output (stdout, then stderr for commands), capped.")
    duration_s: float | None = Field(None, ge=0)
    truncated: bool = Field(False, description="True when output was cut to the cap.")
    paths_written: list[str] = Field(
        default_factory=list,
        description="Workspace-relative paths this call changed, by the runtime's own record "
                    "of it: Codex's file_change `changes[].path`, the file Claude Code's "
                    "Write/Edit/MultiEdit/NotebookEdit and OpenCode's write/edit/patch name, "
                    "builtin write_file/edit_file; only for a call that succeeded. For the "
                    "builtin bash tool: the skill entries that changed while it ran. Empty: "
                    "no record (a shell command of a third-party runtime). What ties a skill "
                    "edit to its call before any timing does.")
    refused: Refusal | None = Field(
        None, description="Set when the runtime did not run the call at all: `unknown_tool` "
                          "(no tool of that name), `invalid_arguments` (rejected before it "
                          "ran), `policy` (the runtime's own permission rules refused it). The "
                          "agent's error, never the skill's; None: the tool ran.")


class UsageEvent(_Event):
    """Tokens of one model request (or a runtime's running total, see ``cumulative``)."""

    kind: Literal["usage"] = "usage"
    usage: Usage
    model: str | None = None


class ErrorEvent(_Event):
    """The runtime itself failed (model API, CLI crash). Tool failures are ToolResultEvents."""

    kind: Literal["error"] = "error"
    message: str
    transient: bool = Field(False, description="True when a fresh attempt may succeed.")
    error_type: str | None = None


class EndEvent(_Event):
    """The run ended."""

    kind: Literal["end"] = "end"
    status: str
    final_text: str = ""


Event = Annotated[
    MessageEvent | ToolCallEvent | ToolResultEvent | UsageEvent | ErrorEvent | EndEvent,
    Field(discriminator="kind"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class Events(list):
    """The events read from an events.jsonl, and ``skipped``: how many of its lines were not
    an event (torn by a killed process, edited, or written by something else)."""

    skipped: int = 0


def read_events(path: Path) -> Events:
    """Load events.jsonl. A line that is not an event (a torn last line of a killed process,
    a broken or hand-edited one anywhere) is skipped and counted in ``skipped``: one bad
    line never loses the others, nor raises into the verdict."""
    events = Events()
    text = Path(path).read_bytes().decode("utf-8", "replace")
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            events.append(EVENT_ADAPTER.validate_json(line))
        except (ValueError, RecursionError):
            events.skipped += 1
    return events


def failed_results(events: list[Event]) -> list[ToolResultEvent]:
    return [e for e in events if isinstance(e, ToolResultEvent) and not e.ok]


def calls_by_id(events: list[Event]) -> dict[str, ToolCallEvent]:
    return {e.call_id: e for e in events if isinstance(e, ToolCallEvent)}


def transcript_text(events: list[Event]) -> str:
    """Plain text the transcript checks search: messages, tool inputs and tool outputs."""
    parts = []
    for e in events:
        if isinstance(e, MessageEvent):
            parts.append(e.text)
        elif isinstance(e, ToolCallEvent):
            parts.append(json.dumps(e.input, ensure_ascii=False))
        elif isinstance(e, ToolResultEvent):
            parts.append(e.output)
        elif isinstance(e, ErrorEvent):
            parts.append(e.message)
        elif isinstance(e, EndEvent) and e.final_text:
            parts.append(e.final_text)
    return "\n".join(parts)


def _fence(text: str) -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}\n{text.rstrip()}\n{ticks}"


def render_transcript(events: list[Event], title: str) -> str:
    """transcript.md: the run as a person reads it, one section per event."""
    calls = calls_by_id(events)
    out = [f"# {title}", "", "_[n] is the event number (`seq` in events.jsonl), which evidence "
           "cites as `event n`._", ""]
    if skipped := getattr(events, "skipped", 0):
        out += [f"_{skipped} line(s) of events.jsonl were not events (torn by a killed "
                "process, or not the runtime's) and are not shown._", ""]
    for e in events:
        if isinstance(e, MessageEvent):
            out += [f"## [{e.seq}] {e.role}", "", e.text.rstrip(), ""]
        elif isinstance(e, ToolCallEvent):
            shown = e.input.get("command") if e.tool == "bash" else None
            body = shown if isinstance(shown, str) else json.dumps(e.input, indent=2,
                                                                   ensure_ascii=False)
            out += [f"## [{e.seq}] tool call `{e.tool}` ({e.call_id})", "", _fence(body), ""]
        elif isinstance(e, ToolResultEvent):
            call = calls.get(e.call_id)
            state = "ok" if e.ok else "FAILED"
            if e.refused:
                state = f"REFUSED ({REFUSALS[e.refused]})"
            code = f", exit {e.exit_code}" if e.exit_code is not None else ""
            dur = f", {e.duration_s:.2f}s" if e.duration_s is not None else ""
            ref = f" for [{call.seq}]" if call else ""
            cut = " (truncated)" if e.truncated else ""
            out += [f"## [{e.seq}] tool result{ref}: {state}{code}{dur}{cut}", "",
                    _fence(e.output or "(no output)"), ""]
        elif isinstance(e, UsageEvent):
            u = e.usage
            out += [f"_[{e.seq}] usage: {u.input_tokens} in, {u.cached_input_tokens} cached, "
                    f"{u.output_tokens} out_", ""]
        elif isinstance(e, ErrorEvent):
            kind = "transient" if e.transient else "permanent"
            out += [f"## [{e.seq}] runtime error ({kind})", "", _fence(e.message), ""]
        elif isinstance(e, EndEvent):
            out += [f"## [{e.seq}] end: {e.status}", ""]
            if e.final_text:
                out += [e.final_text.rstrip(), ""]
    return "\n".join(out)
