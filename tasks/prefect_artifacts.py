"""What aeval shows in the Prefect UI: artifact keys and the per-case markdown table.

Untrusted text (skill names, reasons, assertion texts, evidence, file names) is inert there:
in markdown artifacts it is shown as code spans (no link, image, HTML or emphasis of a
skill's or a model's renders), and in table artifacts every string has its control
characters escaped (`inert_rows`)."""

from __future__ import annotations

from pathlib import Path

from aeval.artifacts import CaseResult, Grading, TriggersReport
from aeval.coverage import SkillCoverage
from aeval.layout import safe
from aeval.store import read_model
from aeval.text import code_span, escape_controls


def inert_rows(rows: list[dict]) -> list[dict]:
    """Table artifact rows with every string value's control characters escaped."""
    return [{k: escape_controls(v) if isinstance(v, str) else v for k, v in r.items()}
            for r in rows]


def _md_cell(text: str) -> str:
    """Untrusted text in a markdown table cell: a code span, ``|`` escaped."""
    return code_span(text).replace("|", "\\|")


def artifact_key(*parts: str) -> str:
    """Prefect artifact keys: lowercase letters, digits and dashes."""
    return "-".join(safe(p).lower().replace("_", "-").replace(".", "-") for p in parts)[:200]


def case_markdown(c: CaseResult, skill: str, run_dir: Path) -> str:
    lines = [f"### {code_span(skill)} / {c.case_id} [{c.runtime}]: **{c.status.upper()}**",
             "", code_span(c.reason), ""]
    p = run_dir / c.dir / "grading.json"
    if p.is_file():
        g = read_model(p, Grading)
        lines += ["| id | verdict | assertion | evidence |", "|---|---|---|---|"]
        for e in g.expectations:
            lines.append(f"| {_md_cell(e.id)} | {e.status} | {_md_cell(e.text)} | "
                         f"{_md_cell(e.evidence[:200])} |")
    return "\n".join(lines)


def trigger_rows(report: TriggersReport) -> list[dict]:
    """The Prefect table of a triggers run: one row per skill x runtime."""
    return inert_rows([{"skill": s.skill, "runtime": s.runtime, "precision": s.precision,
             "recall": s.recall, "tp": s.tp, "fn": s.fn, "fp": s.fp, "tn": s.tn,
             "errors": s.errors, "prompts": s.source,
             "picked instead": ", ".join(f"{k} ({v})" for k, v in s.distractor_picks.items()),
             "distractors": len(s.distractors)} for s in report.scores])


def coverage_rows(cov: SkillCoverage) -> list[dict]:
    """The Prefect table of a skill's resource coverage (one runtime): one row per file of
    the skill, the runs that read, executed or wrote it, untouched files flagged."""
    return inert_rows([{"file": f, "read": cov.read.get(f, 0),
                        "executed": cov.executed.get(f, 0), "written": cov.written.get(f, 0),
                        "untouched": "UNTOUCHED" if f in cov.untouched else ""}
                       for f in cov.files])
