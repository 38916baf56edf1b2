"""aeval compare (one row per runtime / model) and aeval regrade (another grader on the same
recorded transcripts), against the scripted model server."""

from __future__ import annotations

import json
import shutil

import pytest
from aeval.deployments.cli import main
from aeval.tasks.compare import COLUMNS

from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
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
    assert a["cases"] == b["cases"] == lit["cases"] == 7
    assert a["tokens_in"] > 0 and a["tokens_cached"] > 0 and lit["tokens_in"] == 0
    assert lit["statuses"] == {"pass": 4, "fail": 3}
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
    assert "4/5 assertions agree (80%)" in out
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


def test_compare_across_the_four_agent_runtimes_prints_one_row_each(tmp_path, capsys):
    from aeval.adapters import get_runtime

    from aeval.errors import RuntimeUnavailable

    for name in ("claude-code", "codex", "opencode"):
        try:
            get_runtime(name).check_available()
        except RuntimeUnavailable as exc:
            pytest.skip(f"{name} is not installed (bash .ci/install-clis.sh): {exc}")
    skill = tmp_path / "mp" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", skill)
    (skill / "eval.config").write_text(json.dumps({"evals": [
        {**CASE, "assertions": [{"type": "file_exists", "path": "outputs/model.json"}]}]}))
    # every runtime's agent answers at once, without tools: what is compared here is that the
    # same skill runs through each real CLI and lands in its own row
    quiet = Script(name="quiet", match="Train a segmentation model",
                   turns=[Turn(text="I will not run anything.")])
    with ScriptedModelServer([quiet]) as srv:
        code = main(["compare", str(skill), "--runtime", "builtin=openai/scripted",
                     "--runtime", "claude-code=claude-sonnet-4-5", "--runtime",
                     "codex=openai/scripted", "--runtime", "opencode=mock/scripted",
                     "--no-grader", "--api-base", srv.base_url_openai,
                     "--out", str(tmp_path / "s"), "-q"])
        paths = {r.path.split("?")[0] for r in srv.requests}
    assert code == 0
    assert {"/v1/chat/completions", "/v1/messages", "/v1/responses"} <= paths
    out = capsys.readouterr().out
    labels = [line.split("|")[1].strip() for line in out.splitlines()
              if line.startswith("| ") and not line.startswith("| runtime")]
    assert labels == ["builtin:openai/scripted", "claude-code:claude-sonnet-4-5",
                      "codex:openai/scripted", "opencode:mock/scripted"]
    (cmp_dir,) = (tmp_path / "s" / "compare").iterdir()
    rows = json.loads((cmp_dir / "compare.json").read_text())["rows"]
    assert [r["statuses"] for r in rows] == [{"fail": 1}] * 4  # nobody trained: file missing
