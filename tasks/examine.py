"""Examine: load SKILL.md and the contract (three tiers), lint. Never raises: a bad skill comes
back invalid with every problem, so the other skills still run."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from aeval.contract import find_marketplace, load_contract
from aeval.errors import ContractError
from aeval.plan import Examined
from aeval.skill import load_skill


def examine(root: Path, marketplace: Path | None = None) -> Examined:
    root = Path(root).resolve()
    try:
        skill = load_skill(root)
    except ContractError as exc:
        return Examined(root=root, problems=[str(p) for p in exc.problems])
    try:
        loaded = load_contract(skill, marketplace or find_marketplace(root))
    except ContractError as exc:
        return Examined(root=root, skill=skill, warnings=skill.warnings,
                        problems=[str(p) for p in exc.problems])
    return Examined(root=root, skill=skill, tier=loaded.tier, contract=loaded.source,
                    cases=loaded.config.evals, warnings=skill.warnings)


@task(name="examine", task_run_name="examine {root.name}")
def examine_skill(root: Path, marketplace: Path | None = None) -> Examined:
    """Load one skill and its cases."""
    return examine(root, marketplace)
