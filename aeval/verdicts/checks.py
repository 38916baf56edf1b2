"""Deterministic checks: each looks at the workspace or the events and returns a verdict with
evidence a person can verify. A check never raises for what it inspects: a missing file or a
bad JSON document is a failed check with that as evidence.

The workspace is the attempt's: file checks resolve their path inside it the way
``openat2(RESOLVE_IN_ROOT)`` does (a symlink is followed only while it stays inside; the
workspace itself swapped for a symlink has no files) and read at most `READ_CAP` bytes (a
sparse 4 TiB file is not read whole). ``command`` checks run in the sandbox the caller gives
(a fresh one, whose PATH and HOME the attempt could not change: `aeval.tasks.case.sandboxing`)."""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aeval import bounded_json
from aeval.artifacts.case import Efficiency
from aeval.events import (
    REFUSALS,
    EndEvent,
    Event,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    calls_by_id,
)
from aeval.isolation.redact import Redactor
from aeval.isolation.sandbox import Sandbox
from aeval.isolation.shell import run_command
from aeval.isolation.tree import open_file, open_folder, resolve_in_root
from aeval.skill import contract as c
from aeval.skill import patterns
from aeval.verdicts.efficiency import budget_text, judge_budget, stray_evidence

EVIDENCE_CAP = 600
READ_CAP = 64_000_000  # bytes a file check reads of one file (a sparse 4 TiB file: no more)


@dataclass(frozen=True)
class CheckContext:
    workspace: Path
    events: list[Event]
    env: dict[str, str]
    sandbox: Sandbox | None = None  # `command` checks run in the attempt's sandbox
    redactor: Redactor | None = None
    efficiency: Efficiency | None = None  # what the attempt cost (budgets)
    stray: list[str] | None = None  # outputs outside the declared ones (`no_stray_files`)


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    evidence: str


def describe(check: c.SpecCheck) -> str:
    """The sentence shown for a check in reports."""
    if check.description:
        return check.description
    match check:
        case c.FileExists():
            return f"File {check.path} exists"
        case c.FileContains():
            return f"File {check.path} matches /{check.pattern}/"
        case c.CommandCheck():
            extra = f" and prints /{check.stdout}/" if check.stdout else ""
            return f"`{check.run}` exits {check.exit_code}{extra}"
        case c.JsonPath():
            want = (f" == {json.dumps(check.equals)}" if check.equals is not None
                    else f" matches /{check.pattern}/" if check.pattern else " exists")
            return f"{check.path}: {check.query}{want}"
        case c.TranscriptContains():
            return f"{SOURCE_NAMES[check.source].capitalize()} contains {check.text!r}"
        case c.TranscriptRegex():
            return f"{SOURCE_NAMES[check.source].capitalize()} matches /{check.pattern}/"
        case c.ToolUsed():
            what = f" with input /{check.input}/" if check.input else ""
            return f"Tool {check.tool} used{what} at least {check.min_count}x"
        case c.CommandsSucceeded():
            return "Every command of the run succeeded on the first attempt"
        case c.NoStrayFiles():
            return "No file is left outside the case's declared outputs"
        case c.Budget():
            return budget_text(check)
    raise TypeError(check)  # pragma: no cover


SOURCE_NAMES = {"any": "what the agent and its tools produced",
                "tool_output": "the output of a tool that ran",
                "agent": "the agent's own words"}


@dataclass(frozen=True)
class Said:
    """One piece of text the agent or a tool produced, and where: an event and its kind."""

    seq: int
    source: str  # tool_output | agent | tool_input
    where: str  # as evidence names it
    text: str


def produced(events: list[Event], source: str) -> list[Said]:
    """The texts a transcript check searches, one per event: tool outputs (of calls that
    ran), the agent's messages and final answer, and (for ``any``) its tool calls' inputs.
    Never the prompt, a system message, text the runtime handed the agent (a skill's body)
    or a runtime error: those are not what the agent or its tools produced."""
    calls = calls_by_id(events)
    out = []
    for e in events:
        if isinstance(e, ToolResultEvent) and not e.refused and source in ("any", "tool_output"):
            call = calls.get(e.call_id)
            of = f" of event {call.seq} ({e.tool})" if call else f" ({e.tool})"
            out.append(Said(e.seq, "tool_output", f"event {e.seq}, tool output{of}", e.output))
        elif isinstance(e, MessageEvent) and e.role == "assistant" and source in ("any",
                                                                                   "agent"):
            out.append(Said(e.seq, "agent", f"event {e.seq}, the agent's own words", e.text))
        elif isinstance(e, EndEvent) and e.final_text and source in ("any", "agent"):
            out.append(Said(e.seq, "agent", f"event {e.seq}, the agent's final answer",
                            e.final_text))
        elif isinstance(e, ToolCallEvent) and source == "any":
            out.append(Said(e.seq, "tool_input", f"event {e.seq}, input of a {e.tool} call",
                            json.dumps(e.input, ensure_ascii=False)))
    return out


def _only_elsewhere(events: list[Event], found: Any, source: str) -> str:
    """Why a transcript check failed when the text is there, but not where it counts."""
    if source != "any":
        elsewhere = [s for s in produced(events, "any") if found(s.text)]
        if elsewhere:
            return f"; it is only in {elsewhere[0].where}, which does not count here"
    handed = [e for e in events if isinstance(e, MessageEvent) and e.role != "assistant"
              and found(e.text)]
    if handed:
        return (f"; it is only in what the agent was given (event {handed[0].seq}, "
                f"{handed[0].role}), which is no evidence")
    return ""


def _transcript(events: list[Event], source: str, what: str, search: Any) -> CheckOutcome:
    texts = produced(events, source)
    for said in texts:
        m = search(said.text)
        if m is not None:
            start, end = m
            shown = said.text[max(0, start - 80): end + 120]
            return CheckOutcome(True, f"{said.where}: {_short(shown, 220)!r}")
    return CheckOutcome(False, f"{what} not in {SOURCE_NAMES[source]} ({len(texts)} "
                               f"event(s)){_only_elsewhere(events, search, source)}")


def _short(text: str, cap: int = EVIDENCE_CAP) -> str:
    text = text.strip()
    return text if len(text) <= cap else "…" + text[-cap:]


def _lookup(ws: Path, rel: str) -> tuple[int, str] | None:
    """(parent folder descriptor, name) of ``rel`` resolved inside the workspace."""
    try:
        top = open_folder(ws, ws.parent)
    except OSError:
        return None
    try:
        return resolve_in_root(top, rel, str(ws))
    finally:
        os.close(top)


def _stat(ws: Path, rel: str) -> os.stat_result | None:
    found = _lookup(ws, rel)
    if found is None:
        return None
    fd, name = found
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read(ws: Path, rel: str) -> tuple[bytes, bool] | None:
    """At most `READ_CAP` bytes of the regular file ``rel`` (and whether it was cut)."""
    found = _lookup(ws, rel)
    if found is None:
        return None
    d, name = found
    try:
        fd = open_file(d, name)
    finally:
        os.close(d)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(READ_CAP + 1)
    return data[:READ_CAP], len(data) > READ_CAP


def _query(doc: Any, query: str) -> Any:
    q = query.strip()
    q = q[1:] if q.startswith("$") else q
    for name, index in re.findall(r"\.?([^.\[\]]+)|\[(-?\d+)\]", q):
        if index:
            doc = doc[int(index)]
        else:
            if not isinstance(doc, dict):
                raise KeyError(name)
            doc = doc[name]
    return doc


def _json_path(check: c.JsonPath, data: bytes) -> CheckOutcome:
    """A ``json_path`` check on a document a case wrote: whatever the document holds (an
    integer of 5,000 digits, invalid UTF-8) is this check's failure, with the reason."""
    try:
        doc = bounded_json.loads(data.decode("utf-8"), max_bytes=READ_CAP)
    except ValueError as exc:  # syntax, encoding, depth, an integer of too many digits
        return CheckOutcome(False, f"{check.path} is not valid JSON: {_short(str(exc), 200)}")
    try:
        value = _query(doc, check.query)
    except (KeyError, IndexError, TypeError, ValueError):
        return CheckOutcome(False, f"{check.query} not found in {check.path}")
    shown = json.dumps(value)[:200]
    if check.equals is not None and value != check.equals:
        return CheckOutcome(False, f"{check.query} = {shown}, expected "
                                   f"{json.dumps(check.equals)}")
    if check.pattern and not patterns.search(check.pattern, str(value)):
        return CheckOutcome(False, f"{check.query} = {shown} does not match "
                                   f"/{check.pattern}/")
    return CheckOutcome(True, f"{check.path}: {check.query} = {shown}")


def _refused_pattern(check: c.DeterministicCheck) -> CheckOutcome | None:
    """A check whose pattern RE2 refuses fails, saying why. A contract loaded today cannot
    hold one (it is `invalid`), but assertions.json of an older run can (``--resume``, a
    regrade): it was written when patterns ran on Python's ``re``."""
    for attr in ("pattern", "stdout", "input"):
        rx = getattr(check, attr, None)
        why = patterns.problem(rx) if isinstance(rx, str) else None
        if why:
            return CheckOutcome(False, f"{attr} /{_short(rx, 200)}/ cannot be run: {why}")
    return None


def run_check(check: c.SpecCheck, ctx: CheckContext) -> CheckOutcome | None:
    """The check's verdict; None when it could not be measured (a budget of a figure the
    runtime has none of): the judge leaves it ungraded."""
    refused = _refused_pattern(check)
    if refused is not None:
        return refused
    ws = ctx.workspace
    match check:
        case c.FileExists():
            st = _stat(ws, check.path)
            if st is not None:
                kind = "folder" if stat.S_ISDIR(st.st_mode) else f"{st.st_size} bytes"
                return CheckOutcome(True, f"{check.path} exists ({kind})")
            return CheckOutcome(False, f"{check.path} does not exist in the workspace")
        case c.FileContains():
            got = _read(ws, check.path)
            if got is None:
                return CheckOutcome(False, f"{check.path} does not exist in the workspace")
            text = got[0].decode("utf-8", errors="replace")
            m = patterns.search(check.pattern, text)
            if m:
                line = text.count("\n", 0, m.start) + 1
                return CheckOutcome(True, f"{check.path}:{line}: {_short(m.text, 200)}")
            first = f", first {READ_CAP} bytes read" if got[1] else ""
            return CheckOutcome(False, f"/{check.pattern}/ not found in {check.path} "
                                       f"({len(text)} chars{first}): {_short(text, 200)!r}")
        case c.CommandCheck():
            r = run_command(check.run, ws, ctx.env, check.timeout_s, cap=4000,
                            redactor=ctx.redactor, sandbox=ctx.sandbox)
            if r.timed_out:
                return CheckOutcome(False, f"timed out after {check.timeout_s}s")
            if r.exit_code != check.exit_code:
                return CheckOutcome(False, f"exit {r.exit_code}, expected {check.exit_code}: "
                                           f"{_short(r.combined())}")
            if check.stdout and not patterns.search(check.stdout, r.stdout):
                return CheckOutcome(False, f"stdout does not match /{check.stdout}/: "
                                           f"{_short(r.stdout)!r}")
            return CheckOutcome(True, f"exit {r.exit_code}: {_short(r.stdout, 200)!r}")
        case c.JsonPath():
            got = _read(ws, check.path)
            if got is None:
                return CheckOutcome(False, f"{check.path} does not exist in the workspace")
            if got[1]:
                return CheckOutcome(False, f"{check.path} is over {READ_CAP} bytes: not read")
            try:
                return _json_path(check, got[0])
            except RecursionError:  # the parser's own guard, or a comparison's
                return CheckOutcome(False, f"{check.path} is nested too deeply to be read")
        case c.TranscriptContains():
            needle = check.text

            def find(text: str) -> tuple[int, int] | None:
                i = text.find(needle)
                return (i, i + len(needle)) if i >= 0 else None

            return _transcript(ctx.events, check.source, repr(needle), find)
        case c.TranscriptRegex():
            pattern = check.pattern

            def match(text: str) -> tuple[int, int] | None:
                m = patterns.search(pattern, text)
                return (m.start, m.end) if m else None

            return _transcript(ctx.events, check.source, f"/{check.pattern}/", match)
        case c.ToolUsed():
            calls = [e for e in ctx.events if isinstance(e, ToolCallEvent) and e.tool == check.tool]
            if check.input:
                calls = [e for e in calls
                         if patterns.search(check.input, json.dumps(e.input, ensure_ascii=False))]
            ok = len(calls) >= check.min_count
            seqs = ", ".join(str(e.seq) for e in calls[:10])
            where = f" (events {seqs})" if seqs else ""
            return CheckOutcome(ok, f"{len(calls)} matching {check.tool} call(s){where}")
        case c.CommandsSucceeded():
            calls = calls_by_id(ctx.events)
            failed = [e for e in ctx.events if isinstance(e, ToolResultEvent) and not e.ok]
            results = [e for e in ctx.events if isinstance(e, ToolResultEvent)]
            if not results:
                return CheckOutcome(False, "no command was run")
            if not failed:
                return CheckOutcome(True, f"all {len(results)} tool call(s) succeeded")
            f = failed[0]
            call = calls.get(f.call_id)
            cmd = call.input.get("command", json.dumps(call.input)) if call else f.tool
            if f.refused:
                return CheckOutcome(False, f"event {f.seq}: `{_short(str(cmd), 200)}` was "
                                           f"refused by the runtime ({REFUSALS[f.refused]}): "
                                           f"{_short(f.output, 300)}")
            return CheckOutcome(False, f"event {f.seq}: `{_short(str(cmd), 200)}` exited "
                                       f"{f.exit_code}: {_short(f.output)}")
        case c.NoStrayFiles():
            return CheckOutcome(*stray_evidence(ctx.stray))
        case c.Budget():
            ok, evidence = judge_budget(check, ctx.efficiency)
            return None if ok is None else CheckOutcome(ok, evidence)
    raise TypeError(f"unknown check {check!r}")  # pragma: no cover
