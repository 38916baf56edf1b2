"""`aeval triggers` with the real OpenCode CLI against the scripted model server: OpenCode
discovers the skill and its distractors in `.opencode/skills/`, and its own `skill` tool is
the invocation event aeval counts. Skipped when the OpenCode CLI is not installed."""

from __future__ import annotations

import json

import pytest

from aeval.adapters.runtimes.opencode import OpenCodeRuntime
from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(OpenCodeRuntime().binary() is None,
                       reason=f"OpenCode CLI not installed: {OpenCodeRuntime.install_hint}"),
]

SHOULD = "Profile the columns of cities.csv and give me per-column statistics as JSON."
SHOULD_NOT = "Sum the invoice amounts per customer in invoices.csv."


def invoke(name: str) -> Turn:
    return Turn(text="A skill fits this task.",
                tool_calls=[ToolCall(name="skill", arguments={"name": name})])


def test_opencode_skill_tool_counts_as_loading(marketplace, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "real-home"))
    (tmp_path / "real-home").mkdir()
    monkeypatch.setenv("MOCK_API_KEY", "placeholder")
    skill = marketplace / "skills" / "csv-stats"
    config = json.loads((skill / "eval.config").read_text())
    config["triggers"] = {"should": [SHOULD], "should_not": [SHOULD_NOT]}
    (skill / "eval.config").write_text(json.dumps(config))
    scripts = [Script(name="should", match="Profile the columns of cities.csv",
                      turns=[invoke("csv-stats")], final="Using csv-stats."),
               Script(name="not", match="Sum the invoice amounts per customer",
                      turns=[invoke("invoice-totals")], final="Using invoice-totals.")]
    out = tmp_path / "store"
    with ScriptedModelServer(scripts) as srv:
        code = main(["triggers", str(skill), "--runtime", "opencode", "--model",
                     "mock/scripted", "--api-base", srv.base_url_openai, "--out", str(out),
                     "-q"])
        first = srv.requests_for("should")[0].body
    assert code == 0
    (run_dir,) = (out / "triggers").iterdir()
    (score,) = json.loads((run_dir / "triggers.json").read_text())["scores"]
    assert score["runtime"] == "opencode"
    assert (score["tp"], score["fn"], score["fp"], score["tn"]) == (1, 0, 0, 1)
    by = {t["kind"]: t for t in score["trials"]}
    assert by["should"]["loaded"] == ["csv-stats"]
    assert by["should"]["evidence"][0].endswith("skill tool")
    assert by["should_not"]["loaded"] == ["invoice-totals"]
    # OpenCode itself discovered the distractors beside the skill
    system = json.dumps(first["messages"][:2])
    assert "csv-stats" in system and "invoice-totals" in system and "release-notes" in system
