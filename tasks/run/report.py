"""report.html: one self-contained page per run (no scripts, no external assets), for people
who open the run folder or the CI artifact: the gate, a table of every case, and for each
case that did not pass its failed assertions with evidence, self-corrections and fixes.

The page comes from Jinja2 templates next to this module (``templates/``, packaged) with
``autoescape=select_autoescape()``: escaping is the default, not something each line of
code remembers. Every value a template shows also has its control characters written as
visible escapes (`aeval.isolation.text.escape_controls`, the environment's ``finalize``): ESC
sequences, NULs and bidi overrides from a step's output stay inert text."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from aeval.artifacts import (
    FixSuggestion,
    RunManifest,
    TriggersReport,
    case_fixes,
)
from aeval.isolation.text import escape_controls
from aeval.run.read import RunRecord
from aeval.verdicts.efficiency import EFFICIENCY_COLUMNS, efficiency_cells
from aeval.verdicts.status import rate_cells


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.0%}"


def _num(x: float | None, spec: str) -> str:
    return "–" if x is None else spec % x


def efficiency_rows(manifest: RunManifest) -> list[dict]:
    """The Efficiency table of report.html: one row per case that ran (or declares its
    outputs), its cells as every view shows them (`efficiency_cells`)."""
    return [{"skill": s.name, "runtime": c.runtime,
             "case": c.case_id + (f" #{c.epoch}" if c.epoch is not None else ""),
             "cells": efficiency_cells(c.efficiency, c.stray_files)}
            for s in manifest.skills if s.status != "invalid" for c in s.cases
            if c.efficiency is not None or c.stray_files is not None]


def _finalize(value: Any) -> Any:
    """What every ``{{ ... }}`` shows: text with its control characters escaped (then
    HTML-escaped by autoescape); numbers and markup as they are."""
    return escape_controls(value) if isinstance(value, str) and not hasattr(
        value, "__html__") else value


def fix_diff(x: FixSuggestion) -> str:
    """A suggestion's line edit as a diff (empty for a command-only fix)."""
    if x.original == x.replacement:
        return ""
    head = f"--- {x.path} line {x.start_line}" + (
        f"-{x.end_line}" if x.end_line != x.start_line else "")
    return "\n".join([head, *(f"-{ln}" for ln in x.original.splitlines()),
                      *(f"+{ln}" for ln in x.replacement.splitlines())])


@cache
def environment() -> Environment:
    """The templates' environment (one per process)."""
    env = Environment(loader=PackageLoader("aeval.tasks", "templates"),
                      autoescape=select_autoescape(), finalize=_finalize,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(pct=_pct, signed=_signed, num=_num, rates=rate_cells,
                       fix_diff=fix_diff, efficiency_rows=efficiency_rows)
    env.globals["efficiency_columns"] = EFFICIENCY_COLUMNS
    return env


def render_report(run_dir: Path, manifest: RunManifest) -> str:
    """report.html of a run (with its uplift section when ``uplift.json`` is there, its head
    against base section when ``head_vs_base.json`` is)."""
    run = RunRecord.of(run_dir, manifest)
    details = []
    fixes = []
    coverage = []
    for s in manifest.skills:
        suggested = {rt: run.suggestions(s, rt) for rt in manifest.runtimes}
        if s.status != "invalid":
            for case, g in run.gradings(s):
                c = case.result
                if c.status != "pass":
                    name = c.case_id + (f" #{c.epoch}" if c.epoch is not None else "")
                    fx = suggested.get(c.runtime)
                    key = c.case_id if c.epoch is None else f"{c.case_id}#{c.epoch}"
                    ids = [e.id for e in g.expectations if e.status == "failed"] + [
                        ch.id for ch in g.self_correction.changes_made]
                    details.append({"skill": s.name, "case": name, "runtime": c.runtime,
                                    "grading": g, "reason": c.reason,
                                    "fixes": case_fixes(fx.suggestions if fx else [], key,
                                                        ids)})
        for rt in manifest.runtimes:
            fx = suggested[rt]
            if fx is not None and fx.suggestions:
                fixes.append({"skill": s.name, "runtime": rt, "suggestions": fx.suggestions})
            bench = run.benchmark(s, rt)
            if bench is not None and bench.coverage is not None:
                coverage.append({"skill": s.name, "runtime": rt, "cov": bench.coverage})
    return environment().get_template("report.html").render(
        m=manifest, details=details, fixes=fixes, coverage=coverage, uplift=run.uplift(),
        head_vs_base=run.head_vs_base())


def render_triggers_report(report: TriggersReport) -> str:
    """report.html of a triggers run."""
    return environment().get_template("triggers.html").render(report=report)
