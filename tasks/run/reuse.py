"""Skip what did not change (sweeps): a case run whose fingerprint (aeval/run/fingerprint.py)
matches the one its last verdict was given for is not run again; its case folder is copied
from that run and its result says where it came from (``CaseResult.reused_from``).

The index is ``<store>/verdicts.json``; every run that fingerprints its cases records their
verdicts there when it publishes. Only `pass` and `fail` are reused (verdicts about the skill);
an environment error, an internal error or an untested case runs again, and so does a case
stopped at its memory limit (`aeval.isolation.memory`: the memory a run takes depends on the
machine too).
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aeval import __version__
from aeval.adapters import get_runtime
from aeval.artifacts import CaseResult, VerdictEntry, VerdictIndex
from aeval.isolation.memory import is_memory_kill
from aeval.prompts import load_prompt
from aeval.run.fingerprint import REUSABLE, case_fingerprint, folder_digest, text_digest
from aeval.run.layout import CaseFiles, RunLayout
from aeval.run.plan import CasePlan
from aeval.run.store import read_model, write_model

INDEX = "verdicts.json"


def index_path(store: Path) -> Path:
    return Path(store) / INDEX


def read_index(store: Path) -> VerdictIndex:
    """The store's verdict index; an empty one when there is none or it is unreadable (it is
    a cache: losing it costs a full run, never a wrong verdict)."""
    try:
        return read_model(index_path(store), VerdictIndex)
    except (OSError, ValueError):
        return VerdictIndex()


def _runtime_version(name: str, cache: dict[str, str | None]) -> str | None:
    if name not in cache:
        try:
            cache[name] = get_runtime(name).version()
        except Exception:  # an unknown or broken runtime: its cases say so when they run
            cache[name] = None
    return cache[name]


VERDICT_PROMPTS = ("assertion_writer", "grader")
"""Prompts besides the executor's whose text shapes a verdict: the assertions written before
the run, and the grader's judgement."""


def runtime_config(plan: CasePlan, digests: dict[Path, str]) -> dict[str, Any]:
    """The runtime's own configuration for one case run, as the fingerprint covers it: its
    options, the output cap, the distractor skills (their folders' digests), and the text of
    the executor's prompt and the verdict prompts (`VERDICT_PROMPTS`)."""
    for d in plan.skill.distractors:
        if Path(d) not in digests:
            digests[Path(d)] = folder_digest(Path(d))
    prompts = {name: text_digest(load_prompt(name))
               for name in (plan.run.executor_prompt, *VERDICT_PROMPTS)}
    return {"options": plan.runtime_options, "output_cap": plan.run.output_cap,
            "distractors": [digests[Path(d)] for d in plan.skill.distractors], "prompts": prompts}


def fingerprint_plans(plans: list[CasePlan]) -> list[CasePlan]:
    """The plans with their fingerprints set (one digest per skill folder, one version query
    per runtime)."""
    digests: dict[Path, str] = {}
    versions: dict[str, str | None] = {}
    out = []
    for p in plans:
        root = Path(p.skill.path)
        if root not in digests:
            digests[root] = folder_digest(root, left_out=p.skill.skill.left_out)
        fp = case_fingerprint(
            skill_digest=digests[root], skill_dir=root, case=p.case, tier=str(p.skill.tier),
            runtime=p.runtime, runtime_version=_runtime_version(p.runtime, versions),
            model=p.run.model, grader_model=p.run.grader_model, epoch=p.epoch,
            install_skill=p.run.install_skill, sandbox=p.run.sandbox, aeval_version=__version__,
            api_base=p.run.api_base, runtime_config=runtime_config(p, digests))
        out.append(p.model_copy(update={"fingerprint": fp}))
    return out


def reuse_unchanged(plans: list[CasePlan], store: Path
                    ) -> tuple[list[CasePlan], list[CaseResult]]:
    """Split fingerprinted plans into those to run and the results reused for the others."""
    index = read_index(store)
    todo, reused = [], []
    for plan in plans:
        entry = index.entries.get(plan.fingerprint or "")
        source = RunLayout.of(store, entry.run_id).case(entry.dir) if entry else None
        if (entry is None or entry.status not in REUSABLE or entry.run_id == plan.run.run_id
                or not CaseFiles(source).grading.is_file()):
            todo.append(plan)
            continue
        shutil.rmtree(plan.case_dir, ignore_errors=True)
        shutil.copytree(source, plan.case_dir, symlinks=True)
        result = plan.finished()
        if result is None or result.status != entry.status or is_memory_kill(result.reason):
            shutil.rmtree(plan.case_dir, ignore_errors=True)
            todo.append(plan)
            continue
        reused.append(result.model_copy(update={"reused_from": f"{entry.run_id}/{entry.dir}"}))
    return todo, reused


def record_verdicts(store: Path, run_id: str, plans: list[CasePlan],
                    results: list[CaseResult]) -> int:
    """Record the verdicts of this run's fingerprinted case runs; how many were recorded."""
    now = datetime.now(UTC)
    new = {p.fingerprint: VerdictEntry(run_id=run_id, dir=r.dir, status=r.status,
                                       recorded_at=now)
           for p, r in zip(plans, results, strict=True) if p.fingerprint}
    if not new:
        return 0
    index = read_index(store)
    index.entries.update(new)
    write_model(index_path(store), index)
    return len(new)
