"""Δ attribution: which tool call made each change to the skill copy. Pure: changes and
events in, `ChangeMade` entries out."""

from __future__ import annotations

import json

from aeval.artifacts import ChangeMade
from aeval.events import Event, ToolCallEvent, ToolResultEvent, calls_by_id
from aeval.workspace import FileChange

WRITE_TOOLS = {"write_file", "edit_file", "write", "edit", "file_change", "apply_patch"}


def attribute_changes(changes: list[FileChange], events: list[Event],
                      skill_rel: str) -> list[ChangeMade]:
    """Tie each skill edit to the tool call that made it (Δ attribution)."""
    calls = calls_by_id(events)
    results = {e.call_id: e for e in events if isinstance(e, ToolResultEvent)}
    out = []
    for i, ch in enumerate(changes, 1):
        ws_path = f"{skill_rel}/{ch.path}"
        seq, tool, how = None, None, "unknown"
        if ch.at_s is not None:  # seen by the watch: the tool call running at that moment
            for c in calls.values():
                r = results.get(c.call_id)
                if c.t <= ch.at_s + 0.05 and (r is None or ch.at_s <= r.t + 0.05):
                    seq, tool = c.seq, c.tool
                    how = "direct" if c.tool in WRITE_TOOLS else "after_bash"
        for e in (events if seq is None else []):
            if isinstance(e, ToolResultEvent) and ws_path in e.paths_written:
                call = calls.get(e.call_id)
                seq, tool = (call.seq if call else e.seq), e.tool
                how = "direct" if e.tool in WRITE_TOOLS else "after_bash"
                break
        if seq is None:
            for e in events:
                if isinstance(e, ToolCallEvent) and (
                        ws_path in json.dumps(e.input) or ch.path in json.dumps(e.input)):
                    seq, tool = e.seq, e.tool
                    how = "direct" if e.tool in WRITE_TOOLS else "after_bash"
                    break
        out.append(ChangeMade(id=f"C{i}", path=ch.path, change=ch.change, diff=ch.diff,
                              detail=ch.detail, event_seq=seq, tool=tool, attribution=how))
    return out
