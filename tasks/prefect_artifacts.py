"""What aeval shows in the Prefect UI: artifact keys and the per-case markdown table."""

from __future__ import annotations

from pathlib import Path

from aeval.artifacts import CaseResult, Grading, TriggersReport
from aeval.coverage import SkillCoverage
from aeval.layout import safe
from aeval.store import read_model


def artifact_key(*parts: str) -> str:
    """Prefect artifact keys: lowercase letters, digits and dashes."""
    return "-".join(safe(p).lower().replace("_", "-").replace(".", "-") for p in parts)[:200]


def case_markdown(c: CaseResult, skill: str, run_dir: Path) -> str:
    lines = [f"### {skill} / {c.case_id} [{c.runtime}]: **{c.status.upper()}**", "",
             c.reason, ""]
    p = run_dir / c.dir / "grading.json"
    if p.is_file():
        g = read_model(p, Grading)
        lines += ["| id | verdict | assertion | evidence |", "|---|---|---|---|"]
        for e in g.expectations:
            ev = e.evidence.replace("|", "\\|").replace("\n", " ")[:200]
            lines.append(f"| {e.id} | {e.status} | {e.text.replace('|', '/')} | {ev} |")
    return "\n".join(lines)


def trigger_rows(report: TriggersReport) -> list[dict]:
    """The Prefect table of a triggers run: one row per skill x runtime."""
    return [{"skill": s.skill, "runtime": s.runtime, "precision": s.precision,
             "recall": s.recall, "tp": s.tp, "fn": s.fn, "fp": s.fp, "tn": s.tn,
             "errors": s.errors, "prompts": s.source,
             "picked instead": ", ".join(f"{k} ({v})" for k, v in s.distractor_picks.items()),
             "distractors": len(s.distractors)} for s in report.scores]


def coverage_rows(cov: SkillCoverage) -> list[dict]:
    """The Prefect table of a skill's resource coverage (one runtime): one row per file of
    the skill, the runs that read, executed or wrote it, untouched files flagged."""
    return [{"file": f, "read": cov.read.get(f, 0), "executed": cov.executed.get(f, 0),
             "written": cov.written.get(f, 0),
             "untouched": "UNTOUCHED" if f in cov.untouched else ""} for f in cov.files]
