"""`builtin`: aeval's own tool-using agent loop on litellm, so any provider works (local ones
included): ``--model openai/<name>``, ``anthropic/<name>``, ``ollama/<name>`` ...

The skill copy sits at ``.agents/skills/<name>/`` and is announced by name and description
in the system prompt; the agent reads SKILL.md itself. The request prefix is byte-stable
(no timestamps or random ids; the conversation only grows), and for Anthropic models cache
breakpoints sit on the tools, the system prompt and the newest message, so repeated turns
read the prompt from the cache.
"""

from __future__ import annotations

import copy
import json
import os
import time
from typing import Any, ClassVar

from aeval.adapters.llm import case_retry_budget, complete, is_anthropic
from aeval.adapters.runtimes._agent_tools import TOOL_SPECS, Toolbox
from aeval.errors import (
    ContractError,
    EnvironmentFailure,
    ModelTransientError,
    RuntimeUnavailable,
)
from aeval.events import Usage
from aeval.runtime.model_keys import MODELS_INSTALL
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, ExecutionResult
from aeval.skill.skill_md import load_skill

SKILL_NOTE = """
## Your skill

One agent skill is installed for this task:

- **{name}**: {description}
  Location: `{path}/` (read `{path}/SKILL.md` first; scripts and references sit beside it).
"""
_EPHEMERAL = {"type": "ephemeral"}


SKILLS_NOTE = """
## Your skills

{count} agent skills are installed; each is for the tasks its description names:

{items}
"""
SKILLS_ITEM = """- **{name}**: {description}
  Location: `{path}/` (its SKILL.md first; scripts and references sit beside it)."""


def installed_skills(request: ExecutionRequest) -> list[tuple[str, str, str]]:
    """(name, description, workspace-relative folder) of every skill beside the skill copy
    (`aeval trigger-accuracy` installs distractors there), sorted by folder name; the copy alone
    when it has no neighbours."""
    found = []
    for d in sorted(request.skill_dir.parent.iterdir()):
        if d == request.skill_dir or not (d / "SKILL.md").is_file():
            continue
        try:
            s = load_skill(d)
        except ContractError:
            continue
        found.append((s.name, s.description, d.relative_to(request.workspace).as_posix()))
    if not found:
        return []
    rel = request.skill_dir.relative_to(request.workspace).as_posix()
    found.append((request.skill_name, request.skill_description, rel))
    return sorted(found, key=lambda x: x[2])


def system_prompt(request: ExecutionRequest) -> str:
    """The executor rules, and the installed skill announced (none without the skill)."""
    rel = request.skill_dir.relative_to(request.workspace).as_posix()
    base = request.system_prompt.replace("{skill_path}", rel)
    if not request.skill_installed:
        return base.rstrip() + "\n"
    skills = installed_skills(request)
    if skills:
        items = "\n".join(SKILLS_ITEM.format(name=n, description=d, path=p)
                          for n, d, p in skills)
        return base.rstrip() + "\n" + SKILLS_NOTE.format(count=len(skills), items=items)
    return base.rstrip() + "\n" + SKILL_NOTE.format(name=request.skill_name,
                                                   description=request.skill_description,
                                                   path=rel)


def with_cache_breakpoints(messages: list[dict], tools: list[dict]) -> tuple[list, list]:
    """Anthropic prompt caching: breakpoints on the tools, the system prompt and the newest
    message. Copies; the conversation itself is never rewritten."""
    msgs = copy.deepcopy(messages)
    for i in (0, len(msgs) - 1):
        m = msgs[i]
        if m["role"] == "tool":  # litellm puts it on the tool_result block
            m["cache_control"] = _EPHEMERAL
        elif isinstance(m.get("content"), str) and m["content"]:
            m["content"] = [{"type": "text", "text": m["content"], "cache_control": _EPHEMERAL}]
    tls = copy.deepcopy(tools)
    tls[-1]["function"]["cache_control"] = _EPHEMERAL
    return msgs, tls


class BuiltinRuntime:
    name: ClassVar[str] = "builtin"
    skills_subdir: ClassVar[str | None] = ".agents/skills"
    needs_model: ClassVar[bool] = True
    runs_steps_verbatim: ClassVar[bool] = False
    config_dirs: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = MODELS_INSTALL

    def version(self) -> str | None:
        try:
            return f"litellm {_litellm_version()}"
        except Exception:
            return None

    def __init__(self, api_key_env: str | None = None):
        """``api_key_env``: name of the variable holding the model key (default: the
        provider's usual one, read by litellm from aeval's own environment)."""
        self.api_key_env = api_key_env

    def check_available(self) -> None:
        from importlib.util import find_spec

        if find_spec("litellm") is None:  # found, not imported: importing takes seconds
            raise RuntimeUnavailable(f"the builtin runtime needs litellm: {MODELS_INSTALL}")

    def run(self, request: ExecutionRequest, recorder: EventRecorder) -> ExecutionResult:
        if not request.model:
            raise RuntimeUnavailable("the builtin runtime needs --model (a litellm model string)")
        start = time.monotonic()
        deadline = start + request.limits.timeout_s
        tools = Toolbox(request.workspace, request.skill_dir, request.env,
                        request.limits.output_cap, sandbox=request.sandbox,
                        redactor=recorder.redactor)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(request)},
            {"role": "user", "content": request.prompt},
        ]
        recorder.message("user", request.prompt)
        api_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        anthropic = is_anthropic(request.model)
        usage = None
        status, final, turns = "completed", "", 0
        budget = case_retry_budget()  # transient API faults are retried per call first
        raw = request.raw_log.open("a", encoding="utf-8")
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    status, final = "timeout", f"timeout after {turns} turn(s)"
                    break
                if turns >= request.limits.max_turns:
                    status, final = "max_turns", f"stopped at max_turns={turns}"
                    break
                msgs, specs = (with_cache_breakpoints(messages, TOOL_SPECS) if anthropic
                               else (messages, TOOL_SPECS))
                try:
                    comp = complete(request.model, msgs, specs, api_base=request.api_base,
                                    api_key=api_key, timeout=min(600.0, left), budget=budget)
                except EnvironmentFailure as exc:
                    recorder.error(str(exc), transient=isinstance(exc, ModelTransientError),
                                   error_type=type(exc).__name__)
                    raise
                turns += 1
                raw.write(json.dumps(comp.raw, default=str) + "\n")
                raw.flush()
                usage = comp.usage if usage is None else usage + comp.usage
                recorder.usage(comp.usage, request.model)
                if comp.text:
                    recorder.message("assistant", comp.text)
                messages.append(comp.message)
                if not comp.tool_calls:
                    final = comp.text
                    break
                for call in comp.tool_calls:
                    recorder.tool_call(call.id, call.name, call.arguments)
                    out = tools.run(call.name, call.arguments, deadline - time.monotonic())
                    recorder.tool_result(call.id, call.name, out.ok, exit_code=out.exit_code,
                                         output=out.output, duration_s=out.duration_s,
                                         truncated=out.truncated,
                                         paths_written=out.paths_written,
                                         refused=out.refused)
                    messages.append({"role": "tool", "tool_call_id": call.id,
                                     "content": out.output})
        finally:
            raw.close()
        recorder.end(status, final)
        return ExecutionResult(status=status, final_text=final, usage=usage or Usage(),
                               wall_s=time.monotonic() - start,
                               runtime_version=f"litellm {_litellm_version()}")


def _litellm_version() -> str:
    from importlib.metadata import version

    return version("litellm")
