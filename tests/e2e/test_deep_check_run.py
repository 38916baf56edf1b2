"""S0's deep tier through `aeval run`, zero-key (literal runtime, real bubblewrap, real Prefect):
a CSV report skill whose script imports a function its own `lib/fmt.py` renamed fails before
anything runs, and the evidence names the code file and line and the SKILL.md line that runs
the script; the same skill with the name fixed passes."""

from __future__ import annotations

import json
from textwrap import dedent

import pytest

from aeval.deployments.cli.main import main
from tests.unit.test_deep_check import FMT, REPORT, REPORT_MD, build, line_of

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def test_a_renamed_function_in_the_skills_own_module_fails_the_run_with_the_evidence(
        tmp_path, capsys):
    mp, out = tmp_path / "mp", tmp_path / "store"
    root = build(mp / "csv-report", {
        "SKILL.md": REPORT_MD, "scripts/lib/__init__.py": "", "scripts/lib/fmt.py": FMT,
        "scripts/report.py": REPORT.format(name="render_table"),
        "data.csv": "name,count\nalpha,3\nbeta,5\n"})
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 1, console
    at = line_of(root, "python3 scripts/report.py")
    evidence = (f"SKILL.md line {at}: runs scripts/report.py: scripts/report.py line 6 imports "
                "render_table from scripts/lib/fmt.py, which does not define it")
    (rd,) = (out / "runs").iterdir()
    (skill,) = json.loads((rd / "run.json").read_text())["skills"]
    assert skill["status"] == "fail", skill
    gradings = [json.loads(p.read_text()) for p in rd.rglob("grading.json")]
    assert any(evidence in e.get("evidence", "") and not e["passed"]
               for g in gradings for e in g["expectations"]), gradings
    assert evidence in console, console  # under S0's line, before the doc test ran it

    (root / "scripts/report.py").write_text(dedent(REPORT.format(name="render_rows")))
    out2 = tmp_path / "store2"
    assert main(["run", str(mp), "--runtime", "literal", "--out", str(out2)]) == 0, \
        capsys.readouterr().out
