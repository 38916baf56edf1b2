"""Aggregate one skill x runtime over its cases x epochs: benchmark.json (pandas),
analysis_notes.json, multi_eval_report.json and summary.md."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from aeval.adapters.llm import ask_json
from aeval.artifacts import (
    AnalysisNote,
    AnalysisNotes,
    Benchmark,
    CaseResult,
    EvalMetadata,
    FixSuggestion,
    FixSuggestions,
    Grading,
    MultiEvalReport,
    RateStats,
)
from aeval.errors import EnvironmentFailure
from aeval.events import Usage
from aeval.isolation.redact import Redactor
from aeval.prompts import load_prompt
from aeval.run.layout import CaseFiles, SkillFiles
from aeval.run.read import read_grading, read_if_there
from aeval.run.store import atomic_write_text, write_model
from aeval.verdicts.coverage import (
    SkillCoverage,
    resource_files,
    skill_coverage,
    skill_files,
)
from aeval.verdicts.efficiency import EFFICIENCY_COLUMNS, efficiency_cells
from aeval.verdicts.status import rate_cells, skill_status

if TYPE_CHECKING:
    import pandas as pd

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """Wilson score interval of a binomial proportion."""
    if n == 0:
        return None, None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


def _stats(series: pd.Series, successes: int | None = None, trials: int | None = None
           ) -> RateStats:
    import pandas as pd  # imported where used: it costs the start of every run otherwise

    s = series.dropna().astype(float)
    lo, hi = wilson(successes, trials) if trials else (None, None)
    if s.empty:
        return RateStats(mean=None, stddev=None, min=None, max=None, wilson_low=lo,
                         wilson_high=hi, n=0)
    std = s.std(ddof=1)
    return RateStats(mean=round(s.mean(), 4), stddev=None if pd.isna(std) else round(std, 4),
                     min=round(s.min(), 4), max=round(s.max(), 4), wilson_low=lo,
                     wilson_high=hi, n=len(s))


def load_gradings(run_dir: Path, cases: list[CaseResult]) -> list[tuple[CaseResult, Grading]]:
    return [(c, g) for c in cases if (g := read_grading(Path(run_dir) / c.dir)) is not None]


def assertion_frame(pairs: list[tuple[CaseResult, Grading]]) -> pd.DataFrame:
    """One row per case run x assertion."""
    import pandas as pd

    rows = []
    for c, g in pairs:
        run = c.case_id if c.epoch is None else f"{c.case_id}/epoch-{c.epoch}"
        for e in g.expectations:
            rows.append({"run": run, "case": c.case_id, "epoch": c.epoch, "assertion": e.id,
                         "text": e.text, "status": e.status, "passed": e.passed,
                         "terminal": e.terminal_passed})
    return pd.DataFrame(rows, columns=["run", "case", "epoch", "assertion", "text", "status",
                                       "passed", "terminal"])


def benchmark(skill: str, runtime: str, pairs: list[tuple[CaseResult, Grading]]) -> Benchmark:
    import pandas as pd

    runs = pd.DataFrame([{
        "status": c.status, "first": c.first_attempt_pass_rate,
        "terminal": c.terminal_pass_rate, "wall": g.timing.executor_wall_s,
        "tool_calls": g.execution_metrics.total_tool_calls,
        "changes": len(g.self_correction.changes_made),
    } for c, g in pairs], columns=["status", "first", "terminal", "wall", "tool_calls",
                                   "changes"])
    df = assertion_frame(pairs)
    graded = df[df["status"] != "ungraded"]
    first_ok = int((graded["status"] == "passed").sum())
    term_ok = int(graded["terminal"].fillna(False).astype(bool).sum())
    usage = sum((g.execution_metrics.usage for _, g in pairs), Usage())
    matrix: dict[str, dict[str, bool | None]] = {}
    for row in df.itertuples():
        matrix.setdefault(row.run, {})[row.assertion] = (
            None if row.status == "ungraded" else bool(row.passed))
    return Benchmark(
        skill=skill, runtime=runtime, runs=len(runs),
        statuses={k: int(v) for k, v in runs["status"].value_counts().items()},
        first_attempt_pass_rate=_stats(runs["first"], first_ok, len(graded)),
        terminal_pass_rate=_stats(runs["terminal"], term_ok, len(graded)),
        usage=usage, wall_s=_stats(runs["wall"]) if runs["wall"].notna().any() else None,
        tool_calls=int(runs["tool_calls"].sum()), self_corrections=int(runs["changes"].sum()),
        assertion_matrix=matrix)


def analyze(skill: str, runtime: str, pairs: list[tuple[CaseResult, Grading]]) -> AnalysisNotes:
    import pandas as pd

    """Descriptive notes over the run distribution; never looks at skill source."""
    notes: list[AnalysisNote] = []
    df = assertion_frame(pairs)
    graded = df[df["status"] != "ungraded"].assign(ok=lambda d: d["status"] == "passed")
    # runs in which something failed: an assertion passing in all of them discriminates nothing
    failing_runs = set(graded.loc[~graded["ok"], "run"])
    # one grouping of the graded rows, looked up per assertion (a boolean mask over every
    # row per assertion cost ~0.25 s of a 10-case skill's conclusion)
    graded_by = {key: g for key, g in graded.groupby(["case", "assertion"], sort=False)}
    for (case, aid), g in df.groupby(["case", "assertion"], sort=True):
        subject, text = f"{case}:{aid}", g["text"].iloc[0]
        gg = graded_by.get((case, aid))
        if gg is None:
            notes.append(AnalysisNote(kind="ungraded", subject=subject,
                                      detail=f"never graded ({len(g)} run(s)): {text}"))
            continue
        rate = float(gg["ok"].mean())
        if len(gg) > 1 and 0 < rate < 1:
            notes.append(AnalysisNote(kind="flaky", subject=subject,
                                      detail=f"passed {rate:.0%} of {len(gg)} runs: {text}"))
        elif rate == 0:
            notes.append(AnalysisNote(kind="always_failing", subject=subject,
                                      detail=f"failed in all {len(gg)} run(s): {text}"))
        elif aid != "S1" and set(gg["run"]) and set(gg["run"]) <= failing_runs:
            notes.append(AnalysisNote(kind="non_discriminating", subject=subject, detail=(
                f"passed in every run, including {len(gg)} run(s) that failed: {text}")))
    runs = pd.DataFrame([{"run": c.case_id if c.epoch is None else f"{c.case_id}#{c.epoch}",
                          "tokens": g.execution_metrics.usage.prompt_tokens
                          + g.execution_metrics.usage.output_tokens,
                          "wall": g.timing.executor_wall_s} for c, g in pairs])
    if len(runs) >= 4:
        for col, kind in (("tokens", "token_outlier"), ("wall", "latency_outlier")):
            s = runs[col].astype(float)
            q1, q3 = s.quantile(0.25), s.quantile(0.75)
            fence = q3 + 1.5 * (q3 - q1)
            for r in runs[s > fence].itertuples():
                notes.append(AnalysisNote(kind=kind, subject=r.run, detail=(
                    f"{col} {getattr(r, col):.1f} above the upper fence {fence:.1f} "
                    f"(median {s.median():.1f})")))
    return AnalysisNotes(skill=skill, runtime=runtime, notes=notes)


SUMMARY_TEMPLATE = """\
# {skill} [{runtime}]: {verdict}

> [!{callout}]
> {headline}

| case | status | first-attempt | terminal | ungraded | self-corrections | attempts |
|---|---|---|---|---|---|---|
{rows}

<details><summary>Reasons</summary>

{reasons}

</details>

<details><summary>Efficiency (graded attempt)</summary>

| case | {efficiency_head} |
|---|{efficiency_rule}
{efficiency_rows}

</details>
"""


def render_fixes(fixes: list[FixSuggestion]) -> str:
    """The suggested fixes as a folded list (empty without any): each with its place, why,
    and the edit as a diff or the command to run in the skill's folder."""
    if not fixes:
        return ""
    out = [f"<details><summary>Fixes ({len(fixes)})</summary>", ""]
    for x in fixes:
        out.append(f"- **{x.level}** ({x.source}) `{x.path}` line {x.start_line}, grounded "
                   f"in `{x.grounded_in}`: {x.rationale}")
        if x.command:
            out += ["  ```sh", f"  {x.command}", "  ```"]
        if x.replacement != x.original:
            out += ["  ```diff", *(f"  -{ln}" for ln in x.original.splitlines()),
                    *(f"  +{ln}" for ln in x.replacement.splitlines()), "  ```"]
    return "\n".join([*out, "", "</details>", ""])


def _md_cell(text: str) -> str:
    """A Markdown table cell: a `|` in a file name would split it."""
    return text.replace("|", "\\|")


def render_summary(report: MultiEvalReport, fixes: list[FixSuggestion] | None = None) -> str:
    rows = "\n".join(
        f"| {c.case_id}{'' if c.epoch is None else f' #{c.epoch}'} | {c.status} | "
        f"{' | '.join(rate_cells(c))} | {c.ungraded} | "
        f"{c.self_corrections} | {c.attempts} |" for c in report.cases)
    reasons = "\n".join(f"- **{c.case_id}**: {c.reason}" for c in report.cases)
    callout = {"pass": "TIP", "fail": "CAUTION", "error": "WARNING", "untested": "NOTE",
               "internal": "WARNING"}[report.verdict]
    n = len(report.cases)
    passed = sum(1 for c in report.cases if c.status == "pass")
    efficiency = "\n".join(
        f"| {c.case_id}{'' if c.epoch is None else f' #{c.epoch}'} | "
        f"{' | '.join(_md_cell(x) for x in efficiency_cells(c.efficiency, c.stray_files))} |"
        for c in report.cases)
    return SUMMARY_TEMPLATE.format(skill=report.skill, runtime=report.runtime,
                                   verdict=report.verdict.upper(), callout=callout,
                                   headline=f"{passed}/{n} case(s) passed on the first attempt",
                                   rows=rows, reasons=reasons,
                                   efficiency_head=" | ".join(EFFICIENCY_COLUMNS),
                                   efficiency_rule="---|" * len(EFFICIENCY_COLUMNS),
                                   efficiency_rows=efficiency) + render_fixes(fixes or [])


class AnalyzerAnswer(BaseModel):
    observations: list[str] = Field(max_length=5)


def narrate(notes: AnalysisNotes, bench: Benchmark, model: str, api_base: str | None
            ) -> AnalysisNotes:
    """The analyzer model's observations over the benchmark and notes (never skill source)."""
    text = ("BENCHMARK:\n" + bench.model_dump_json(indent=1) + "\n\nNOTES:\n"
            + notes.model_dump_json(indent=1, include={"notes"}))
    try:
        ans = ask_json(model, load_prompt("analyzer"), text, AnalyzerAnswer, api_base=api_base)
    except EnvironmentFailure as exc:
        extra = [AnalysisNote(kind="narrative", subject="analyzer",
                              detail=f"analyzer model failed: {str(exc)[:200]}")]
        return notes.model_copy(update={"notes": notes.notes + extra})
    if ans.value is None:
        return notes
    extra = [AnalysisNote(kind="narrative", subject="analyzer", detail=o)
             for o in ans.value.observations]
    return notes.model_copy(update={"notes": notes.notes + extra, "model": model})


def coverage(run_dir: Path, cases: list[CaseResult], skill_root: Path,
             inputs: list[str] | None = None) -> SkillCoverage | None:
    """Resource coverage over the cases' graded attempts (eval_metadata.json), against the
    runnable and reference files of the original skill (`resource_files`: not SKILL.md, the
    contract or the cases' ``inputs``); None when no attempt recorded its resource use."""
    uses = []
    for c in cases:
        meta = read_if_there(CaseFiles(Path(run_dir) / c.dir).eval_metadata, EvalMetadata)
        if meta is None:
            continue
        attempts = meta.attempts
        if attempts and attempts[-1].resources is not None:
            uses.append(attempts[-1].resources)
    if not uses:
        return None
    return skill_coverage(resource_files(skill_files(skill_root), inputs or ()), uses)


def aggregate(run_dir: Path, out: Path, skill: str, runtime: str, cases: list[CaseResult],
              model: str | None = None, api_base: str | None = None,
              skill_root: Path | None = None, redactor: Redactor | None = None,
              inputs: list[str] | None = None) -> MultiEvalReport:
    """Write the per skill x runtime artifacts into ``out``, redacted with ``redactor`` (the
    run's credentials); return the multi-eval report."""
    files, redactor = SkillFiles(Path(out)), redactor or Redactor()
    pairs = load_gradings(Path(run_dir), cases)
    bench = benchmark(skill, runtime, pairs)
    if skill_root is not None:
        bench.coverage = coverage(Path(run_dir), cases, Path(skill_root), inputs)
    notes = analyze(skill, runtime, pairs)
    if model and pairs:
        notes = narrate(notes, bench, model, api_base)
    write_model(files.benchmark, bench, redactor)
    write_model(files.analysis_notes, notes, redactor)
    fidelity = all(g.grader.protocol_fidelity for _, g in pairs)
    report = MultiEvalReport(skill=skill, runtime=runtime, cases=cases,
                             verdict=skill_status(cases), protocol_fidelity=fidelity)
    suggested = read_if_there(files.fix_suggestions, FixSuggestions)  # written just before
    summary = render_summary(report, suggested.suggestions if suggested else [])
    if template_problems(summary):
        report.protocol_fidelity = False
    write_model(files.multi_eval_report, report, redactor)
    atomic_write_text(files.summary, summary, redactor)
    return report


def template_problems(summary: str) -> list[str]:
    """Structural check of a summary against the locked template: callout, verdict heading,
    table header, balanced <details>."""
    problems = []
    lines = summary.splitlines()
    if not lines or not lines[0].startswith("# ") or not lines[0].rstrip().endswith(
            ("PASS", "FAIL", "ERROR", "UNTESTED", "INTERNAL")):
        problems.append("first line is not the verdict heading")
    if not any(ln.startswith("> [!") for ln in lines):
        problems.append("no callout block")
    if "| case | status | first-attempt | terminal |" not in summary:
        problems.append("no case table")
    if summary.count("<details>") != summary.count("</details>"):
        problems.append("unbalanced <details>")
    return problems
