"""The tools of the builtin agent loop: bash, read_file, write_file, edit_file, list_dir.

File tools resolve paths inside the workspace and refuse anything outside it: a path that
resolves outside, a symlink swapped in at the last component (opened with O_NOFOLLOW), a
file with more than one hard link (its other name may be outside the workspace), anything
that is not a regular file. read_file reads at most its cap (head and tail), however big the
file. bash runs with the workspace as cwd and only the case's environment, inside the
attempt's sandbox when one is given. Every change to the skill copy is seen: the skill
manifest is compared before and after each call, and changed skill entries are reported in
``paths_written`` of that call's result. Bad arguments from the model are tool errors,
never exceptions; an unknown tool or unusable arguments are a refusal (the call did not
run: ``refused`` on its result), the agent's error, never the skill's.
"""

from __future__ import annotations

import errno
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aeval.adapters.sandbox.watch import quiet_uses
from aeval.events import Refusal
from aeval.isolation.redact import Redactor
from aeval.isolation.shell import cap_text, run_command
from aeval.isolation.workspace import manifest

if TYPE_CHECKING:
    from aeval.isolation.sandbox import Sandbox

TOOL_SPECS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "bash",
        "description": "Run a bash command in the workspace root. Returns exit code, stdout "
                       "and stderr (long output is cut in the middle).",
        "parameters": {"type": "object", "properties": {
            "command": {"type": "string", "description": "The command line."},
            "timeout_s": {"type": "number", "description": "Seconds before it is killed "
                                                           "(default 600)."}},
            "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "read_file",
        "description": "Read a text file (path relative to the workspace root).",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string"}}, "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "write_file",
        "description": "Create or overwrite a text file (path relative to the workspace root).",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"]}}},
    {"type": "function", "function": {
        "name": "edit_file",
        "description": "Replace one exact occurrence of old_text with new_text in a file.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string"}, "old_text": {"type": "string"},
            "new_text": {"type": "string"}}, "required": ["path", "old_text", "new_text"]}}},
    {"type": "function", "function": {
        "name": "list_dir",
        "description": "List a folder (path relative to the workspace root; default '.').",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
]
TOOL_NAMES = frozenset(t["function"]["name"] for t in TOOL_SPECS)


@dataclass
class ToolOutcome:
    ok: bool
    output: str
    exit_code: int | None = None
    truncated: bool = False
    duration_s: float | None = None
    paths_written: list[str] = field(default_factory=list)
    refused: Refusal | None = None  # the call did not run at all (see ToolResultEvent.refused)


class ToolError(Exception):
    """A tool refused or failed (bad path, missing file, ambiguous edit): shown to the model."""


class BadArguments(ToolError):
    """The call's arguments are unusable (missing, of the wrong type): the tool did not run."""


DEFAULT_BASH_TIMEOUT_S = 600.0
MAX_EDIT_BYTES = 10_000_000  # edit_file holds the file in memory: bound it


def _timeout(value: Any) -> float:
    """The model's ``timeout_s``, validated: a positive finite number (or absent)."""
    if value is None or value == "":
        return DEFAULT_BASH_TIMEOUT_S
    if isinstance(value, bool):
        raise BadArguments(f"timeout_s must be a number of seconds, not {value!r}")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise BadArguments(f"timeout_s must be a number of seconds, not {value!r}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise BadArguments(f"timeout_s must be a positive number of seconds, not {value!r}")
    return seconds


class Toolbox:
    def __init__(self, workspace: Path, skill_dir: Path, env: dict[str, str], cap: int,
                 sandbox: Sandbox | None = None, redactor: Redactor | None = None):
        self.ws = workspace.resolve()
        self.skill_dir = skill_dir.resolve()
        self.env = env
        self.cap = cap
        self.sandbox = sandbox
        self.redactor = redactor or Redactor()

    def _path(self, rel: Any) -> Path:
        if not isinstance(rel, str) or not rel.strip():
            raise BadArguments("a path (a non-empty string) is required")
        if "\0" in rel:
            raise BadArguments("a path cannot hold a NUL character")
        p = (self.ws / rel).resolve()
        if not p.is_relative_to(self.ws):
            raise ToolError(f"{rel}: outside the workspace")
        return p

    def _rel(self, p: Path) -> str:
        return p.relative_to(self.ws).as_posix()

    def _open(self, p: Path, flags: int) -> int:
        """Open a regular, singly linked file inside the workspace, never through a symlink."""
        try:
            fd = os.open(p, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # the last component is a symlink
                raise ToolError(f"{self._rel(p)}: is a symlink; refusing to follow it") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            os.close(fd)
            why = "not a regular file" if not stat.S_ISREG(st.st_mode) else (
                f"has {st.st_nlink} hard links (one may lead outside the workspace)")
            raise ToolError(f"{self._rel(p)}: {why}; refusing to touch it")
        os.set_blocking(fd, True)
        return fd

    def _read_text(self, p: Path, limit: int | None = None) -> tuple[str, bool]:
        """The file's text; with ``limit``, at most about ``limit`` bytes are read (head and
        tail) and the text is redacted before it is cut."""
        fd = self._open(p, os.O_RDONLY)
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fd).st_size
            if limit is None or size <= limit:
                data = fh.read(limit + 1 if limit is not None else -1)
                if limit is None or len(data) <= limit:
                    return data.decode("utf-8"), False
            margin = self.redactor.longest + 8
            head_keep = limit // 3
            fh.seek(0)
            head = fh.read(head_keep + margin).decode("utf-8", "replace")
            tail_keep = limit - head_keep
            fh.seek(max(size - tail_keep - margin, 0))
            tail = fh.read(tail_keep + margin).decode("utf-8", "replace")
        head = self.redactor.head(head, head_keep)
        tail = self.redactor.tail(tail, tail_keep)
        return f"{head}\n[... about {size - limit} bytes cut ...]\n{tail}", True

    def _write_text(self, p: Path, text: str) -> None:
        fd = self._open(p, os.O_WRONLY | os.O_CREAT)
        with os.fdopen(fd, "wb") as fh:
            fh.truncate(0)
            fh.write(text.encode("utf-8"))

    def run(self, name: str, args: dict[str, Any], time_left: float) -> ToolOutcome:
        try:
            if name not in TOOL_NAMES:
                return ToolOutcome(ok=False, refused="unknown_tool", output=(
                    f"error: unknown tool {name!r}; tools: {', '.join(sorted(TOOL_NAMES))}"))
            if not isinstance(args, dict):
                raise BadArguments(f"arguments must be a JSON object, not {type(args).__name__}")
            if "_unparsed" in args:
                raise BadArguments(f"arguments are not valid JSON: {str(args['_unparsed'])[:200]}")
            return getattr(self, f"_{name}")(args, time_left)
        except BadArguments as exc:
            return ToolOutcome(ok=False, output=f"error: {exc}", refused="invalid_arguments")
        except ToolError as exc:
            return ToolOutcome(ok=False, output=f"error: {exc}")
        except (OSError, UnicodeError, ValueError, TypeError, OverflowError) as exc:
            return ToolOutcome(ok=False, output=f"error: {type(exc).__name__}: {exc}")

    def _bash(self, args: dict, time_left: float) -> ToolOutcome:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise BadArguments("command (a non-empty string) is required")
        timeout = min(_timeout(args.get("timeout_s")), max(time_left, 1))
        with quiet_uses(self.skill_dir):  # aeval's own reads are not the agent's uses
            before = manifest(self.skill_dir, self.ws)
        r = run_command(command, self.ws, self.env, timeout, self.cap, redactor=self.redactor,
                        sandbox=self.sandbox)
        with quiet_uses(self.skill_dir):
            after = manifest(self.skill_dir, self.ws)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        out = r.combined()
        body = f"exit code: {r.exit_code if not r.timed_out else 'killed (timeout)'}\n{out}"
        return ToolOutcome(ok=r.ok, output=body, exit_code=r.exit_code, truncated=r.truncated,
                           duration_s=round(r.duration_s, 3),
                           paths_written=[self._rel(self.skill_dir / c) for c in changed])

    def _read_file(self, args: dict, _: float) -> ToolOutcome:
        p = self._path(args.get("path"))
        if not p.is_file():
            raise ToolError(f"{args.get('path')}: no such file")
        text, cut = self._read_text(p, self.cap)
        if not cut:
            text, cut = cap_text(self.redactor.text(text), self.cap)
        return ToolOutcome(ok=True, output=text, truncated=cut)

    def _write_file(self, args: dict, _: float) -> ToolOutcome:
        p = self._path(args.get("path"))
        content = args.get("content")
        if not isinstance(content, str):
            raise BadArguments("content must be a string")
        p.parent.mkdir(parents=True, exist_ok=True)
        if not p.parent.resolve().is_relative_to(self.ws):
            raise ToolError(f"{args.get('path')}: outside the workspace")
        self._write_text(p, content)
        return ToolOutcome(ok=True, output=f"wrote {len(content)} characters to {self._rel(p)}",
                           paths_written=[self._rel(p)])

    def _edit_file(self, args: dict, _: float) -> ToolOutcome:
        p = self._path(args.get("path"))
        old, new = args.get("old_text"), args.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            raise BadArguments("old_text (non-empty) and new_text are required strings")
        if not p.is_file():
            raise ToolError(f"{args.get('path')}: no such file")
        if p.stat().st_size > MAX_EDIT_BYTES:
            raise ToolError(f"{self._rel(p)}: too large to edit ({p.stat().st_size} bytes)")
        text, _ = self._read_text(p)
        n = text.count(old)
        if n != 1:
            raise ToolError(f"old_text occurs {n} times in {self._rel(p)}; it must occur once")
        self._write_text(p, text.replace(old, new, 1))
        return ToolOutcome(ok=True, output=f"edited {self._rel(p)}", paths_written=[self._rel(p)])

    def _list_dir(self, args: dict, _: float) -> ToolOutcome:
        p = self._path(args.get("path") or ".")
        if not p.is_dir():
            raise ToolError(f"{args.get('path')}: not a folder")
        entries = sorted(f"{c.name}/" if c.is_dir() else c.name for c in p.iterdir())
        text, cut = cap_text("\n".join(entries) or "(empty)", self.cap)
        return ToolOutcome(ok=True, output=text, truncated=cut)
