"""Δ attribution: which tool call made each change to the skill copy. Pure: changes and
events in, `ChangeMade` entries out.

First the runtime's own records: a change to a path that a tool result says its call
changed (``paths_written``: Codex's ``file_change`` item, Claude Code's Write / Edit /
MultiEdit, OpenCode's write / edit / patch, the builtin write_file / edit_file) is tied to the
first call whose record names it (``recorded``), whenever the runtime reported it: Codex
reports an ``apply_patch`` only after applying it, so by time alone its edit falls to the call
before (a failing command) on a busy machine. A shell command has no such record (what it
wrote is found by time below; the builtin bash's ``paths_written`` is only what changed while
it ran, time evidence as the watch's).

For a change no record names, the same rule for every runtime: it is tied to the tool call
during which the watch saw it happen. A call's window runs from its tool_call event to its
tool_result (the times the tool really started and ended: the adapters put them there, also
for a runtime that reports a call only once it has finished); the watch stamps each change
it sees with the same clock (`seen_at`). Naming the file is no evidence: an agent that reads
SKILL.md in event 3 and edits it with ``sed -i`` in event 9 edited it in event 9. Only when
the watch saw nothing (no inotify here) does the attribution fall back to the command
during which the file changed, then to the first call that names it (``named``: a guess,
said so).
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass

from aeval.artifacts import ChangeMade
from aeval.events import Event, ToolCallEvent, ToolResultEvent, calls_by_id
from aeval.isolation.workspace import FileChange

WRITE_TOOLS = {"write_file", "edit_file", "write", "edit", "file_change", "apply_patch"}
SHELL_TOOLS = {"bash"}
"""Normalized tools whose ``paths_written`` is what changed while they ran, not a record of
what they were asked to change."""
EARLY_S = 0.05
"""A change stamped this much before its call's event still belongs to it (two clocks read
a few milliseconds apart)."""
LATE_S = 0.25
"""How long after a call's result a change may still be its own: the watch stamps what it
sees when its thread gets to read the queue, which can lag behind on a busy machine."""
WRITE_LAG_S = 1.0
"""How long after a write tool's result a change to the file it names, stamped inside the
next call's window, is still the write tool's: a scripted or fast agent starts its next call
milliseconds after the edit, and on a loaded machine the watch's thread read the edit later
than that (CI: an `edit_file` of SKILL.md given to the `bash` call after it). Only the tool
named changes: Δ is found either way."""


@dataclass(frozen=True)
class Window:
    """When one tool call ran, on the run's clock (seconds since the execution started)."""

    call: ToolCallEvent
    start: float
    end: float  # its result; without one, until the next call starts (or forever)


def windows(events: list[Event]) -> list[Window]:
    """Every tool call's window, in the order the calls were made."""
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = {e.call_id: e for e in events if isinstance(e, ToolResultEvent)}
    out = []
    for i, c in enumerate(calls):
        r = results.get(c.call_id)
        end = r.t if r is not None else (calls[i + 1].t if i + 1 < len(calls)
                                         else float("inf"))
        out.append(Window(c, c.t, max(end, c.t)))
    return out


def seen_at(changes: list[FileChange], touches: list[tuple[str, str, float]]
            ) -> list[FileChange]:
    """Δ entries with ``at_s`` set to when the watch first saw a change to that entry (or,
    for a folder, inside it); ``touches``: (path relative to the skill root, what, seconds
    since the execution started), changes only. An entry that already has ``at_s`` (an edit
    put back) keeps it."""
    out = []
    for ch in changes:
        if ch.at_s is None:
            times = [at for path, _, at in touches
                     if path == ch.path or path.startswith(ch.path.rstrip("/") + "/")]
            if times:
                ch = ch.model_copy(update={"at_s": round(min(times), 3)})
        out.append(ch)
    return out


def _names(call: ToolCallEvent, ws_path: str, path: str) -> bool:
    text = json.dumps(call.input, ensure_ascii=False)
    return ws_path in text or path in text


def _during(ch: FileChange, ws_path: str, spans: list[Window]) -> tuple[ToolCallEvent, str
                                                                        ] | None:
    """The call during which the watch saw ``ch`` (``at_s``), and how it is tied to it."""
    at = ch.at_s
    assert at is not None
    inside = [w for w in spans if w.start <= at <= w.end]
    if inside:
        # calls running at once (a runtime's parallel tools): the write tool naming the file,
        # else the one that started last
        best = max(inside, key=lambda w: (w.call.tool in WRITE_TOOLS
                                          and _names(w.call, ws_path, ch.path), w.start))
        if best.call.tool not in WRITE_TOOLS:
            lagged = [w for w in spans if w.call.tool in WRITE_TOOLS
                      and _names(w.call, ws_path, ch.path)
                      and w.end <= best.start and w.end <= at <= w.end + WRITE_LAG_S]
            if lagged:  # the write just before, read late by the watch
                return lagged[-1].call, "direct"
        return best.call, "direct" if best.call.tool in WRITE_TOOLS else "during_call"
    near = [w for w in spans if w.start - EARLY_S <= at <= w.end + LATE_S]
    if near:  # just outside a window (two clocks, a watch that read late): the nearest
        best = min(near, key=lambda w: w.start - at if at < w.start else at - w.end)
        return best.call, "direct" if best.call.tool in WRITE_TOOLS else "during_call"
    before = [w for w in spans if w.start <= at]
    if before:  # between calls: a process the latest call left running
        return before[-1].call, "after_call"
    return None


def _clean(path: str) -> str:
    return posixpath.normpath(path).removeprefix("./")


def records(events: list[Event]) -> list[tuple[ToolCallEvent, set[str]]]:
    """Each call the runtime's own record says changed files, with those paths
    (workspace-relative), in the order the records arrived."""
    calls = calls_by_id(events)
    return [(calls[e.call_id], {_clean(p) for p in e.paths_written}) for e in events
            if isinstance(e, ToolResultEvent) and e.paths_written and e.refused is None
            and e.tool not in SHELL_TOOLS and e.call_id in calls]


def _recorded(ws_path: str, recs: list[tuple[ToolCallEvent, set[str]]]
              ) -> ToolCallEvent | None:
    """The first call whose record names ``ws_path`` (or, for a folder, a path inside it)."""
    inside = _clean(ws_path) + "/"
    return next((c for c, paths in recs
                 if any(p == inside[:-1] or p.startswith(inside) for p in paths)), None)


def attribute_changes(changes: list[FileChange], events: list[Event],
                      skill_rel: str) -> list[ChangeMade]:
    """Tie each skill edit to the tool call that made it (Δ attribution, see the module)."""
    calls = calls_by_id(events)
    spans = windows(events)
    recs = records(events)
    out = []
    for i, ch in enumerate(changes, 1):
        ws_path = f"{skill_rel}/{ch.path}"
        rec = _recorded(ws_path, recs)
        found = ((rec, "recorded") if rec is not None
                 else _during(ch, ws_path, spans) if ch.at_s is not None else None)
        if found is None and ch.at_s is None:  # the watch saw nothing: a builtin command
            wrote = next((e for e in events if isinstance(e, ToolResultEvent)
                          and ws_path in e.paths_written and e.call_id in calls), None)
            if wrote is not None:
                call = calls[wrote.call_id]
                found = call, "direct" if call.tool in WRITE_TOOLS else "during_call"
            else:
                named = next((e for e in events if isinstance(e, ToolCallEvent)
                              and _names(e, ws_path, ch.path)), None)
                found = (named, "named") if named is not None else None
        call, how = found if found is not None else (None, "unknown")
        out.append(ChangeMade(id=f"C{i}", path=ch.path, change=ch.change, diff=ch.diff,
                              detail=ch.detail, event_seq=call.seq if call else None,
                              tool=call.tool if call else None, attribution=how))
    return out
