"""What aeval shows in the Prefect UI: artifact keys and the per-case markdown table."""

from __future__ import annotations

from pathlib import Path

from aeval.artifacts import CaseResult, Grading
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
