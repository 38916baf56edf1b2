"""What the scripted model server answers: scripts of turns, chosen from the request alone.

A request picks its script by regex over the conversation text (system prompt + user text) and
its turn by the number of assistant turns already in its history. Both choices are stateless,
so a retried request (same history) gets the same turn and concurrent cases never interfere.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from aeval.strict import StrictModel

USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
)


class ToolCall(StrictModel):
    """One tool call the scripted model makes."""

    name: str = Field(min_length=1, description="Tool name, as offered by the client.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Arguments; sent JSON-encoded (OpenAI) or as input."
    )


class Turn(StrictModel):
    """One assistant answer, optionally preceded by injected faults."""

    text: str | None = Field(None, description="Assistant text (before any tool calls).")
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="Tool calls, in order, after the text."
    )
    fault: int | Literal["timeout", "disconnect"] | None = Field(
        None,
        description="Fault for the first `fault_times` requests reaching this turn: an HTTP "
        "status (429, 500, 503, 529, ...) with the provider's error body; 'timeout' (wait "
        "`delay_s`, 30 s when 0, then close without answering); 'disconnect' (close at once).",
    )
    fault_times: int = Field(1, ge=1, description="How many requests get the fault.")
    delay_s: float = Field(0, ge=0, description="Latency added before answering.")
    usage: dict[str, int] | None = Field(
        None,
        description="Token counts to report instead of the derived ones. Keys: input_tokens "
        "(EXCLUDING cached), cached_input_tokens, cache_write_tokens, output_tokens, "
        "reasoning_tokens; missing keys are 0.",
    )

    @field_validator("fault")
    @classmethod
    def _status(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and not 400 <= value <= 599:
            raise ValueError(f"fault status {value} is not an HTTP error status (400-599)")
        return value

    @field_validator("usage")
    @classmethod
    def _usage_keys(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        if value is not None:
            unknown = sorted(set(value) - set(USAGE_KEYS))
            if unknown:
                raise ValueError(f"unknown usage keys {unknown}; allowed: {list(USAGE_KEYS)}")
            if any(v < 0 for v in value.values()):
                raise ValueError("usage counts must be >= 0")
        return value


class Script(StrictModel):
    """A conversation the scripted model plays when its ``match`` regex hits a request."""

    name: str = Field(min_length=1, description="Name, recorded with every request it answers.")
    match: str = Field(
        description="Python regex searched (re.search) in the system prompt + user text."
    )
    model: str | None = Field(
        None,
        description="Python regex searched in the request's `model` field as well; None: any "
        "model (two grader models on one server get different scripts this way).",
    )
    turns: list[Turn] = Field(
        default_factory=list, description="Answer i goes to a request with i assistant turns."
    )
    final: str = Field("Done.", description="Text answer once the turns are used up.")

    @field_validator("match", "model")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regex {value!r}: {exc}") from exc
        return value

    def turn(self, index: int) -> Turn:
        """The turn for a request with ``index`` assistant turns in its history."""
        return self.turns[index] if index < len(self.turns) else Turn(text=self.final)


class ScriptFile(StrictModel):
    """What a script file holds (JSON or YAML): the scripts and the fallback answer.

    A bare list of scripts is accepted too.
    """

    scripts: list[Script] = Field(default_factory=list, description="Tried in order.")
    default: Turn = Field(
        default_factory=lambda: Turn(text="OK"), description="Answer when no script matches."
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        return {"scripts": data} if isinstance(data, list) else data

    @model_validator(mode="after")
    def _unique_names(self) -> ScriptFile:
        names = [s.name for s in self.scripts]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate script names {dupes}")
        return self


def load_script_file(path: str | Path) -> ScriptFile:
    """Read a script file: YAML for ``.yaml``/``.yml``, JSON otherwise."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    return ScriptFile.model_validate(data)


def select_script(scripts: list[Script], conversation: str, model: str = "") -> Script | None:
    """The first script whose regex is found in ``conversation`` (and whose ``model`` regex,
    if any, in the requested ``model``), or None."""
    return next((s for s in scripts if re.search(s.match, conversation)
                 and (s.model is None or re.search(s.model, model))), None)
