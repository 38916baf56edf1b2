"""`aeval triggers` and resource coverage with the real Codex CLI against the scripted model
server: Codex has no skill tool, so a skill is loaded when its shell reads the SKILL.md
(`cat`, `sed -n`), and a script run after a `cd` into the skill is executed. Skipped when the
Codex CLI is not installed."""

from __future__ import annotations

import json
import re

import pytest

from aeval.adapters.runtimes.codex import CodexRuntime
from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(CodexRuntime().binary() is None,
                       reason=f"Codex CLI not installed: {CodexRuntime.install_hint} "
                              "(or .ci/install-clis.sh)"),
]

SHOULD = "Profile the columns of cities.csv and give me per-column statistics as JSON."
SHOULD_NOT = "Sum the invoice amounts per customer in invoices.csv."


def sh(cmd: str) -> Turn:
    """Codex's shell tool, as it offers it to a model it has no metadata for."""
    return Turn(text="Checking the skill.", tool_calls=[ToolCall(name="exec_command",
                                                                 arguments={"cmd": cmd})])


@pytest.fixture
def env(tmp_path, monkeypatch):
    (tmp_path / "real-home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "real-home"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")


def test_codex_reading_skill_md_in_its_shell_is_loading(env, marketplace, tmp_path):
    skill = marketplace / "skills" / "csv-stats"
    config = json.loads((skill / "eval.config").read_text())
    config["triggers"] = {"should": [SHOULD], "should_not": [SHOULD_NOT]}
    (skill / "eval.config").write_text(json.dumps(config))
    scripts = [Script(name="should", match="Profile the columns of cities.csv",
                      turns=[sh("cat .agents/skills/csv-stats/SKILL.md")], final="csv-stats."),
               Script(name="not", match="Sum the invoice amounts per customer",
                      turns=[sh("sed -n 1,40p .agents/skills/invoice-totals/SKILL.md")],
                      final="invoice-totals.")]
    out = tmp_path / "store"
    with ScriptedModelServer(scripts) as srv:
        code = main(["triggers", str(skill), "--runtime", "codex", "--model",
                     "openai/scripted", "--api-base", srv.base_url_openai, "--out", str(out),
                     "-q"])
    assert code == 0
    (run_dir,) = (out / "triggers").iterdir()
    (score,) = json.loads((run_dir / "triggers.json").read_text())["scores"]
    assert (score["runtime"], score["tp"], score["fn"], score["fp"], score["tn"]) == (
        "codex", 1, 0, 0, 1)
    by = {t["kind"]: t for t in score["trials"]}
    assert by["should"]["loaded"] == ["csv-stats"]
    assert by["should"]["evidence"][0].endswith("cat .agents/skills/csv-stats/SKILL.md")
    assert by["should_not"]["loaded"] == ["invoice-totals"]


def test_codex_running_a_skill_script_is_executed_in_coverage(env, marketplace, tmp_path):
    skill = marketplace / "skills" / "csv-stats"
    config = json.loads((skill / "eval.config").read_text())
    (case,) = [c for c in config["evals"] if c["id"] == "stats"] or config["evals"][:1]
    prompt = case["prompt"]
    scripts = [Script(name="agent", match=re.escape(prompt), turns=[
        sh("cat .agents/skills/csv-stats/SKILL.md"),
        sh("cd .agents/skills/csv-stats && python3 scripts/stats.py --help")],
        final="Done.")]
    out = tmp_path / "store"
    with ScriptedModelServer(scripts) as srv:
        main(["run", str(skill), "--runtime", "codex", "--model", "openai/scripted",
              "--api-base", srv.base_url_openai, "--out", str(out), "-q", "--no-grader"])
    (run_dir,) = (out / "runs").iterdir()
    meta = json.loads((run_dir / "csv-stats" / "codex" / case["id"] / "eval_metadata.json")
                      .read_text())
    res = meta["attempts"][-1]["resources"]
    assert "scripts/stats.py" in res["executed"], res
    assert "SKILL.md" in res["read"]
