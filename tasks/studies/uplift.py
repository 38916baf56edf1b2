"""Uplift: the two arms' requests, the pairing of their cases, and uplift.json, the
report.html section and the Prefect table from them.

    <store>/runs/<uplift-id>-with/      a normal run, the skill installed; + uplift.json and
                                        an "Uplift" section in its report.html
    <store>/runs/<uplift-id>-without/   a normal run, the skill not installed, with the
                                        with-arm's assertions.json reused per case and epoch
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import CaseResult, EvalMetadata, RunManifest, UpliftReport
from aeval.artifacts.uplift import PairOutcome, SkillUplift
from aeval.run.layout import RunLayout
from aeval.run.read import read_if_there, read_run
from aeval.run.requests import EvalRequest, UpliftRequest
from aeval.run.store import RunStore, atomic_write_text, write_model
from aeval.stats.uplift import skill_uplifts, uplift_gate
from aeval.tasks.run.prefect_artifacts import artifact_key
from aeval.tasks.run.progress import progress
from aeval.tasks.run.report import render_report

COUNTED = ("pass", "fail")
TABLE_COLUMNS = ("skill", "runtime", "case", "pairs", "pass with", "pass without", "uplift",
                 "95% CI", "McNemar p", "tokens with", "tokens without", "wall with (s)",
                 "wall without (s)", "verdict")


def arm_run_id(uplift_id: str, install_skill: bool) -> str:
    return f"{uplift_id}-{'with' if install_skill else 'without'}"


def arm_request(request: UpliftRequest, install_skill: bool,
                recordings: dict[str, str] | None = None) -> EvalRequest:
    """The evaluate request of one arm: identical but for ``install_skill`` and, without the
    skill, the with-arm's assertions (``recordings``)."""
    assert request.uplift_id
    run_id = arm_run_id(request.uplift_id, install_skill)
    progress("uplift %s: %s the skill (run %s)", request.uplift_id,
             "with" if install_skill else "without", run_id)
    return EvalRequest(
        paths=request.paths, skill_roots=request.skill_roots, run_id=run_id,
        runtimes=request.runtimes, model=request.model, grader_model=request.grader_model,
        api_base=request.api_base, store=request.store, epochs=request.epochs,
        retries=request.retries, retry_delay_s=request.retry_delay_s,
        keep_workspaces=request.keep_workspaces, sandbox=request.sandbox,
        output_cap=request.output_cap, install_skill=install_skill, recordings=recordings,
        require_exercise=False)


def with_arm_assertions(run_dir: Path) -> dict[str, str]:
    """``skill/case#epoch`` (and ``skill/case``) -> case folder of every case of the with-arm
    that wrote assertions.json, ``skill`` the skill's folder key (two skills may share a
    name): the without-arm reuses them verbatim, so both arms are graded against the same
    assertions (same sha256)."""
    out: dict[str, str] = {}
    for case in read_run(run_dir).cases():
        if case.files.assertions.is_file():
            s, c = case.skill, case.result
            key = s.key or s.name
            out[f"{key}/{c.case_id}#{c.epoch}"] = str(case.dir)
            out.setdefault(f"{key}/{c.case_id}", str(case.dir))
    return out


def _cost(run_dir: Path, c: CaseResult | None) -> tuple[int, float | None]:
    """Executor tokens (uncached + cached input + output) and wall seconds of a case."""
    meta = read_if_there(RunLayout(run_dir).case_files(c.dir).eval_metadata, EvalMetadata) \
        if c is not None else None
    if meta is None:
        return 0, None
    u = meta.usage
    return u.input_tokens + u.cached_input_tokens + u.output_tokens, meta.wall_s


def pair_cases(with_dir: Path, without_dir: Path) -> list[PairOutcome]:
    """Pair the two arms' cases by skill x runtime x case x epoch (the with-arm's order)."""
    arms = [read_run(d).manifest for d in (with_dir, without_dir)]

    def index(m: RunManifest) -> dict[tuple, tuple[str, CaseResult]]:
        return {(s.key or s.name, c.runtime, c.case_id, c.epoch): (s.name, c)
                for s in m.skills for c in s.cases}

    with_cases, without_cases = index(arms[0]), index(arms[1])
    pairs = []
    for key in [*with_cases, *(k for k in without_cases if k not in with_cases)]:
        name, w = with_cases.get(key, (None, None))
        name2, wo = without_cases.get(key, (None, None))
        (w_tok, w_wall), (wo_tok, wo_wall) = _cost(with_dir, w), _cost(without_dir, wo)
        pairs.append(PairOutcome(
            skill=name or name2 or key[0], skill_key=key[0], runtime=key[1], case_id=key[2],
            epoch=key[3],
            with_status=w.status if w else None, without_status=wo.status if wo else None,
            with_dir=w.dir if w else None, without_dir=wo.dir if wo else None,
            comparable=bool(w and wo and w.status in COUNTED and wo.status in COUNTED),
            with_tokens=w_tok, without_tokens=wo_tok, with_wall_s=w_wall,
            without_wall_s=wo_wall))
    return pairs


def build_report(request: UpliftRequest, with_dir: Path, without_dir: Path) -> UpliftReport:
    """uplift.json's content from the two finished arms."""
    with_run = read_run(with_dir).manifest
    pairs = pair_cases(with_dir, without_dir)
    skills = skill_uplifts(pairs, request.alpha)
    invalid = [s.name for s in with_run.skills if s.status == "invalid"]
    return UpliftReport(
        uplift_id=request.uplift_id or "", with_run=with_run.run_id, without_run=without_dir.name,
        runtimes=request.runtimes, model=request.model, grader_model=request.grader_model,
        epochs=request.epochs, alpha=request.alpha, skills=skills, pairs=pairs,
        invalid=invalid, gate=uplift_gate(skills, pairs, invalid))


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.0%}"


def _num(x: float | None, fmt: str = "{:.0f}") -> str:
    return "–" if x is None else fmt.format(x)


def table_rows(report: UpliftReport) -> list[dict[str, str]]:
    """One row per skill x runtime (case `all`: pooled), then one per case."""
    rows = []
    for sk in report.skills:
        for case, st in [("all", sk.stats), *((c.case_id, c.stats) for c in sk.cases)]:
            ci = "–" if st.ci_low is None else f"[{st.ci_low:+.0%}, {st.ci_high:+.0%}]"
            excl = f" (+{st.excluded} excluded)" if st.excluded else ""
            rows.append(dict(zip(TABLE_COLUMNS, [
                sk.label(), sk.runtime, case, f"{st.pairs}{excl}",
                f"{_pct(st.with_skill.pass_rate)} ({st.with_skill.passed}/{st.pairs})",
                f"{_pct(st.without_skill.pass_rate)} ({st.without_skill.passed}/{st.pairs})",
                _signed(st.uplift), ci, _num(st.mcnemar_p, "{:.3g}"),
                _num(st.with_skill.mean_tokens), _num(st.without_skill.mean_tokens),
                _num(st.with_skill.mean_wall_s, "{:.1f}"),
                _num(st.without_skill.mean_wall_s, "{:.1f}"),
                st.verdict + (", flagged" if st.flagged else "")],
                strict=True)))
    return rows


def flagged(skills: list[SkillUplift]) -> list[str]:
    return [f"{s.label()} [{s.runtime}]" for s in skills if s.stats.flagged]


def write_uplift_files(request: UpliftRequest, with_dir: Path, without_dir: Path
                       ) -> UpliftReport:
    """uplift.json in the with-arm's run folder (atomic), and that run's report.html again,
    now with the Uplift section."""
    report = build_report(request, with_dir, without_dir)
    run = read_run(with_dir)
    write_model(run.layout.uplift, report)
    atomic_write_text(run.layout.report, render_report(with_dir, run.manifest))
    for name in flagged(report.skills):
        progress("negative uplift: %s does worse with the skill than without", name,
                 warning=True)
    return report


@task(name="uplift-report", task_run_name="uplift {request.uplift_id}", cache_policy=NO_CACHE)
def write_uplift(request: UpliftRequest) -> UpliftReport:
    """Pair the two arms, compute the statistics, write uplift.json and the report section,
    and show the table as a Prefect artifact."""
    store = RunStore(Path(request.store))
    assert request.uplift_id
    report = write_uplift_files(request, store.run_dir(arm_run_id(request.uplift_id, True)),
                                store.run_dir(arm_run_id(request.uplift_id, False)))
    create_table_artifact(table_rows(report), key=artifact_key("uplift", request.uplift_id),
                          description=f"aeval uplift {request.uplift_id}: "
                                      f"{report.gate.reason if report.gate else ''}")
    return report
