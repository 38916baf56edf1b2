"""The tools of the builtin agent loop: bash, read_file, write_file, edit_file, list_dir.

File tools resolve paths inside the workspace and refuse anything outside it. bash runs with
the workspace as cwd and only the case's environment; the workspace is not a sandbox (as in
the paper, staying inside it is an instruction), but every change to the skill copy is seen:
the skill manifest is compared before and after each call, and changed skill files are
reported in ``paths_written`` of that call's result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aeval.shell import cap_text, run_command
from aeval.workspace import manifest

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


class ToolError(Exception):
    """A tool refused or failed (bad path, missing file, ambiguous edit): shown to the model."""


class Toolbox:
    def __init__(self, workspace: Path, skill_dir: Path, env: dict[str, str], cap: int):
        self.ws = workspace.resolve()
        self.skill_dir = skill_dir.resolve()
        self.env = env
        self.cap = cap

    def _path(self, rel: str | None) -> Path:
        if not isinstance(rel, str) or not rel.strip():
            raise ToolError("a path is required")
        p = (self.ws / rel).resolve()
        if not p.is_relative_to(self.ws):
            raise ToolError(f"{rel}: outside the workspace")
        return p

    def _rel(self, p: Path) -> str:
        return p.relative_to(self.ws).as_posix()

    def run(self, name: str, args: dict[str, Any], time_left: float) -> ToolOutcome:
        try:
            if name not in TOOL_NAMES:
                raise ToolError(f"unknown tool {name!r}; tools: {', '.join(sorted(TOOL_NAMES))}")
            if "_unparsed" in args:
                raise ToolError(f"arguments are not valid JSON: {args['_unparsed'][:200]}")
            return getattr(self, f"_{name}")(args, time_left)
        except ToolError as exc:
            return ToolOutcome(ok=False, output=f"error: {exc}")
        except (OSError, UnicodeDecodeError) as exc:
            return ToolOutcome(ok=False, output=f"error: {type(exc).__name__}: {exc}")

    def _bash(self, args: dict, time_left: float) -> ToolOutcome:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolError("command is required")
        timeout = min(float(args.get("timeout_s") or 600), max(time_left, 1))
        before = manifest(self.skill_dir)
        r = run_command(command, self.ws, self.env, timeout, self.cap)
        after = manifest(self.skill_dir)
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
        text, cut = cap_text(p.read_text(encoding="utf-8"), self.cap)
        return ToolOutcome(ok=True, output=text, truncated=cut)

    def _write_file(self, args: dict, _: float) -> ToolOutcome:
        p = self._path(args.get("path"))
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content, encoding="utf-8")
        return ToolOutcome(ok=True, output=f"wrote {len(content)} characters to {self._rel(p)}",
                           paths_written=[self._rel(p)])

    def _edit_file(self, args: dict, _: float) -> ToolOutcome:
        p = self._path(args.get("path"))
        old, new = args.get("old_text"), args.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            raise ToolError("old_text (non-empty) and new_text are required")
        if not p.is_file():
            raise ToolError(f"{args.get('path')}: no such file")
        text = p.read_text(encoding="utf-8")
        n = text.count(old)
        if n != 1:
            raise ToolError(f"old_text occurs {n} times in {self._rel(p)}; it must occur once")
        p.write_text(text.replace(old, new, 1), encoding="utf-8")
        return ToolOutcome(ok=True, output=f"edited {self._rel(p)}", paths_written=[self._rel(p)])

    def _list_dir(self, args: dict, _: float) -> ToolOutcome:
        p = self._path(args.get("path") or ".")
        if not p.is_dir():
            raise ToolError(f"{args.get('path')}: not a folder")
        entries = sorted(f"{c.name}/" if c.is_dir() else c.name for c in p.iterdir())
        return ToolOutcome(ok=True, output="\n".join(entries) or "(empty)")
