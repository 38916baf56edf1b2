"""Baselines and regressions: the last-known-good result per skill x runtime x case, and how a
run compares with it (regression.json)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import (
    AssertionDelta,
    BaselineEntry,
    Baselines,
    CaseResult,
    Grading,
    Regression,
    RunManifest,
)
from aeval.isolation.redact import Redactor
from aeval.run.layout import RunLayout, SkillFiles
from aeval.run.read import RunRecord, read_run
from aeval.run.store import read_model, write_model

BASELINES = "baselines.json"


def _key(skill: str, runtime: str, case: str) -> str:
    return f"{skill}/{runtime}/{case}"


def entries_of_run(run_dir: Path, manifest: RunManifest | None = None,
                   only_passing: bool = False) -> dict[str, BaselineEntry]:
    """Per skill x runtime x case (epochs pooled), what a finished run says."""
    run = RunRecord.of(run_dir, manifest) if manifest is not None else read_run(run_dir)
    grouped: dict[str, list[tuple[CaseResult, Grading]]] = {}
    for case, g in run.gradings():
        s, c = case.skill, case.result
        grouped.setdefault(_key(s.key or s.name, c.runtime, c.case_id), []).append((c, g))
    out = {}
    for key, runs in grouped.items():
        if only_passing and any(c.status != "pass" for c, _ in runs):
            continue
        rates = [c.first_attempt_pass_rate for c, _ in runs
                 if c.first_attempt_pass_rate is not None]
        verdicts: dict[str, bool | None] = {}
        ids: dict[str, str] = {}
        for _, g in runs:
            for e in g.expectations:
                prev = verdicts.get(e.text, True)
                verdicts[e.text] = None if e.passed is None else bool(prev and e.passed)
                ids[e.text] = e.id
        out[key] = BaselineEntry(
            run_id=run.manifest.run_id,
            recorded_at=run.manifest.finished_at or datetime.now(UTC),
            first_attempt_pass_rate=round(sum(rates) / len(rates), 4) if rates else None,
            assertions=verdicts, ids=ids)
    return out


def load_baselines(store: Path) -> Baselines:
    p = Path(store) / BASELINES
    return read_model(p, Baselines) if p.is_file() else Baselines()


def refresh_baselines(store: Path, run_dir: Path) -> Baselines:
    """Record every passing case of a run as its new last-known-good result."""
    current = load_baselines(store)
    fresh = entries_of_run(run_dir, only_passing=True)
    doc = Baselines(entries={**current.entries, **fresh})
    write_model(Path(store) / BASELINES, doc)
    return doc


def baseline_entries(store: Path, baseline: str | None) -> tuple[str | None, dict]:
    """(label, entries): a given run (id or folder), else the store's baselines."""
    if baseline:
        from aeval.run.store import RunStore

        run_dir = RunStore(Path(store)).resolve(baseline)
        return run_dir.name, entries_of_run(run_dir)
    doc = load_baselines(store)
    return ("baselines.json" if doc.entries else None), doc.entries


def regression(skill_key: str, skill: str, runtime: str, run_dir: Path,
               cases: list[CaseResult], label: str | None,
               entries: dict[str, BaselineEntry]) -> Regression:
    """Pass-rate deltas and newly failing / passing assertions against the baseline."""
    now = entries_of_run(run_dir, RunManifest(
        run_id="current", created_at=datetime.now(UTC), aeval_version="", paths=[],
        runtimes=[runtime], skills=[{"name": skill, "key": skill_key, "path": "",
                                     "status": "pass", "cases": cases}]))
    doc = Regression(skill=skill, runtime=runtime, baseline_run=None)
    for key, cur in sorted(now.items()):
        base = entries.get(key)
        case = key.rsplit("/", 1)[1]
        if base is None:
            continue
        doc.baseline_run = base.run_id if label == "baselines.json" else label
        if cur.first_attempt_pass_rate is not None and base.first_attempt_pass_rate is not None:
            doc.pass_rate_delta[case] = round(
                cur.first_attempt_pass_rate - base.first_attempt_pass_rate, 4)
        for text, ok in cur.assertions.items():
            was = base.assertions.get(text)
            delta = AssertionDelta(case_id=case, assertion_id=cur.ids.get(text, "?"), text=text)
            if was is True and ok is False:
                doc.newly_failing.append(delta)
            elif was is False and ok is True:
                doc.newly_passing.append(delta)
    return doc


def regression_for(layout: RunLayout, out: Path, skill_key: str, skill: str, runtime: str,
                   cases: list[CaseResult], store: Path, baseline: str | None = None,
                   redactor: Redactor | None = None) -> Regression:
    """regression.json of one skill x runtime, written into ``out`` (redacted with
    ``redactor``: the run's credentials)."""
    label, entries = baseline_entries(store, baseline)
    doc = regression(skill_key, skill, runtime, layout.run_dir, cases, label, entries)
    write_model(SkillFiles(Path(out)).regression, doc, redactor or Redactor())
    return doc


@task(name="refresh-baselines", cache_policy=NO_CACHE)
def refresh_baselines_task(store: Path, run_dir: Path) -> Baselines:
    """Make the passing cases of a run the new last-known-good results."""
    return refresh_baselines(store, run_dir)
