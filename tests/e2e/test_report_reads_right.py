"""report.html and summary.md say what the console says (issue 46): an untested case has no
rate ("–", never "100% (0/0)" or a terminal percentage), its section says why it is
untested instead of being an empty heading, and the coverage table counts only the skill's
own runnable and reference files (not SKILL.md, the contract or the fixtures the cases copy
into their workspace, which were painted as unused)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from tests.conftest import EXAMPLES

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    """csv-stats with a reference file, a case that runs the script on the fixture, and a case
    written for an agent (no steps: untested under the literal runtime)."""
    dst = tmp_path / "skills" / "csv-stats"
    shutil.copytree(EXAMPLES / "skills" / "csv-stats", dst)
    (dst / "references").mkdir()
    (dst / "references" / "columns.md").write_text("# Columns\n\nname, population, area_km2\n")
    (dst / "eval.config").write_text(json.dumps({"evals": [
        {"id": "stats", "prompt": "Compute statistics of fixtures/data.csv.",
         "files": ["fixtures/data.csv"],
         "expected_outcome": "outputs/stats.json holds the statistics.",
         "steps": ["python3 $SKILL_DIR/scripts/stats.py fixtures/data.csv "
                   "--out outputs/stats.json"],
         "assertions": [{"type": "file_exists", "path": "outputs/stats.json"}]},
        {"id": "explain", "prompt": "Explain what the area_km2 column means.",
         "files": ["fixtures/data.csv"],
         "expected_outcome": "The unit is named.",
         "assertions": ["The answer says area_km2 is in square kilometres",
                        {"type": "transcript_contains", "text": "km"},
                        {"type": "file_exists", "path": "fixtures/data.csv"}]}]}))
    return dst


def row(html: str, case: str) -> list[str]:
    """The cells of report.html's summary row of ``case``."""
    m = re.search(rf"<tr><td>csv-stats</td><td><a href=\"[^\"]*\">{case}</a></td>(.*?)</tr>",
                  html)
    assert m, f"no row for {case}"
    return re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))


def test_report_and_summary_show_untested_without_a_rate_and_count_only_resources(
        skill, tmp_path):
    out = tmp_path / "store"
    code = main(["run", str(skill), "--runtime", "literal", "--out", str(out), "-q"])
    assert code == 0
    (run_dir,) = (out / "runs").iterdir()
    html = (run_dir / "report.html").read_text()

    runtime, status, first, terminal = row(html, "explain")[:4]
    assert (runtime, status) == ("literal", "untested")
    assert (first, terminal) == ("–", "–")
    status, first = row(html, "stats")[1:3]
    assert status == "pass" and re.fullmatch(r"100% \(\d+/\d+\)", first), first
    # the untested case's section says why, not an empty heading
    section = html.split("csv-stats / explain [literal]", 1)[1].split("<h2>", 1)[0]
    assert "<p>no steps: the literal runtime has nothing to run" in section, section[:500]

    summary = (run_dir / "csv-stats" / "literal" / "summary.md").read_text()
    # the case table's row (the Efficiency table below it has one too)
    line, efficiency = [ln for ln in summary.splitlines() if ln.startswith("| explain |")]
    assert line.split("|")[3:5] == [" – ", " – "], line
    assert efficiency.split("|")[2] == " – ", efficiency  # literal: no model turns

    bench = json.loads((run_dir / "csv-stats" / "literal" / "benchmark.json").read_text())
    files = bench["coverage"]["files"]
    assert files == ["references/columns.md", "scripts/stats.py"], files
    assert bench["coverage"]["untouched"] == ["references/columns.md"]
    table = html.split("Skill resource coverage", 1)[1]
    for not_a_resource in ("SKILL.md", "eval.config", "fixtures/data.csv"):
        assert f"<td>{not_a_resource}</td>" not in table, not_a_resource
