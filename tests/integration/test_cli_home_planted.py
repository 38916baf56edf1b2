"""A case's setup plants symlinks where a CLI runtime's adapter writes its own files in the
attempt's HOME (here Codex's CODEX_HOME and TMPDIR folders and the network bridge script;
Claude Code's launcher and OpenCode's files go through the same `aeval.isolation.tree` writes).
aeval writes them afterwards, unsandboxed: it must replace the planted links, never write through
them to the host."""

from __future__ import annotations

import pytest

from aeval.adapters.runtimes.codex import CodexRuntime
from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, Turn
from tests.segmentation_case import MATCH, TRAIN_CASE, segmentation_copy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(CodexRuntime().binary() is None, reason="Codex CLI not installed"),
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap: {bwrap_problem()}"),
]


def test_links_planted_in_home_by_setup_are_not_written_through(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    victims = tmp_path / "host"
    victims.mkdir()
    bridge = victims / "bridge.conf"
    bridge.write_text("host file\n")
    folder = victims / "folder"
    folder.mkdir()
    plant = (f"mkdir -p $HOME/.aeval && ln -s {folder} $HOME/.codex && "
             f"ln -s {bridge} $HOME/.aeval/bridge.py && ln -s {folder} $HOME/.tmp")
    case = {**TRAIN_CASE, "setup": [plant], "network": False, "max_turns": 2}
    skill = segmentation_copy(tmp_path, case)
    script = Script(name="done", match=MATCH, turns=[Turn(text="Nothing to do.")])
    with ScriptedModelServer([script]) as srv:
        main(["run", str(skill), "--runtime", "codex", "--model", "openai/scripted",
              "--api-base", srv.base_url_openai, "--out", str(tmp_path / "s"), "-q",
              "--no-grader", "--sandbox", "require"])
        reached = srv.requests_for("done")
    assert bridge.read_text() == "host file\n"
    assert list(folder.iterdir()) == []
    assert reached, "Codex never reached the model"  # and the runtime still worked
