"""report.html shows each failed case's fixes beside the evidence they answer (issue 46,
item 3): a suggestion grounded in a failed assertion under that assertion's evidence, an
executor's edit under its self-correction, as a diff; a command fix as the command."""

from __future__ import annotations

from aeval.artifacts import FixSuggestion
from aeval.run.read import read_run
from aeval.tasks.run.report import render_report
from tests.unit.test_deliver import LINES, WORKFLOW_LINE, make_run, train_row_fix


def section(html: str, start: str) -> str:
    return html.split(start, 1)[1].split("<h2>", 1)[0]


def test_each_fix_follows_the_evidence_it_answers(tmp_path):
    line = LINES[WORKFLOW_LINE - 1]
    delta = train_row_fix(grounded_in="train:C1", source="delta", validated=True)
    chmod = FixSuggestion(level="LV1", grounded_in="train:A1", path="SKILL.md",
                          start_line=WORKFLOW_LINE, end_line=WORKFLOW_LINE, original=line,
                          replacement=line, rationale="scripts/run.py is not executable.",
                          validated=False, source="static",
                          command="chmod +x scripts/run.py")
    run_dir = make_run(tmp_path, "r1", [train_row_fix(), delta, chmod])
    html = render_report(run_dir, read_run(run_dir).manifest)
    case = section(html, "<h2>segmentation / train [builtin]")
    a1, a3 = case.index("<b>A1</b>"), case.index("<b>A3</b>")
    c1 = case.index("self-correction <b>C1</b>")
    # A1's fix is the command, between A1's evidence and A3
    assert a1 < case.index("$ chmod +x scripts/run.py") < a3
    # A3's fix (grounded train:A3) and C1's (the edit) as diffs, after their evidence
    fixes = case.split('<div class="fix">')
    assert len(fixes) == 4  # three fixes, each once beside its evidence
    assert "grounded in train:A3" in fixes[2] and a3 < case.index(fixes[2][:40])
    assert "validated by the run" in fixes[3] and c1 < case.index(fixes[3][:40])
    assert f"+{train_row_fix().replacement}" in fixes[2]
    assert "$ chmod" not in fixes[2] and "-" + line not in fixes[1]  # a command: no diff
