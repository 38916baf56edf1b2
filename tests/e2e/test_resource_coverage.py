"""Skill resource coverage end to end: the builtin runtime against the scripted model server
runs a skill's script and reads its reference; the attempt records what it executed and read
(also a file only a script of the skill opened, seen by the watch), benchmark.json names the
untouched files, and report.html and the MR note show them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from aeval.artifacts import json_schema
from aeval.deployments.cli.main import main
from aeval.tasks.deliver.bodies import skill_note_body
from aeval.tasks.deliver.read_run import load_run
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.conftest import EXAMPLES

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SKILL = ".agents/skills/csv-stats"
PROMPT = "Compute statistics of fixtures/data.csv and save them to outputs/stats.json."


def bash(cmd: str) -> Turn:
    return Turn(tool_calls=[ToolCall(name="bash", arguments={"command": cmd})])


AGENT = Script(name="stats", match="Compute statistics of fixtures/data.csv", turns=[
    Turn(text="Reading the skill.", tool_calls=[
        ToolCall(name="read_file", arguments={"path": f"{SKILL}/SKILL.md"})]),
    bash(f"cat {SKILL}/references/columns.md"),
    bash("python3 $SKILL_DIR/scripts/stats.py fixtures/data.csv --out outputs/stats.json"),
    bash("bash $SKILL_DIR/scripts/units.sh > outputs/units.txt"),
], final="Done: rows: 5.")


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    """csv-stats with a reference the agent reads, a helper script whose own data file only
    the script opens, and a script nothing uses."""
    dst = tmp_path / "skills" / "csv-stats"
    shutil.copytree(EXAMPLES / "skills" / "csv-stats", dst)
    (dst / "references").mkdir()
    (dst / "references" / "columns.md").write_text("# Columns\n\nname, population, area_km2\n")
    (dst / "references" / "units.txt").write_text("population: people\narea_km2: km2\n")
    (dst / "scripts" / "units.sh").write_text(
        '#!/bin/sh\ncat "$(dirname "$0")/../references/units.txt"\n')
    (dst / "scripts" / "legacy_plot.py").write_text("print('never used')\n")
    (dst / "eval.config").write_text(json.dumps({"evals": [{
        "id": "stats", "prompt": PROMPT, "files": ["fixtures/data.csv"],
        "expected_outcome": "outputs/stats.json holds the statistics.",
        "assertions": [{"type": "file_exists", "path": "outputs/stats.json"}]}]}))
    return dst


def test_coverage_names_executed_read_and_untouched_files(skill, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    out = tmp_path / "store"
    with ScriptedModelServer([AGENT]) as srv:
        code = main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(out), "-q", "--no-grader"])
    assert code == 0
    (run_dir,) = (out / "runs").iterdir()
    case = run_dir / "csv-stats" / "builtin" / "stats"

    meta = json.loads((case / "eval_metadata.json").read_text())
    jsonschema.validate(meta, json_schema("eval-metadata"))
    res = meta["attempts"][-1]["resources"]
    assert res["executed"] == ["scripts/stats.py", "scripts/units.sh"]
    # units.txt is opened by the script, not by any tool call: only the watch sees it
    assert {"SKILL.md", "references/columns.md", "references/units.txt"} <= set(res["read"])
    assert res["written"] == [] and res["watched"] is True
    assert meta["status"] == "pass"  # opens are not edits: S1 still passes

    bench = json.loads((case.parent / "benchmark.json").read_text())
    jsonschema.validate(bench, json_schema("benchmark"))
    cov = bench["coverage"]
    assert cov["runs"] == 1 and cov["executed"] == {"scripts/stats.py": 1, "scripts/units.sh": 1}
    assert cov["read"]["references/columns.md"] == 1
    assert "scripts/legacy_plot.py" in cov["untouched"]
    assert "scripts/stats.py" not in cov["untouched"] and "SKILL.md" not in cov["untouched"]

    html = (run_dir / "report.html").read_text()
    assert "Skill resource coverage" in html and "<code>scripts/legacy_plot.py</code>" in html

    bundle = load_run(run_dir)
    (report,) = bundle.skills
    note = skill_note_body(report, bundle.manifest, report_url=None)
    assert "<details><summary>Skill files used [builtin]:" in note
    assert "- `scripts/legacy_plot.py`: **untouched**" in note
    assert "- `scripts/stats.py`: executed 1x" in note

    # the Prefect UI shows the same table: one row per file, untouched ones flagged
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from aeval.tasks.run.prefect_artifacts import artifact_key

    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=[artifact_key("coverage", "csv-stats", "builtin")])))
    (art,) = [a for a in arts if run_dir.name in (a.description or "")]
    assert art.type == "table"
    rows = json.loads(art.data) if isinstance(art.data, str) else art.data
    by = {r["file"]: r for r in rows}
    assert set(by) == set(cov["files"])
    assert by["scripts/stats.py"]["executed"] == 1 and by["scripts/stats.py"]["untouched"] == ""
    assert by["references/columns.md"]["read"] == 1
    assert by["scripts/legacy_plot.py"]["untouched"] == "UNTOUCHED"
    assert "untouched" in art.description and "csv-stats [builtin]" in art.description


def test_coverage_through_a_symlink_a_spaced_name_and_a_cd(tmp_path, monkeypatch):
    """A skill ships `references/latest.md` as a symlink to `v2.md` and a helper whose name
    has a space; the agent reads the reference through the link, runs the helper by its
    quoted path, and runs the main script after `cd "$SKILL_DIR"`. Nothing it used may be
    reported untouched, and the script it ran after the cd is executed, not merely read."""
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    dst = tmp_path / "skills" / "csv-stats"
    shutil.copytree(EXAMPLES / "skills" / "csv-stats", dst)
    (dst / "references").mkdir()
    (dst / "references" / "v2.md").write_text("# Columns (v2)\n\nname, population\n")
    (dst / "references" / "latest.md").symlink_to("v2.md")
    (dst / "scripts" / "check input.sh").write_text('#!/bin/sh\nhead -1 "$1"\n')
    (dst / "eval.config").write_text(json.dumps({"evals": [{
        "id": "stats", "prompt": PROMPT, "files": ["fixtures/data.csv"],
        "expected_outcome": "outputs/stats.json holds the statistics.",
        "assertions": [{"type": "file_exists", "path": "outputs/stats.json"}]}]}))
    agent = Script(name="stats", match="Compute statistics of fixtures/data.csv", turns=[
        bash('cat "$SKILL_DIR/references/latest.md"'),
        bash('bash "$SKILL_DIR/scripts/check input.sh" fixtures/data.csv'),
        bash('ws=$PWD; cd "$SKILL_DIR" && python3 scripts/stats.py "$ws/fixtures/data.csv" '
             '--out "$ws/outputs/stats.json"'),
    ], final="Done.")
    out = tmp_path / "store"
    with ScriptedModelServer([agent]) as srv:
        code = main(["run", str(dst), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(out), "-q", "--no-grader"])
    assert code == 0
    (run_dir,) = (out / "runs").iterdir()
    bench = json.loads((run_dir / "csv-stats" / "builtin" / "benchmark.json").read_text())
    cov = bench["coverage"]
    assert "references/latest.md" in cov["files"]
    assert cov["read"].get("references/latest.md") == 1, cov  # read through the link
    assert cov["read"].get("references/v2.md") == 1, cov      # the file it points to
    assert cov["executed"] == {"scripts/check input.sh": 1, "scripts/stats.py": 1}, cov
    assert not {"references/latest.md", "references/v2.md", "scripts/check input.sh",
                "scripts/stats.py"} & set(cov["untouched"])
