"""Drafting a skill's eval.config with a model (`aeval init --model`): one structured call
whose answer is the contract itself, validated by the model the JSON Schema is generated
from (`aeval.skill.contract.EvalConfig`) and by `aeval.skill.contract_draft.check_draft`; an invalid
answer is asked again once, with the validation error, and then refused (nothing is
written). A plain function: `aeval init` is no pipeline phase and runs no flow of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from aeval.adapters.llm import ask_json
from aeval.prompts import load_prompt
from aeval.skill.contract import EvalConfig
from aeval.skill.contract_draft import check_draft, draft_input
from aeval.skill.skill_md import Skill

DRAFT_ATTEMPTS = 2  # the answer, and one retry with the validation error


@dataclass(frozen=True)
class Draft:
    """A drafted contract, or why there is none."""

    config: EvalConfig | None
    error: str | None
    attempts: int


def draft_contract(skill: Skill, model: str, cases: int, api_base: str | None = None) -> Draft:
    """Ask ``model`` for ``cases`` cases of ``skill``. Model-API failures propagate
    (ModelTransientError after the per-call retries, ModelPermanentError at once)."""
    checked: list[EvalConfig] = []

    def check(config: EvalConfig) -> None:
        checked.append(check_draft(config, skill, cases))  # DraftRejected is a ValueError

    answer = ask_json(model, load_prompt("contract_writer"), draft_input(skill, cases),
                      EvalConfig, api_base=api_base, attempts=DRAFT_ATTEMPTS, check=check)
    if answer.value is None:
        return Draft(None, answer.error, answer.attempts)
    return Draft(checked[-1], None, answer.attempts)
