"""Adapters: the outside world, one file per agent runtime, plus the LLM client, GitLab, git.

Runtimes are registered here by name and imported lazily, so a missing optional SDK or CLI
fails with a message saying what to install, and only when that runtime is used.
"""

from __future__ import annotations

import importlib
from typing import Any

from aeval.errors import RuntimeUnavailable
from aeval.runtime.protocol import AgentRuntime

# name -> "module:Class"; keep in sync with DESIGN.md's runtime table.
RUNTIMES: dict[str, str] = {
    "builtin": "aeval.adapters.runtimes.builtin:BuiltinRuntime",
    "claude-code": "aeval.adapters.runtimes.claude_code:ClaudeCodeRuntime",
    "literal": "aeval.adapters.runtimes.literal:LiteralRuntime",
    "replay": "aeval.adapters.runtimes.replay:ReplayRuntime",
    "codex": "aeval.adapters.runtimes.codex:CodexRuntime",
    "opencode": "aeval.adapters.runtimes.opencode:OpenCodeRuntime",
}


def runtime_class(name: str) -> type[AgentRuntime]:
    try:
        target = RUNTIMES[name]
    except KeyError:
        raise RuntimeUnavailable(
            f"unknown runtime {name!r}; known: {', '.join(sorted(RUNTIMES))}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def runs_steps_verbatim(name: str) -> bool:
    """The runtime registered as ``name`` runs a case's steps itself, with no model (its
    class's ``runs_steps_verbatim``); False for a name not registered."""
    try:
        return runtime_class(name).runs_steps_verbatim
    except RuntimeUnavailable:
        return False


def get_runtime(name: str, **options: Any) -> AgentRuntime:
    """An instance of the runtime registered as ``name``."""
    return runtime_class(name)(**options)
