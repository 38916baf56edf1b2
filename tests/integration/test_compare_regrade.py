"""aeval compare (one row per runtime / model) and aeval regrade (another grader on the same
recorded transcripts), against the scripted model server."""

from __future__ import annotations

import json
import shutil

import pytest

from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from deployments.cli import main
from tasks.compare import COLUMNS
from tests.conftest import EXAMPLES
from tests.integration.test_builtin_runtime import EDITS_SKILL
from tests.integration.test_grade_and_suggest import ALL_PASS, CASE, NO_EXTRA, grader

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(autouse=True)
def env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_compare_two_models_on_the_examples_prints_every_column(tmp_path, capsys):
    explore = Script(name="explore", match="You are the EXECUTOR", turns=[
        Turn(tool_calls=[ToolCall(name="bash", arguments={
            "command": "ls .agents/skills && head -3 .agents/skills/*/SKILL.md"})]),
        Turn(text="Looked at the skill.")])
    mp = tmp_path / "mp"
    shutil.copytree(EXAMPLES, mp)
    with ScriptedModelServer([explore]) as srv:
        code = main(["compare", str(mp), "--runtime", "builtin", "--model", "openai/model-a",
                     "--model", "openai/model-b", "--runtime", "literal", "--no-grader",
                     "--api-base", srv.base_url_openai, "--out", str(tmp_path / "s"), "-q"])
    assert code == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("| runtime"))
    assert [c.strip() for c in header.strip("|").split("|")] == list(COLUMNS)
    rows = [line for line in out.splitlines() if line.startswith("| builtin:")
            or line.startswith("| literal")]
    assert [r.split("|")[1].strip() for r in rows] == [
        "builtin:openai/model-a", "builtin:openai/model-b", "literal"]
    (cmp_dir,) = (tmp_path / "s" / "compare").iterdir()
    report = json.loads((cmp_dir / "compare.json").read_text())
    a, b, lit = report["rows"]
    assert a["cases"] == b["cases"] == lit["cases"] == 6
    assert a["tokens_in"] > 0 and a["tokens_cached"] > 0 and lit["tokens_in"] == 0
    assert lit["statuses"] == {"pass": 4, "fail": 2}
    assert a["wall_minutes"] > 0 and a["assertions_total"] > 0
    assert (cmp_dir / "compare.md").read_text().count("\n| ") == 4


def test_regrade_reports_disagreement_with_the_original_grader(tmp_path, capsys):
    skill = tmp_path / "mp" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", skill)
    (skill / "eval.config").write_text(json.dumps({"evals": [CASE]}))
    store = tmp_path / "s"
    with ScriptedModelServer([NO_EXTRA, grader("grader", ALL_PASS), EDITS_SKILL]) as srv:
        assert main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(store), "-q"]) == 1
    (source,) = (store / "runs").iterdir()
    strict = grader("strict", {"A1": (True, False), "A2": (True, False), "A3": (False, False)})
    with ScriptedModelServer([strict]) as srv:
        assert main(["regrade", source.name, "--grader-model", "openai/strict", "--api-base",
                     srv.base_url_openai, "--out", str(store), "-q"]) == 0
        # replay ran no executor against the model: only the evaluator side was asked
        assert not [r for r in srv.requests if "You are the EXECUTOR" in json.dumps(r.body)]
        assert [r.script for r in srv.requests].count("strict") == 1
    out = capsys.readouterr().out
    assert "3/4 assertions agree (75%)" in out
    assert "A3: passed -> failed" in out
    (report_path,) = source.glob("regrade-*.json")
    report = json.loads(report_path.read_text())
    assert report["original_grader"] == "openai/scripted"
    assert report["grader_model"] == "openai/strict"
    (d,) = report["disagreements"]
    assert (d["case_id"], d["assertion_id"], d["original"], d["regraded"]) == (
        "train", "A3", "passed", "failed")
    # the replayed case reproduced the recorded skill edit: S1 still fails structurally
    (regraded,) = [p for p in (store / "runs").iterdir() if p != source]
    g = json.loads((regraded / "segmentation" / "replay" / "train" / "grading.json").read_text())
    assert g["self_correction"]["changes_made"][0]["path"] == "SKILL.md"
    same = json.loads((source / "segmentation" / "builtin" / "train" / "assertions.json")
                      .read_text())
    assert json.loads((regraded / "segmentation" / "replay" / "train" / "assertions.json")
                      .read_text())["sha256"] == same["sha256"]
