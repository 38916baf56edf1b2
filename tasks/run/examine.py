"""Examine: load SKILL.md and the contract (three tiers), lint. Never raises: a bad skill comes
back invalid with every problem, so the other skills still run."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from aeval.adapters.git import left_out
from aeval.errors import ContractError
from aeval.run.plan import Examined
from aeval.skill.contract import (
    DOC_CASE_ID,
    EvalCase,
    Tier,
    find_marketplace,
    generic_config,
    load_contract,
)
from aeval.skill.contract_draft import unfilled
from aeval.skill.skill_md import load_skill
from aeval.verdicts.static_check import static_check


def _examine(root: Path, marketplace: Path | None) -> Examined:
    try:
        skill = load_skill(root)
    except ContractError as exc:
        return Examined(root=root, problems=[str(p) for p in exc.problems])
    # what ships: every tracked file; only what git's ignore rules (or untracked caches) leave
    skill = skill.model_copy(update={"left_out": left_out(root)})
    try:
        loaded = load_contract(skill, marketplace or find_marketplace(root))
    except ContractError as exc:
        return Examined(root=root, skill=skill, warnings=skill.warnings,
                        problems=[str(p) for p in exc.problems])
    warnings = list(skill.warnings)
    if loaded.source:  # what `aeval init` left for the author to write
        warnings += [str(p) for p in unfilled(
            loaded.config.model_dump(mode="json", exclude_defaults=True), loaded.source)]
    try:
        findings = static_check(skill)
    except Exception as exc:  # a bug of the check must not make the skill invalid
        findings = []
        warnings.append(f"{skill.skill_md}: the static check failed (aeval internal error: "
                        f"{type(exc).__name__}: {str(exc)[:200]})")
    # an S0 warning (a mention in a reference file's prose, a generic example name, a layout
    # tree's entry) travels as a lint warning: shown by `validate` and `run`, never a fail
    warnings += [f.located(root) for f in findings if f.severity == "warning"]
    return Examined(root=root, skill=skill, tier=loaded.tier, contract=loaded.source,
                    cases=loaded.config.evals, doc_case=doc_case(skill, loaded),
                    static_findings=[f for f in findings if f.severity == "defect"],
                    warnings=warnings)


def doc_case(skill, loaded) -> EvalCase | None:
    """SKILL.md's doc test beside a contract (None for the generic tier, whose one case is
    the doc test, when the contract has a doc-test case of its own, or when SKILL.md has no
    shell block)."""
    if loaded.tier == Tier.generic or any(c.doc_test for c in loaded.config.evals):
        return None
    case = generic_config(skill).evals[0]
    if not case.steps or any(c.id == DOC_CASE_ID for c in loaded.config.evals):
        return None
    return case.model_copy(update={
        "id": DOC_CASE_ID,
        "prompt": f"Run the shell blocks of {skill.name}'s SKILL.md as documented.",
        "assertions": []})


def examine(root: Path, marketplace: Path | None = None) -> Examined:
    """Load one skill and its cases; any input gives an `Examined`, never an exception.

    An unexpected error (an aeval bug, an unreadable file system) becomes one problem line
    naming the skill, so one odd skill cannot stop a marketplace sweep.
    """
    try:
        root = Path(root).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop as the root itself
        return Examined(root=Path(root), problems=[f"{root}: cannot be resolved: {exc}"])
    try:
        return _examine(root, marketplace)
    except RecursionError:
        return Examined(root=root, problems=[f"{root}: nested too deeply to be examined"])
    except Exception as exc:
        return Examined(root=root, problems=[
            f"{root}: could not be examined (aeval internal error): "
            f"{type(exc).__name__}: {str(exc)[:300]}"])


def duplicate_name_warnings(examined: list[Examined]) -> dict[Path, str]:
    """One warning per skill root whose frontmatter name another examined skill also uses.

    Skills are identified by their folder, so both are kept and run; the warning names every
    path that shares the name, because reports that show the name alone are ambiguous.
    """
    by_name: dict[str, list[Path]] = defaultdict(list)
    for ex in examined:
        if ex.skill is not None:
            by_name[ex.skill.name].append(ex.root)
    out: dict[Path, str] = {}
    for name, roots in by_name.items():
        if len(roots) > 1:
            listed = ", ".join(str(r) for r in sorted(roots))
            for r in roots:
                out[r] = (f"{r}: name {name!r} is also used by another skill "
                          f"({listed}); each is identified by its folder")
    return out
