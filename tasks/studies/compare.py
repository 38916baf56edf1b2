"""Cross-run reports: the runtime comparison table, and on a regrade every grader's verdicts
and their agreement (aeval/stats/agreement.py)."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import (
    Agreement,
    AssertionVerdicts,
    CaseResult,
    CompareReport,
    CompareRow,
    FixSuggestions,
    Gate,
    Grading,
    RaterError,
    RaterSummary,
    RaterVerdict,
    RefusedTools,
    RegradeReport,
    TierDifference,
)
from aeval.events import ToolResultEvent, Usage, read_events
from aeval.exit_codes import ENVIRONMENT, FAIL, INTERNAL, OK, TOO_FEW_TESTED, USAGE
from aeval.run.layout import CaseFiles, RunLayout
from aeval.run.read import read_grading, read_if_there, read_run
from aeval.run.store import atomic_write_text, write_model
from aeval.stats.agreement import agreement, columns, pairwise

COLUMNS = ("runtime", "wall (min)", "executor (min)", "assertions passed/total",
           "causal share", "self-corrections", "protocol fidelity", "requests", "tokens in",
           "tokens cached")
GATE_ORDER = (FAIL, USAGE, INTERNAL, ENVIRONMENT, TOO_FEW_TESTED)
"""Which row's gate `aeval compare` exits with: the first of these codes any row has, as
`aeval run` orders them (a failed case first), else 0."""


def _refused(case_dir: Path, errors: list) -> RefusedTools:
    """The calls of one case the runtime refused, and the tools it has not got."""
    found = RefusedTools(calls=0, misplaced=sum(
        1 for e in errors if e.agent_error and "not in this runtime's skill copy" in e.agent_error))
    events = CaseFiles(case_dir).events
    if not events.is_file():
        return found
    for e in read_events(events):
        if isinstance(e, ToolResultEvent) and e.refused:
            found.calls += 1
            if e.refused == "unknown_tool" and e.tool not in found.unknown_tools:
                found.unknown_tools.append(e.tool)
    return found


def row_for_run(run_dir: Path, label: str, runtime: str, model: str | None) -> CompareRow:
    run = read_run(run_dir)
    m = run.manifest
    executor, passed, total, changes, valid, judged = 0.0, 0, 0, 0, 0, 0
    usage = Usage()
    statuses: dict[str, int] = {}
    refused = RefusedTools(calls=0)
    lv1 = lv2 = 0
    for s in m.skills:
        for c in s.cases:
            if c.runtime != runtime:
                continue
            statuses[c.status] = statuses.get(c.status, 0) + 1
            if (g := run.grading(c)) is None:
                continue
            if g.grader.model is not None:  # a grader model was asked: did it keep protocol?
                judged += 1
                valid += g.grader.protocol_fidelity
            executor += g.timing.executor_wall_s or 0.0
            passed += g.summary.passed
            total += g.summary.passed + g.summary.failed
            changes += len(g.self_correction.changes_made)
            usage = usage + g.execution_metrics.usage
            case = _refused(run_dir / c.dir, g.self_correction.first_attempt_errors)
            refused.calls += case.calls
            refused.misplaced += case.misplaced
            refused.unknown_tools += [t for t in case.unknown_tools
                                      if t not in refused.unknown_tools]
        if (fx := run.suggestions(s, runtime)) is not None:
            sug = fx.suggestions
            lv1 += sum(x.level == "LV1" for x in sug)
            lv2 += sum(x.level == "LV2" for x in sug)
    elapsed = ((m.finished_at - m.created_at).total_seconds()
               if m.finished_at is not None else executor)
    return CompareRow(
        label=label, runtime=runtime, model=model, run_id=m.run_id,
        cases=sum(statuses.values()), statuses=statuses, gate=m.gate,
        wall_minutes=round(elapsed / 60, 3), executor_minutes=round(executor / 60, 3),
        assertions_passed=passed, assertions_total=total,
        causal_share=round(lv1 / (lv1 + lv2), 4) if lv1 + lv2 else None,
        self_corrections=changes, protocol_fidelity=f"{valid}/{judged}" if judged else "–",
        requests=usage.requests, tokens_in=usage.input_tokens,
        tokens_cached=usage.cached_input_tokens, refused=refused)


def compare_gate(rows: list[CompareRow]) -> Gate:
    """`aeval compare` exits as its worst row: the first code of `GATE_ORDER` any row's run
    ended with (a failed case in any row is exit 1), naming the rows; else 0."""
    for code in GATE_ORDER:
        hit = [r for r in rows if r.gate.exit_code == code]
        if hit:
            return Gate(exit_code=code, reason="; ".join(f"{r.label}: {r.gate.reason}"
                                                         for r in hit))
    return Gate(exit_code=OK, reason="every row's run passed")


def refusal_warnings(report: CompareReport) -> list[str]:
    """One loud line per row whose runtime refused tool calls or whose agent looked for the
    skill in another runtime's folder: such a row measured the agent's script, not the
    skill."""
    out = []
    for r in report.rows:
        f = r.refused
        if not f.calls and not f.misplaced:
            continue
        parts = []
        if f.calls:
            names = f" (tools it has not got: {', '.join(f.unknown_tools)})" \
                if f.unknown_tools else ""
            parts.append(f"{f.calls} tool call(s) the runtime refused{names}")
        if f.misplaced:
            parts.append(f"{f.misplaced} command(s) that looked for the skill outside "
                         f"{r.runtime}'s skills folder")
        out.append(f"warning: {r.label}: {'; '.join(parts)}. This row measures the agent's "
                   "mistakes, not the skill: is its script written for another runtime? "
                   "(examples/model-server/ has one per runtime)")
    return out


def _cells(r: CompareRow) -> list[object]:
    pct = f" ({r.assertions_passed / r.assertions_total:.0%})" if r.assertions_total else ""
    share = "–" if r.causal_share is None else f"{r.causal_share:.2f}"
    return [r.label, f"{r.wall_minutes:.2f}", f"{r.executor_minutes:.2f}",
            f"{r.assertions_passed}/{r.assertions_total}{pct}", share, r.self_corrections,
            r.protocol_fidelity, r.requests, r.tokens_in, r.tokens_cached]


def render_compare(report: CompareReport) -> str:
    lines = [f"# aeval compare {report.compare_id}", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in report.rows:
        lines.append("| " + " | ".join(str(c) for c in _cells(r)) + " |")
    lines += ["", "wall: elapsed time of the row's run; executor: the cases' executor time "
                  "summed. Pass rates are comparable across rows only when the assertion "
                  "lists are the same (an assertion writer writes its own list per run)."]
    warnings = refusal_warnings(report)
    if warnings:
        lines += ["", *warnings]
    lines += ["", f"gate: exit {report.gate.exit_code} ({report.gate.reason})"]
    return "\n".join(lines) + "\n"


@task(name="compare-report", cache_policy=NO_CACHE)
def write_compare(out_dir: Path, compare_id: str, paths: list[str],
                  runs: list[tuple[str, str, str | None, str]]) -> CompareReport:
    """compare.json, compare.md and a Prefect table from (label, runtime, model, run dir)."""
    rows = [row_for_run(Path(d), label, rt, model) for label, rt, model, d in runs]
    report = CompareReport(compare_id=compare_id, paths=paths, rows=rows,
                           gate=compare_gate(rows))
    write_model(Path(out_dir) / "compare.json", report)
    atomic_write_text(Path(out_dir) / "compare.md", render_compare(report))
    create_table_artifact([dict(zip(COLUMNS, _cells(r), strict=True)) for r in rows],
                          key=f"compare-{compare_id.lower()}",
                          description=f"aeval compare {compare_id}: exit "
                                      f"{report.gate.exit_code}")
    return report


ORIGINAL = "original"
AGREEMENT_COLUMNS = ("raters", "assertions", "agree", "rate", "kappa", "note")
KAPPA_NAMES = {"cohen": "Cohen's kappa", "fleiss": "Fleiss' kappa"}
RATER_COLUMNS = ("rater", "judged", "passed", "errors", "LV1", "LV2", "causal share")
_Key = tuple[str, str, str, int, str]


def regraded_dir(case_dir: str, runtime: str) -> str:
    """A source case folder (`skill/runtime/case[/epoch-N]`) as the replay run names it."""
    parts = list(Path(case_dir).parts)
    if len(parts) > 1 and parts[1] == runtime:
        parts[1] = "replay"
    return "/".join(parts)


def grader_problem(g: Grading) -> str | None:
    """Why this grading holds no grader verdicts on its natural-language assertions: the
    grader model failed or answered out of protocol (an error of that grader, not a
    disagreement), or the case itself ended in error."""
    ungraded = [e for e in g.expectations
                if e.kind == "natural_language" and e.status == "ungraded"]
    if ungraded:
        return ungraded[0].evidence[:300]
    if g.status == "error":
        return g.status_reason[:300]
    return None


class _Collector:
    """Verdicts of every rater, keyed by skill / runtime / case / epoch / assertion id."""

    def __init__(self) -> None:
        self.items: dict[_Key, AssertionVerdicts] = {}
        self.summaries: dict[str, RaterSummary] = {}
        self.tiers: dict[tuple[str, str, str, int, int], dict[str, set[str]]] = {}

    def summary(self, rater: str, model: str | None) -> RaterSummary:
        return self.summaries.setdefault(rater, RaterSummary(
            rater=rater, model=model, runs=[], judged=0, passed=0, lv1=0, lv2=0,
            causal_share=None))

    def grading(self, rater: str, g: Grading | None, skill: str, c: CaseResult) -> None:
        where = {"skill": skill, "runtime": c.runtime, "case_id": c.case_id, "epoch": c.epoch}
        if g is None:
            self.summaries[rater].errors.append(RaterError(
                **where, reason="no grading.json: the case did not finish"))
            return
        problem = grader_problem(g)
        if problem:
            self.summaries[rater].errors.append(RaterError(**where, reason=problem))
        for e in g.expectations:
            key = (skill, c.runtime, c.case_id, c.epoch or 0, e.id)
            item = self.items.setdefault(key, AssertionVerdicts(
                **where, assertion_id=e.id, text=e.text, kind=e.kind,
                counted=e.kind == "natural_language", verdicts={}, agree=None))
            item.verdicts[rater] = RaterVerdict(
                verdict=None if e.status == "ungraded" else e.status,
                evidence=e.evidence.replace("\n", " ")[:300])

    def suggestions(self, rater: str, fixes: FixSuggestions | None, skill: str,
                    runtime: str) -> None:
        if fixes is None:
            return
        s = self.summaries[rater]
        for x in fixes.suggestions:
            s.lv1 += x.level == "LV1"
            s.lv2 += x.level == "LV2"
            where = (skill, runtime, x.path, x.start_line, x.end_line)
            self.tiers.setdefault(where, {}).setdefault(rater, set()).add(x.level)


def agreement_report(source: Path, regrade_id: str, grader_models: list[str],
                     regraded: list[tuple[str, str, Path]],
                     failures: list[tuple[str, str, str]]) -> RegradeReport:
    """Every rater's verdicts on every assertion of every epoch, and their agreement.
    ``regraded``: (grader model, source runtime, replay run folder); ``failures``: (grader
    model, runtime, reason) for a grader whose whole re-grade run failed."""
    source_run = read_run(source)
    src = source_run.manifest
    raters = [ORIGINAL, *grader_models]
    col = _Collector()
    col.summary(ORIGINAL, src.grader_model).runs.append(src.run_id)
    for m in grader_models:
        col.summary(m, m)
    for s in src.skills:
        for c in s.cases:
            col.grading(ORIGINAL, source_run.grading(c), s.name, c)
        for runtime in sorted({c.runtime for c in s.cases}):
            col.suggestions(ORIGINAL, source_run.suggestions(s, runtime), s.name, runtime)
    for model, runtime, run_dir in regraded:
        col.summaries[model].runs.append(run_dir.name)
        for s in src.skills:
            cases = [c for c in s.cases if c.runtime == runtime]
            for c in cases:
                col.grading(model, read_grading(run_dir / regraded_dir(c.dir, runtime)),
                            s.name, c)
            for key in sorted({Path(c.dir).parts[0] for c in cases}):
                col.suggestions(model, read_if_there(RunLayout(run_dir).skill(
                    key, "replay").fix_suggestions, FixSuggestions), s.name, runtime)
    for model, runtime, reason in failures:
        col.summaries[model].errors += [
            RaterError(skill=s.name, runtime=runtime, case_id=c.case_id, epoch=c.epoch,
                       reason=reason[:300])
            for s in src.skills for c in s.cases if c.runtime == runtime]

    items = [col.items[k] for k in sorted(col.items)]
    for item in items:
        item.verdicts = {r: item.verdicts.get(r, RaterVerdict(verdict=None)) for r in raters}
        given = {v.verdict for v in item.verdicts.values() if v.verdict is not None}
        n = sum(v.verdict is not None for v in item.verdicts.values())
        item.agree = None if n < 2 else len(given) == 1
    counted = [i for i in items if i.counted]
    table = [[i.verdicts[r].verdict for r in raters] for i in counted]
    for r in raters:
        s = col.summaries[r]
        s.judged = sum(i.verdicts[r].verdict is not None for i in counted)
        s.passed = sum(i.verdicts[r].verdict == "passed" for i in counted)
        s.causal_share = round(s.lv1 / (s.lv1 + s.lv2), 4) if s.lv1 + s.lv2 else None
    active = [k for k, r in enumerate(raters) if col.summaries[r].judged]
    graders = [k for k in active if k > 0]
    tiers = [TierDifference(skill=w[0], runtime=w[1], path=w[2], start_line=w[3],
                            end_line=w[4],
                            levels={r: sorted(by.get(r, set())) for r in raters})
             for w, by in sorted(col.tiers.items())
             if len({frozenset(v) for v in by.values()}) > 1]
    return RegradeReport(
        source_run=src.run_id, regrade_id=regrade_id,
        regrade_runs=[d.name for _, _, d in regraded], original_grader=src.grader_model,
        grader_models=grader_models, epochs=src.epochs,
        raters=[col.summaries[r] for r in raters],
        overall=_agreement([raters[k] for k in active], columns(table, active)),
        among_graders=(agreement([raters[k] for k in graders], columns(table, graders))
                       if len(graders) >= 2 else None),
        pairs=pairwise(raters, table), assertions=items,
        disagreements=[i for i in items if i.agree is False], tier_differences=tiers)


def _agreement(raters: list[str], table: list[list]) -> Agreement:
    if len(raters) >= 2:
        return agreement(raters, table)
    return Agreement(raters=raters, items=0, agreements=0, rate=None, method="cohen",
                     kappa=None, kappa_note="fewer than two raters gave any verdict")


def _num(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:.0%}" if pct else f"{x:.2f}"


def agreement_rows(report: RegradeReport) -> list[tuple]:
    """The agreement table: all raters, the new graders among themselves, every pair."""
    rows = [("all: " + ", ".join(report.overall.raters), report.overall)]
    if report.among_graders:
        rows.append(("graders: " + ", ".join(report.among_graders.raters),
                     report.among_graders))
    rows += [(" vs ".join(p.raters), p) for p in report.pairs]
    return [(label, a.items, a.agreements, a.rate, a.kappa,
             a.kappa_note or (KAPPA_NAMES[a.method] if a.kappa is not None else ""))
            for label, a in rows]


def rater_rows(report: RegradeReport) -> list[tuple]:
    return [(r.rater if r.rater != ORIGINAL else f"original ({r.model or 'no grader'})",
             r.judged, r.passed, len(r.errors), r.lv1, r.lv2, r.causal_share)
            for r in report.raters]


def render_regrade(report: RegradeReport) -> str:
    """The console view: raters, agreement, errors, disagreements, tier differences."""
    def table(head: tuple, rows: list[tuple]) -> list[str]:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            out.append("| " + " | ".join(_cell(v) for v in r) + " |")
        return out

    lines = [f"# aeval regrade {report.source_run} ({report.epochs} epoch(s); graders: "
             f"{', '.join(report.grader_models)}; original grader: "
             f"{report.original_grader or 'none'})", ""]
    lines += [*table(RATER_COLUMNS, rater_rows(report)), ""]
    agree = [(label, n, a, _num(rate, pct=True), _num(k), note)
             for label, n, a, rate, k, note in agreement_rows(report)]
    lines += table(AGREEMENT_COLUMNS, agree)
    lines += ["", "Counted: natural-language assertions (the grader model's own verdicts), "
                  "over the ones every rater of a row judged."]
    for r in report.raters:
        for e in r.errors:
            ep = f"#{e.epoch}" if e.epoch is not None else ""
            lines.append(f"error: {r.rater}: {e.skill}/{e.case_id}{ep} [{e.runtime}]: "
                         f"{e.reason}")
    if report.disagreements:
        lines += ["", "Disagreements:"]
    for d in report.disagreements:
        ep = f"#{d.epoch}" if d.epoch is not None else ""
        lines.append(f"- {d.skill}/{d.case_id}{ep} [{d.runtime}] {d.assertion_id}: {d.text}")
        for rater, v in d.verdicts.items():
            if v.verdict is not None:
                lines.append(f"    {rater}: {v.verdict}  {v.evidence[:160]}")
    for td in report.tier_differences:
        tiers = "; ".join(f"{r}: {'+'.join(v) or '–'}" for r, v in td.levels.items())
        lines.append(f"tiers differ: {td.skill} {td.path}:{td.start_line}-{td.end_line} "
                     f"[{td.runtime}]: {tiers}")
    return "\n".join(lines) + "\n"


def _cell(v: object) -> str:
    return "–" if v is None else str(v).replace("|", "/")


@task(name="regrade-report", cache_policy=NO_CACHE)
def write_regrade(source: Path, regrade_id: str, grader_models: list[str],
                  regraded: list[tuple[str, str, str]], failures: list[tuple[str, str, str]]
                  ) -> RegradeReport:
    """regrade-<id>.json in the source run's folder, and Prefect tables of the raters and
    their agreement."""
    report = agreement_report(Path(source), regrade_id, grader_models,
                              [(m, rt, Path(d)) for m, rt, d in regraded], failures)
    write_model(Path(source) / f"regrade-{regrade_id}.json", report)
    key = f"regrade-{regrade_id.lower()}"
    create_table_artifact([dict(zip(AGREEMENT_COLUMNS, r, strict=True))
                           for r in agreement_rows(report)], key=key,
                          description=f"aeval regrade {report.source_run}: agreement of "
                                      f"{', '.join(report.overall.raters) or 'no raters'}")
    create_table_artifact([dict(zip(RATER_COLUMNS, r, strict=True))
                           for r in rater_rows(report)], key=f"{key}-raters",
                          description=f"aeval regrade {report.source_run}: raters")
    return report


def regrade_exit(report: RegradeReport) -> tuple[int, str]:
    """Exit code and reason of `aeval regrade`: 3 when a grader could not grade a case epoch
    the original grader judged (its provider failed, or its answers stayed invalid: the
    agreement is over fewer items; retry), else 0. A case epoch the original could not judge
    either (no grader then, or the case itself ended in error) is nobody's to retry."""
    def where(e) -> tuple:
        return e.skill, e.runtime, e.case_id, e.epoch

    original = {where(e) for r in report.raters if r.rater == ORIGINAL for e in r.errors}
    missed = [(r.rater, len({where(e) for e in r.errors} - original)) for r in report.raters
              if r.rater != ORIGINAL]
    missed = [(rater, n) for rater, n in missed if n]
    if missed:
        return ENVIRONMENT, "; ".join(f"{rater} could not grade {n} case epoch(s)"
                                      for rater, n in missed) \
            + " the original grader judged (see the errors above; retry)"
    return OK, "every grader judged every case epoch the original grader judged"
