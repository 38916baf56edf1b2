"""`aeval init` without a model never writes a defect the skill does not have: SKILL.md's
blocks run once as the doc test, only the self-contained ones become steps, and the rest
stay as TODO steps that `aeval validate` names with what the author must supply. The first
`aeval run` (zero-key, literal) then never fails a clean skill, and still fails a broken one.

The skills (tests/data/init_doctest) are shaped like public document skills: a PDF toolkit
whose blocks need poppler's pdftotext and the reader's input.pdf, an Excel skill whose
script imports openpyxl and reads the reader's workbook, a CSV skill whose blocks run its
own script on the fixture it ships, and a linter whose block checks ``.``: the skill folder,
where the doc test runs it, and the workspace, where a contract's step runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

DATA = Path(__file__).resolve().parent.parent / "data" / "init_doctest"


def copy(tmp_path: Path, name: str) -> Path:
    d = tmp_path / "mp" / "skills" / name
    shutil.copytree(DATA / name, d)
    return d


def run(skill: Path, out: Path) -> tuple[int, dict[str, str]]:
    """`aeval run SKILL` (literal, no key): the exit code and each case's status."""
    before = set((out / "runs").iterdir()) if (out / "runs").is_dir() else set()
    code = main(["run", str(skill), "--out", str(out)])
    (new,) = set((out / "runs").iterdir()) - before
    manifest = json.loads((new / "run.json").read_text())
    return code, {c["case_id"]: c["status"] for s in manifest["skills"] for c in s["cases"]}


def validate(skill: Path, capsys) -> str:
    assert main(["validate", str(skill)]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(("name", "needs"), [
    ("pdf-toolkit", {"steps[0]": "needs pdftotext",
                     "steps[1]": "it needs an input the reader supplies: input.pdf",
                     "steps[2]": "may depend on SKILL.md line 21"}),
    ("xlsx-reports", {"steps[0]": "needs openpyxl", "steps[1]": "needs openpyxl",
                      "steps[2]": "placeholder"}),
])
def test_a_document_skill_that_needs_the_readers_tools_and_files_is_never_failed(
        tmp_path, capsys, name, needs):
    skill = copy(tmp_path, name)
    out = tmp_path / "o"
    assert main(["init", str(skill), "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "doc test: untested: needs" in shown, shown
    steps = json.loads((skill / "eval.config").read_text())["evals"][0]["steps"]
    assert steps and all(s.startswith("# TODO(aeval init): SKILL.md line ") for s in steps)
    # the next run, as CI would make it: untested with the reason, exit 0, never fail
    code, statuses = run(skill, out)
    assert code == 0 and statuses["documented-workflow"] == "untested", statuses
    assert "fail" not in statuses.values()
    listed = validate(skill, capsys)
    for field, what in needs.items():
        line = next((ln for ln in listed.splitlines() if f":evals[0].{field}: " in ln), "")
        assert "still aeval init's placeholder" in line and what in line, listed


def test_a_self_contained_skill_keeps_its_blocks_as_steps_and_passes(tmp_path, capsys):
    skill = copy(tmp_path, "csv-stats")
    out = tmp_path / "o"
    assert main(["init", str(skill), "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "doc test [1/3] SKILL.md line 11 ..." in shown  # progress, one line per block
    assert "csv-stats: template, 1 case(s); first run: 1 pass" in shown, shown
    steps = json.loads((skill / "eval.config").read_text())["evals"][0]["steps"]
    assert steps[:2] == [
        'python3 "$SKILL_DIR/scripts/stats.py" fixtures/sales.csv --column amount',
        'python3 "$SKILL_DIR/scripts/stats.py" fixtures/sales.csv --column amount --json '
        "> stats.json"]
    assert steps[2].startswith("# TODO(aeval init): SKILL.md line 23: placeholder")
    code, statuses = run(skill, out)
    assert code == 0 and statuses == {"documented-workflow": "pass", "skill-md": "pass"}
    listed = validate(skill, capsys)
    assert "evals[0].steps[2]: still aeval init's placeholder: SKILL.md line 23: placeholder: " \
           "angle-bracket placeholder '<your-file.csv>'" in listed, listed


def test_a_defect_planted_in_the_self_contained_skill_still_fails_after_init(tmp_path, capsys):
    skill = copy(tmp_path, "csv-stats")
    script = skill / "scripts" / "stats.py"
    script.write_text(script.read_text().replace("sum(values) / len(values)",
                                                 "sum(values) / count"))
    out = tmp_path / "o"
    assert main(["init", str(skill), "--out", str(out)]) == 0  # verdicts shown, not gated
    shown = capsys.readouterr().out
    assert "doc test: failed: " in shown and "NameError" in shown, shown
    steps = json.loads((skill / "eval.config").read_text())["evals"][0]["steps"]
    assert steps[0] == 'python3 "$SKILL_DIR/scripts/stats.py" fixtures/sales.csv --column amount'
    code, statuses = run(skill, out)
    assert code == 1 and statuses["documented-workflow"] == "fail", statuses


def test_a_block_that_names_the_folder_it_runs_in_is_left_to_the_author(tmp_path, capsys):
    skill = copy(tmp_path, "frontmatter-lint")
    out = tmp_path / "o"
    assert main(["init", str(skill), "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "doc test: completed" in shown, shown  # `lint_frontmatter.py .` lints the skill
    (step,) = json.loads((skill / "eval.config").read_text())["evals"][0]["steps"]
    assert step.startswith("# TODO(aeval init): SKILL.md line 11: it ran from the skill "
                           "folder (the doc test), but as a step from the workspace it exited 1")
    code, statuses = run(skill, out)
    assert code == 0 and statuses["documented-workflow"] == "untested", statuses
    assert statuses["skill-md"] == "pass"
    assert "write it with $SKILL_DIR" in validate(skill, capsys)
