"""Trigger trials: each skill x trigger prompt x runtime x epoch in a fresh workspace where the
skill sits among distractor skills; the runtime runs the prompt (no assertions, no grader,
stopped after ``max_turns`` model turns), and the events say which skills it loaded.

    <store>/triggers/<run-id>/triggers.json  report.html
    <store>/triggers/<run-id>/<skill>/<runtime>/<should|should_not>-<n>[/epoch-N]/
        events.jsonl  transcript.md  attempts/<n>/
"""

from __future__ import annotations

import shutil
import tempfile
import time
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict, Field

from aeval.artifacts import TriggersReport, TriggerTrial
from aeval.errors import ContractError, EnvironmentFailure
from aeval.events import read_events
from aeval.run.layout import CaseFiles, RunLayout, skill_keys
from aeval.run.plan import CasePlan, Examined, RunSettings, SkillPlan
from aeval.run.store import atomic_write_text, write_model
from aeval.skill.contract import EvalCase, generic_triggers
from aeval.skill.skill_md import find_skill_roots, load_skill
from aeval.stats.triggers import (
    MIN_DISTRACTORS,
    TriggersRequest,
    outcome,
    score_trials,
    skill_loads,
)
from aeval.tasks.case.attempt import run_attempt
from aeval.tasks.run.examine import examine
from aeval.tasks.run.prefect_artifacts import artifact_key, trigger_rows
from aeval.tasks.run.progress import progress
from aeval.tasks.run.report import render_triggers_report

BUNDLED = Path(str(files("aeval.eval_skill") / "distractors"))
INTERNAL = "internal error"  # a trial's error that is aeval's own bug, not the environment's


class TriggerPlan(BaseModel):
    """One trial: the case plan of the attempt, and what the prompt is."""

    model_config = ConfigDict(extra="forbid")

    plan: CasePlan
    kind: str = Field(description="should | should_not")
    index: int
    source: str = Field(description="contract | generic")


class PreparedTriggers(BaseModel):
    model_config = ConfigDict(extra="forbid")

    request: TriggersRequest
    run_dir: Path
    created_at: datetime
    trials: list[TriggerPlan]
    distractors: dict[str, list[str]] = Field(description="skill key -> distractor names.")
    distractor_source: str
    invalid: list[str] = Field(default_factory=list)
    workspace_root: Path


def _named(roots: list[Path]) -> list[tuple[str, Path]]:
    out = []
    for r in roots:
        try:
            out.append((load_skill(r).name, Path(r).resolve()))
        except ContractError:
            continue  # an unloadable distractor is no distractor
    return out


def choose_distractors(skill: Examined, marketplace: list[Path], folder: Path | None
                       ) -> tuple[list[Path], str]:
    """The skill folders installed beside ``skill``: every skill of ``folder`` (--distractors),
    or the other skills of the marketplace (the skills of the run and the skill's sibling
    folders), topped up with the bundled set when fewer than MIN_DISTRACTORS. Never the
    skill itself nor a second skill of the same name."""
    if folder is not None:
        pool, source = _named(find_skill_roots(folder)), str(folder)
    else:
        siblings = [d for d in Path(skill.root).parent.iterdir() if (d / "SKILL.md").is_file()]
        pool, source = _named([*marketplace, *sorted(siblings)]), "marketplace"
    # names and folder names unique: each copy sits at <skills>/<folder name>, beside the skill
    taken, folders = {skill.name}, {skill.name}
    chosen: list[Path] = []

    def take(name: str, root: Path) -> None:
        if name in taken or root.name in folders or root == Path(skill.root).resolve():
            return
        taken.add(name)
        folders.add(root.name)
        chosen.append(root)

    for name, root in pool:
        take(name, root)
    if folder is None and len(chosen) < MIN_DISTRACTORS:
        source = "marketplace+bundled" if chosen else "bundled"
        for name, root in _named(sorted(BUNDLED.iterdir())):
            take(name, root)
    return chosen, source


def prepare_triggers(request: TriggersRequest) -> PreparedTriggers:
    """Examine the skills and plan every trial."""
    run_dir = Path(request.store) / "triggers" / request.run_id
    roots = [Path(r) for r in request.skill_roots]
    examined = [examine(r) for r in roots]
    keys = skill_keys([(ex.name, ex.root) for ex in examined])
    folder = Path(request.distractors) if request.distractors else None
    ws_root = Path(tempfile.mkdtemp(prefix=f"aeval-triggers-{request.run_id}-"))
    run = RunSettings(run_id=request.run_id, run_dir=run_dir, workspace_root=ws_root,
                      model=request.model, api_base=request.api_base,
                      keep_workspace=request.keep_workspaces, sandbox=request.sandbox,
                      executor_prompt="trigger_executor")
    trials, invalid, distractors, sources = [], [], {}, set()
    for ex in examined:
        if not ex.valid or ex.skill is None:
            invalid.append(f"{ex.root}: " + "; ".join(ex.problems))
            continue
        key = keys[ex.root]
        chosen, source = choose_distractors(ex, roots, folder)
        sources.add(source)
        distractors[key] = [load_skill(d).name for d in chosen]
        config_triggers = _contract_triggers(ex)
        skill = SkillPlan(key=key, skill=ex.skill, tier=ex.tier, contract=ex.contract,
                          distractors=chosen)
        prompts = config_triggers or generic_triggers(ex.skill)
        for kind, items in (("should", prompts.should), ("should_not", prompts.should_not)):
            for i, prompt in enumerate(items):
                case = EvalCase(id=f"{kind}-{i + 1}", prompt=prompt,
                                expected_outcome="(a trigger trial: not graded)",
                                max_turns=request.max_turns, timeout_s=request.timeout_s)
                for rt in request.runtimes:
                    for epoch in (range(1, request.epochs + 1) if request.epochs > 1
                                  else [None]):
                        plan = CasePlan(run=run, skill=skill, case=case, runtime=rt,
                                        epoch=epoch)
                        trials.append(TriggerPlan(plan=plan, kind=kind, index=i, source=(
                            "contract" if config_triggers else "generic")))
    return PreparedTriggers(request=request, run_dir=run_dir, created_at=datetime.now(UTC),
                            trials=trials, distractors=distractors,
                            distractor_source=", ".join(sorted(sources)) or "none",
                            invalid=invalid, workspace_root=ws_root)


def _contract_triggers(ex: Examined):
    """The triggers the skill's contract declares, or None (generic tier, or none declared)."""
    from aeval.skill.contract import parse_config

    if ex.contract is None:
        return None
    try:
        return parse_config(Path(ex.contract)).triggers
    except ContractError:
        return None


def run_trial(tp: TriggerPlan, retries: int = 2, retry_delay_s: float = 2.0) -> TriggerTrial:
    """One trial: an attempt (retried on a transient model error), then the loads seen in its
    events. Never raises: a failed trial is an `error` outcome with the reason."""
    plan = tp.plan
    base = dict(kind=tp.kind, index=tp.index, epoch=plan.epoch, prompt=plan.case.prompt,
                dir=plan.rel_dir)
    execution = None
    try:
        for attempt in range(retries + 1):
            tried = run_attempt(plan)
            if not tried.transient or attempt == retries:
                break
            time.sleep(min(60.0, retry_delay_s * 2 ** attempt))  # from a fresh workspace
        if tried.failure is not None:
            raise tried.failure
        execution = tried.record
        assert execution is not None
        skills = {plan.skill.name: execution.skill_copy}
        for d in plan.skill.distractors:
            skills.setdefault(load_skill(d).name, execution.skill_copy.parent / Path(d).name)
        events = read_events(CaseFiles(plan.case_dir).events)
        loads = skill_loads(events, execution.workspace, skills,
                            skill_var=execution.skill_copy)
        this = any(ld.skill == plan.skill.name for ld in loads)
        return TriggerTrial(**base, outcome=outcome(tp.kind, this),  # type: ignore[arg-type]
                            loaded=list(dict.fromkeys(ld.skill for ld in loads)),
                            evidence=[f"event {ld.seq}: {ld.how}" for ld in loads])
    except EnvironmentFailure as exc:
        return TriggerTrial(**base, outcome="error", error=str(exc)[:400])
    except Exception as exc:  # a bug of aeval's own: recorded, the run goes on
        return TriggerTrial(**base, outcome="error",
                            error=f"{INTERNAL}: {type(exc).__name__}: {exc}"[:400])
    finally:
        if execution is not None and not plan.run.keep_workspace:
            shutil.rmtree(execution.attempt_root, ignore_errors=True)


@task(name="prepare-triggers", task_run_name="prepare triggers {request.run_id}",
      cache_policy=NO_CACHE)
def prepare_triggers_run(request: TriggersRequest) -> PreparedTriggers:
    """Examine the skills, choose their distractors, plan every trial."""
    prepared = prepare_triggers(request)
    progress("%d skill(s), %d trigger trial(s), runtime(s): %s", len(prepared.distractors),
             len(prepared.trials), ", ".join(request.runtimes))
    return prepared


@task(name="trigger-trial", task_run_name="trigger {tp.plan.label}", cache_policy=NO_CACHE)
def trigger_trial(tp: TriggerPlan, retries: int = 2, retry_delay_s: float = 2.0
                  ) -> TriggerTrial:
    """One trigger trial: did the runtime load the skill on this prompt?"""
    trial = run_trial(tp, retries, retry_delay_s)
    progress("%s: %s%s", tp.plan.label, trial.outcome.upper(),
             f" (loaded {', '.join(trial.loaded)})" if trial.loaded else "")
    return trial


def build_report(prepared: PreparedTriggers, trials: list[TriggerTrial]) -> TriggersReport:
    """triggers.json's content: one score per skill x runtime."""
    req = prepared.request
    groups: dict[tuple[str, str], list[tuple[TriggerPlan, TriggerTrial]]] = {}
    for tp, t in zip(prepared.trials, trials, strict=True):
        groups.setdefault((tp.plan.skill.key, tp.plan.runtime), []).append((tp, t))
    scores = []
    for (key, runtime), pairs in groups.items():
        tp0 = pairs[0][0]
        scores.append(score_trials(tp0.plan.skill.name, runtime, tp0.source,  # type: ignore
                                   prepared.distractors[key], [t for _, t in pairs]))
    return TriggersReport(run_id=req.run_id, created_at=prepared.created_at,
                          runtimes=req.runtimes, model=req.model, epochs=req.epochs,
                          max_turns=req.max_turns, distractor_source=prepared.distractor_source,
                          scores=scores, invalid=prepared.invalid)


@task(name="triggers-report", cache_policy=NO_CACHE)
def write_triggers(prepared: PreparedTriggers, trials: list[TriggerTrial]) -> TriggersReport:
    """triggers.json, report.html and a Prefect table (one row per skill x runtime)."""
    report = build_report(prepared, trials)
    write_model(prepared.run_dir / "triggers.json", report)
    atomic_write_text(RunLayout(prepared.run_dir).report, render_triggers_report(report))
    create_table_artifact(trigger_rows(report), key=artifact_key("triggers", report.run_id),
                          description=f"aeval trigger-accuracy {report.run_id}: precision and "
                                      "recall per skill x runtime")
    if not prepared.request.keep_workspaces:
        shutil.rmtree(prepared.workspace_root, ignore_errors=True)
    return report
