"""Planning: examined skills x cases x runtimes x epochs -> independent case plans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aeval.adapters import runs_steps_verbatim
from aeval.artifacts.case import Efficiency
from aeval.run.layout import CaseFiles
from aeval.run.plan import CasePlan, Examined, RunSettings, SkillPlan


def plan_cases(examined: list[Examined], run: RunSettings, runtimes: list[str], epochs: int,
               runtime_options: dict[str, dict[str, Any]] | None = None,
               recordings: dict[str, str] | None = None,
               skill_md_doc_test: bool = True,
               base_costs: dict[str, Efficiency] | None = None,
               from_base: bool = False) -> list[CasePlan]:
    """One plan per skill x case x runtime x epoch, each sharing ``run`` (with the names of
    the run's credentials, ``run_credentials``, for redaction) and its skill's `SkillPlan`.
    ``recordings`` (``skill/case`` -> recorded case folder, or ``skill/case#epoch`` for one
    epoch; ``skill`` is the skill's folder key in the run: two skills may share a name) makes
    each plan reuse that case's assertions (regrade, uplift; ``skill`` may also be the skill's
    folder); ``base_costs`` (same keys) gives each case of a head run the cost of the base
    version's attempt, and ``from_base`` says its recordings are the base's;
    ``run.install_skill`` False plans uplift's without-skill arm."""
    run = run.model_copy(update={"run_credentials": run_credentials(examined)})
    plans = []
    for ex in examined:
        if not ex.valid:
            continue
        skill = SkillPlan(key=ex.key or ex.name, skill=ex.skill, tier=ex.tier,
                          contract=ex.contract, warnings=ex.warnings,
                          static_findings=ex.static_findings)
        cases = [(c, False) for c in ex.cases]
        if ex.doc_case is not None and run.install_skill and skill_md_doc_test:
            cases.append((ex.doc_case, True))
        for case, supplementary in cases:
            for rt in runtimes:
                if supplementary and not runs_steps_verbatim(rt):
                    continue  # SKILL.md's blocks are run verbatim, by a runtime with no model
                for epoch in (range(1, epochs + 1) if epochs > 1 else [None]):
                    plans.append(CasePlan(
                        run=run, skill=skill, case=case, supplementary=supplementary,
                        runtime=rt, runtime_options=(runtime_options or {}).get(rt, {}),
                        epoch=epoch,
                        assertions_from=(recorded := _recorded(
                            recordings, (skill.key, str(ex.root.resolve())), case.id, epoch)),
                        assertions_from_base=from_base and recorded is not None,
                        base_cost=None if supplementary else _keyed(
                            base_costs, (skill.key, str(ex.root.resolve())), case.id, epoch)))
    return plans


def run_credentials(examined: list[Examined]) -> list[str]:
    """The names of every credential a case of the run declares: each case's artifacts, and
    the run's, are redacted of all of them (never only of its own case's)."""
    return sorted({n for ex in examined if ex.valid
                   for case in [*ex.cases, *([ex.doc_case] if ex.doc_case else [])]
                   for n in case.required_credentials})


def _key(mapping: dict[str, Any] | None, skills: tuple[str, ...], case: str,
         epoch: int | None) -> str | None:
    """The first key of ``mapping`` that names this case: a skill name of ``skills`` (its
    run key, then its folder), the case, and its epoch or any epoch."""
    return next((k for s in skills for k in (f"{s}/{case}#{epoch}", f"{s}/{case}")
                 if mapping and k in mapping), None)


def _keyed(mapping: dict[str, Efficiency] | None, skills: tuple[str, ...], case: str,
           epoch: int | None) -> Efficiency | None:
    key = _key(mapping, skills, case, epoch)
    return None if key is None or mapping is None else mapping[key]


def _recorded(recordings: dict[str, str] | None, skills: tuple[str, ...], case: str,
              epoch: int | None = None) -> Path | None:
    key = _key(recordings, skills, case, epoch)
    if key is None or recordings is None:
        return None
    p = CaseFiles(Path(recordings[key])).assertions
    return p if p.is_file() else None
