"""The runtime Protocol: the one seam between aeval and an agent (or no agent at all).

An adapter gets an `ExecutionRequest` (prompt, prepared workspace, allowed environment,
limits) and an `EventRecorder`, emits normalized events through it while it executes, and
returns an `ExecutionResult`: one execution of one attempt (a "run" is the whole evaluation).
Adapters live in ``adapters/``, one file each, registered by name there.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from aeval.bounded_json import MAX_DEPTH, clip
from aeval.events import (
    EVENT_ADAPTER,
    EndEvent,
    ErrorEvent,
    Event,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    Usage,
    UsageEvent,
)
from aeval.isolation.redact import Redactor
from aeval.isolation.sandbox import Sandbox
from aeval.skill.shell_blocks import DocBlock
from aeval.verdicts.doctest import DocTestReport


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(60, ge=1, description="Most model turns.")
    timeout_s: float = Field(1800, gt=0, description="Wall-clock seconds for the whole run.")
    output_cap: int = Field(16_000, gt=0, description="Characters kept of one tool's output.")


class ExecutionRequest(BaseModel):
    """Everything a runtime may use. Nothing else from the parent process reaches the agent."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    prompt: str
    case_id: str
    epoch: int | None = Field(None, description="The case's epoch; None in a one-epoch run.")
    workspace: Path = Field(description="Working directory: the workspace root.")
    home: Path = Field(description="An empty, private HOME for this attempt (outside workspace).")
    skill_name: str
    skill_key: str | None = Field(
        None, description="The skill's folder key in the run (its name, or the name plus a "
                          "hash of its folder when two skills of the run share the name).")
    skill_description: str
    skill_dir: Path = Field(description="The skill copy inside the workspace ($SKILL_DIR).")
    skill_installed: bool = Field(
        True, description="False: uplift's without-skill arm; `skill_dir` is an empty folder "
                          "and the runtime must not announce the skill.")
    env: dict[str, str] = Field(
        description="The whole environment of tool processes: a minimal base plus the case's "
                    "declared credentials. Model API keys of the runtime itself are not here."
    )
    steps: list[str] = Field(default_factory=list, description="For `literal`: the commands.")
    doc_test: bool = Field(False, description="For `literal`: the steps are SKILL.md's blocks, "
                                              "run as a doc test from the skill folder.")
    doc_blocks: list[DocBlock] = Field(
        default_factory=list,
        description="For a doc test: each step with its SKILL.md line and the prose before it "
                    "(from the original SKILL.md, never re-read from the copy).")
    host_tools: list[str] = Field(default_factory=list,
                                  description="Host tools the case declares it needs.")
    limits: Limits = Field(default_factory=Limits)
    model: str | None = Field(None, description="Model identifier, for runtimes that use one.")
    api_base: str | None = Field(None, description="Model API base URL override.")
    system_prompt: str = Field("", description="Executor rules: eval_skill/agents/executor.md.")
    raw_log: Path = Field(description="Where the runtime writes its native output, as is.")
    sandbox: Sandbox | None = Field(
        None, exclude=True,
        description="Where the run's commands go (steps, the bash tool; a CLI runtime wraps its "
                    "whole process with ``sandbox.argv``). None: unsandboxed. A live object, "
                    "never serialized.")


class ExecutionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Literal["completed", "failed", "timeout", "max_turns", "untested"] = Field(
        description="completed: the agent (or every step; for a doc test, every block) "
                    "finished; failed: a step or the agent gave up; timeout / max_turns: a "
                    "limit stopped it; untested: nothing runnable here (no steps, no shell "
                    "block: final_text says which). A doc test's verdict is not here: the "
                    "judge decides it from `doc_test`."
    )
    final_text: str = ""
    usage: Usage = Field(default_factory=Usage)
    wall_s: float = Field(0, ge=0)
    raw_log: str | None = Field(None, description="Path of the native log, if any.")
    runtime_version: str | None = None
    doc_test: DocTestReport | None = Field(
        None, description="For a doc test: what each of SKILL.md's blocks did.")


class EventRecorder:
    """Numbers events, redacts secrets, and appends them to events.jsonl as they happen.

    Thread-safe; each line is flushed, so a killed run keeps every event before the kill.
    """

    def __init__(self, path: Path, redactor: Redactor):
        self.path = Path(path)
        self.redactor = redactor
        self.events: list[Event] = []
        self._start = time.monotonic()
        self.clock_start = self._start  # `t` of an event = time.monotonic() - clock_start
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("w", encoding="utf-8")

    def emit(self, kind: type[Event] | Any, **fields: Any) -> Event:
        with self._lock:
            data = {"seq": len(self.events), "t": round(time.monotonic() - self._start, 3),
                    "kind": kind.model_fields["kind"].default,
                    **{k: clip(v, MAX_DEPTH - 2) for k, v in fields.items()}}
            clean = json.loads(self.redactor.text(json.dumps(data, default=str)))
            event = EVENT_ADAPTER.validate_python(clean)
            self.events.append(event)
            self._fh.write(event.model_dump_json() + "\n")
            self._fh.flush()
            return event

    # Shorthands used by the adapters.
    def message(self, role: str, text: str) -> Event:
        return self.emit(MessageEvent, role=role, text=text)

    def tool_call(self, call_id: str, tool: str, input: dict) -> Event:
        return self.emit(ToolCallEvent, call_id=call_id, tool=tool, input=input)

    def tool_result(self, call_id: str, tool: str, ok: bool, **kw: Any) -> Event:
        return self.emit(ToolResultEvent, call_id=call_id, tool=tool, ok=ok, **kw)

    def usage(self, usage: Usage, model: str | None = None) -> Event:
        return self.emit(UsageEvent, usage=usage.model_dump(), model=model)

    def error(self, message: str, transient: bool, error_type: str | None = None) -> Event:
        return self.emit(ErrorEvent, message=message, transient=transient, error_type=error_type)

    def end(self, status: str, final_text: str = "") -> Event:
        return self.emit(EndEvent, status=status, final_text=final_text)

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()


@runtime_checkable
class AgentRuntime(Protocol):
    """What every adapter in ``adapters/`` implements. Class-level flags let the runner fail
    fast (a model-less runtime given no steps, a model runtime given no model)."""

    name: ClassVar[str]
    skills_subdir: ClassVar[str | None]  # where the skill copy goes, relative to the workspace
    needs_model: ClassVar[bool]  # it uses a model: a case needs --model for it
    runs_steps_verbatim: ClassVar[bool]
    """It runs the case's `steps` itself, verbatim, with no model: a doc-test case (the
    generic tier, SKILL.md's blocks as steps) is a doc test under it, run from the skill
    folder, whose files it adds are outputs, and whose verdict the doc-test rules decide."""
    config_dirs: ClassVar[tuple[str, ...]]  # runtime-owned folders in the workspace (not outputs)
    install_hint: ClassVar[str]  # the exact command that installs what the runtime needs

    def version(self) -> str | None:
        """The installed version of the runtime's SDK or CLI, or None when not installed."""

    def check_available(self) -> None:
        """Raise RuntimeUnavailable (saying what to install) when this runtime cannot run."""

    def run(self, request: ExecutionRequest, recorder: EventRecorder) -> ExecutionResult:
        """Run the prompt in the workspace, emitting events; raise TransientError for
        retryable model-API failures and other EnvironmentFailures for permanent ones."""
