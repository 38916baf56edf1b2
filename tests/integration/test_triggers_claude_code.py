"""`aeval triggers` with the real Claude Code CLI (bundled with claude-agent-sdk) against the
scripted model server: the skill and its distractors sit in `.claude/skills/`, and Claude
Code's own `Skill` tool is the invocation event aeval counts. Skipped without the SDK."""

from __future__ import annotations

import importlib.util
import json

import pytest

from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(importlib.util.find_spec("claude_agent_sdk") is None,
                       reason="claude-agent-sdk is not installed: "
                              "pip install 'aeval-skills[claude]'"),
]

SHOULD = "Profile the columns of cities.csv and give me per-column statistics as JSON."
SHOULD_NOT = "Turn these merged changes into grouped release notes for version 3.1."


def test_claude_code_skill_tool_counts_as_loading(marketplace, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "placeholder")
    skill = marketplace / "skills" / "csv-stats"
    config = json.loads((skill / "eval.config").read_text())
    config["triggers"] = {"should": [SHOULD], "should_not": [SHOULD_NOT]}
    (skill / "eval.config").write_text(json.dumps(config))
    scripts = [
        Script(name="should", match=r"(?s)Agent skills may be installed.*Profile the columns",
               turns=[Turn(text="The csv-stats skill fits.", tool_calls=[
                   ToolCall(name="Skill", arguments={"skill": "csv-stats"})])],
               final="Using csv-stats."),
        Script(name="not", match=r"(?s)Agent skills may be installed.*grouped release notes",
               turns=[Turn(tool_calls=[ToolCall(name="Read", arguments={
                   "file_path": ".claude/skills/release-notes/SKILL.md"})])],
               final="Using release-notes."),
    ]
    out = tmp_path / "store"
    with ScriptedModelServer(scripts) as srv:
        code = main(["triggers", str(skill), "--runtime", "claude-code", "--model",
                     "claude-sonnet-4-5", "--api-base", srv.url, "--out", str(out), "-q"])
        assert srv.requests_for("should") and srv.requests_for("not")
    assert code == 0
    (run_dir,) = (out / "triggers").iterdir()
    (score,) = json.loads((run_dir / "triggers.json").read_text())["scores"]
    assert (score["tp"], score["fn"], score["fp"], score["tn"]) == (1, 0, 0, 1)
    by = {t["kind"]: t for t in score["trials"]}
    assert by["should"]["loaded"] == ["csv-stats"]
    assert by["should"]["evidence"][0].endswith("Skill tool")
    assert by["should_not"]["loaded"] == ["release-notes"]
