"""Cross-run reports: the runtime comparison table and grader disagreement on a regrade."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import (
    CompareReport,
    CompareRow,
    Disagreement,
    FixSuggestions,
    Grading,
    RegradeReport,
    RunManifest,
)
from aeval.events import Usage
from aeval.store import atomic_write_text, read_model, write_model

COLUMNS = ("runtime", "wall (min)", "assertions passed/total", "causal share",
           "self-corrections", "protocol fidelity", "tokens in", "tokens cached")


def row_for_run(run_dir: Path, label: str, runtime: str, model: str | None) -> CompareRow:
    m = read_model(run_dir / "run.json", RunManifest)
    wall, passed, total, changes, valid, graded = 0.0, 0, 0, 0, 0, 0
    usage = Usage()
    statuses: dict[str, int] = {}
    lv1 = lv2 = 0
    for s in m.skills:
        for c in s.cases:
            if c.runtime != runtime:
                continue
            statuses[c.status] = statuses.get(c.status, 0) + 1
            p = run_dir / c.dir / "grading.json"
            if not p.is_file():
                continue
            g = read_model(p, Grading)
            graded += 1
            valid += g.grader.protocol_fidelity
            wall += g.timing.executor_wall_s or 0.0
            passed += g.summary.passed
            total += g.summary.passed + g.summary.failed
            changes += len(g.self_correction.changes_made)
            usage = usage + g.execution_metrics.usage
        fx = run_dir / s.name / runtime / "fix_suggestions.json"
        if fx.is_file():
            sug = read_model(fx, FixSuggestions).suggestions
            lv1 += sum(x.level == "LV1" for x in sug)
            lv2 += sum(x.level == "LV2" for x in sug)
    return CompareRow(
        label=label, runtime=runtime, model=model, run_id=m.run_id,
        cases=sum(statuses.values()), statuses=statuses, wall_minutes=round(wall / 60, 3),
        assertions_passed=passed, assertions_total=total,
        causal_share=round(lv1 / (lv1 + lv2), 4) if lv1 + lv2 else None,
        self_corrections=changes, protocol_fidelity=f"{valid}/{graded}",
        tokens_in=usage.input_tokens, tokens_cached=usage.cached_input_tokens)


def render_compare(report: CompareReport) -> str:
    def cs(x: float | None) -> str:
        return "–" if x is None else f"{x:.2f}"

    lines = [f"# aeval compare {report.compare_id}", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in report.rows:
        pct = f" ({r.assertions_passed / r.assertions_total:.0%})" if r.assertions_total else ""
        lines.append(f"| {r.label} | {r.wall_minutes:.2f} | {r.assertions_passed}/"
                     f"{r.assertions_total}{pct} | {cs(r.causal_share)} | {r.self_corrections} "
                     f"| {r.protocol_fidelity} | {r.tokens_in} | {r.tokens_cached} |")
    lines += ["", "Pass rates are comparable across rows only when the assertion lists are the "
                  "same (an assertion writer writes its own list per run)."]
    return "\n".join(lines) + "\n"


@task(name="compare-report", cache_policy=NO_CACHE)
def write_compare(out_dir: Path, compare_id: str, paths: list[str],
                  runs: list[tuple[str, str, str | None, str]]) -> CompareReport:
    """compare.json, compare.md and a Prefect table from (label, runtime, model, run dir)."""
    rows = [row_for_run(Path(d), label, rt, model) for label, rt, model, d in runs]
    report = CompareReport(compare_id=compare_id, paths=paths, rows=rows)
    write_model(Path(out_dir) / "compare.json", report)
    atomic_write_text(Path(out_dir) / "compare.md", render_compare(report))
    create_table_artifact([dict(zip(COLUMNS, [
        r.label, r.wall_minutes, f"{r.assertions_passed}/{r.assertions_total}", r.causal_share,
        r.self_corrections, r.protocol_fidelity, r.tokens_in, r.tokens_cached], strict=True))
        for r in rows], key=f"compare-{compare_id.lower()}",
        description=f"aeval compare {compare_id}")
    return report


def disagreements(source: Path, regraded: list[tuple[str, Path]], grader_model: str
                  ) -> RegradeReport:
    """Per-assertion first-attempt status, original grader vs the new one."""
    src = read_model(source / "run.json", RunManifest)
    report = RegradeReport(source_run=src.run_id, regrade_runs=[p.name for _, p in regraded],
                           original_grader=src.grader_model, grader_model=grader_model,
                           compared=0, agreements=0, agreement_rate=None)
    for runtime, new_dir in regraded:
        for s in src.skills:
            for c in s.cases:
                if c.runtime != runtime:
                    continue
                old_p = source / c.dir / "grading.json"
                new_p = new_dir / c.dir.replace(f"/{runtime}/", "/replay/", 1) / "grading.json"
                if not (old_p.is_file() and new_p.is_file()):
                    continue
                old = {e.id: e for e in read_model(old_p, Grading).expectations}
                new = {e.id: e for e in read_model(new_p, Grading).expectations}
                for aid in sorted(set(old) & set(new)):
                    a, b = old[aid], new[aid]
                    if a.status == "ungraded" or b.status == "ungraded":
                        continue
                    report.compared += 1
                    if a.status == b.status:
                        report.agreements += 1
                    else:
                        report.disagreements.append(Disagreement(
                            skill=s.name, runtime=runtime, case_id=c.case_id, assertion_id=aid,
                            text=a.text, original=a.status, regraded=b.status))
    if report.compared:
        report.agreement_rate = round(report.agreements / report.compared, 4)
    return report


@task(name="regrade-report", cache_policy=NO_CACHE)
def write_regrade(source: Path, regraded: list[tuple[str, Path]], grader_model: str,
                  out: Path) -> RegradeReport:
    report = disagreements(Path(source), [(r, Path(p)) for r, p in regraded], grader_model)
    write_model(Path(out), report)
    return report
