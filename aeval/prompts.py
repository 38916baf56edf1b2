"""The one loader of the prompt templates in ``eval_skill/agents/*.md``."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

AGENTS_DIR = files("aeval.eval_skill") / "agents"
PROMPTS = ("executor", "executor_no_skill", "assertion_writer", "grader", "analyzer",
           "comparator", "suggester", "trigger_executor", "contract_writer",
           "comparative_grader")


@cache
def load_prompt(name: str) -> str:
    """The text of ``eval_skill/agents/<name>.md``."""
    if name not in PROMPTS:
        raise KeyError(f"unknown prompt {name!r}; known: {', '.join(PROMPTS)}")
    return (AGENTS_DIR / f"{name}.md").read_text(encoding="utf-8")
