"""`RunLayout` is the only place that knows the name of a run folder's file: no module joins
one to a path by hand (as Inspect AI never opens a log file by name outside its reader)."""

from __future__ import annotations

import re

from aeval.run import layout
from tests.conftest import ROOT

NAMES = [layout.RUN_MANIFEST, layout.JUNIT, layout.REPORT, layout.UPLIFT, layout.BENCHMARK,
         layout.ANALYSIS_NOTES, layout.FIX_SUGGESTIONS, layout.MULTI_EVAL_REPORT,
         layout.SUMMARY, layout.REGRESSION, layout.EVAL_METADATA, layout.ASSERTIONS,
         layout.EVENTS, layout.TRANSCRIPT, layout.GRADING, layout.SKILL_DIFF,
         layout.SKILL_AFTER, layout.OUTPUTS, layout.ATTEMPTS, layout.ATTEMPT_RECORD, layout.PROBE,
         layout.UNRECORDED]
JOINED = re.compile(r"/\s*[\"'](" + "|".join(map(re.escape, NAMES)) + r")[\"']")
LEFT: set[str] = set()
"""Modules still to move onto the layout's names: none."""


def test_no_module_but_the_layout_joins_a_run_file_name_to_a_path():
    found = {}
    for folder in ("aeval", "adapters", "tasks", "flows", "deployments"):
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT).as_posix()
            hits = JOINED.findall(path.read_text(encoding="utf-8"))
            if hits and rel != "aeval/run/layout.py" and rel not in LEFT:
                found[rel] = hits
    assert not found, f"file names of a run folder spelled outside RunLayout: {found}"


def test_every_artifact_with_a_schema_is_named_by_the_layout():
    assert set(layout.FILE_SCHEMAS) >= {
        layout.RUN_MANIFEST, layout.GRADING, layout.BENCHMARK, layout.EVENTS,
        layout.ASSERTIONS, layout.EVAL_METADATA, layout.FIX_SUGGESTIONS}
    assert layout.schema_for("regrade-20261130.json") == "regrade"
    assert layout.schema_for(layout.GRADING) == "grading"
