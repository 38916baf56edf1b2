"""Assertions, written BEFORE install and execution, from the contract alone.

Author assertions are kept verbatim; the structural assertion (skill files unmodified) is
always added. (A model-written set from SKILL.md + expected_outcome joins them when an
assertion-writer model is configured.)
"""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import AssertionsFile, AssertionSpec
from aeval.checks import describe
from aeval.contract import Tier
from aeval.plan import CasePlan
from aeval.store import write_model

STRUCTURAL_TEXT = "The skill's files were not modified during execution"


def build_assertions(plan: CasePlan) -> list[AssertionSpec]:
    source = "generic" if plan.tier == Tier.generic else "author"
    specs = []
    for i, a in enumerate(plan.case.assertions, 1):
        if isinstance(a, str):
            specs.append(AssertionSpec(id=f"A{i}", text=a, kind="natural_language",
                                       source=source))
        else:
            specs.append(AssertionSpec(id=f"A{i}", text=describe(a), kind="deterministic",
                                       source=source, check=a))
    specs.append(AssertionSpec(id="S1", text=STRUCTURAL_TEXT, kind="structural",
                               source="structural"))
    return specs


def write_assertions_file(plan: CasePlan) -> AssertionsFile:
    specs = build_assertions(plan)
    doc = AssertionsFile(skill=plan.skill.name, case_id=plan.case.id,
                         written_at=datetime.now(UTC), writer="author-only",
                         sha256=AssertionsFile.digest(specs), assertions=specs)
    write_model(plan.case_dir / "assertions.json", doc)
    return doc


@task(name="assertions", task_run_name="assertions {plan.label}", cache_policy=NO_CACHE)
def write_assertions(plan: CasePlan) -> AssertionsFile:
    """Fix the assertions of one case before anything runs."""
    return write_assertions_file(plan)
