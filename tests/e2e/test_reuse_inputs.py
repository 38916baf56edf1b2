"""A sweep reuses a verdict only when nothing that decides it changed: a change inside the
case's files that the workspace gets (a fixture git repository's ``.git``), or another model
server (``--api-base``), runs the case again. Real sweeps (`aeval sweep`), a real git
repository, the scripted model server behind the builtin runtime."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.integration.test_changes import init_repo, sh

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

SKILL_MD = """---
name: {name}
description: {description}
---

# {name}

{body}
"""


def write_skill(mp: Path, name: str, description: str, body: str, case: dict) -> Path:
    d = mp / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD.format(name=name, description=description, body=body))
    (d / "eval.config").write_text(json.dumps({"evals": [case]}))
    return d


def sweep(mp: Path, store: Path, *extra: str) -> tuple[int, dict]:
    before = set((store / "runs").glob("*")) if (store / "runs").exists() else set()
    code = main(["sweep", str(mp), "--epochs", "1", "--out", str(store), "-q", *extra])
    (rd,) = set((store / "runs").glob("*")) - before
    (skill,) = json.loads((rd / "run.json").read_text())["skills"]
    return code, skill["cases"][0]


def test_a_change_inside_a_case_files_git_folder_runs_the_case_again(tmp_path):
    """The case's fixture is a git repository (the skill reports its last commit): the
    workspace gets its ``.git``, so a new commit there is a new input."""
    mp = tmp_path / "mp"
    skill = write_skill(
        mp, "last-commit", "Report the subject of a repository's last commit.",
        "Run `bash scripts/last_commit.sh <repo> > outputs/last.txt`.",
        {"id": "feature", "prompt": "Report the last commit of fixtures/repo.",
         "expected_outcome": "outputs/last.txt names the last commit, a feature.",
         "files": ["fixtures/"],
         "steps": ["mkdir -p outputs && bash $SKILL_DIR/scripts/last_commit.sh fixtures/repo "
                   "> outputs/last.txt"],
         "assertions": [{"type": "file_contains", "path": "outputs/last.txt",
                         "pattern": "^feat: "}]})
    (skill / "scripts").mkdir()
    (skill / "scripts" / "last_commit.sh").write_text(
        "#!/usr/bin/env bash\n# The subject of the last commit of the repository $1.\n"
        "exec git -c safe.directory='*' -C \"$1\" log -1 --format=%s\n")
    (skill / "fixtures").mkdir()
    repo = init_repo(skill / "fixtures" / "repo")
    (repo / "app.py").write_text("print('v1')\n")
    sh(repo, "add", "-A")
    sh(repo, "commit", "-qm", "fix: a typo")
    store = tmp_path / "store"
    code, first = sweep(mp, store)
    assert code == 1 and first["status"] == "fail"

    sh(repo, "commit", "-q", "--allow-empty", "-m", "feat: release")  # only .git changes
    code, second = sweep(mp, store)
    assert second["reused_from"] is None, "a changed case file did not count"
    assert code == 0 and second["status"] == "pass"


def echo_script(name: str, tool: bool) -> Script:
    turns = [Turn(tool_calls=[ToolCall(name="bash", arguments={
        "command": "mkdir -p outputs && bash $SKILL_DIR/scripts/status.sh > outputs/status.txt"
    })])] if tool else []
    return Script(name=name, match="status report", turns=[*turns, Turn(text="Done.")])


def test_another_model_server_runs_the_case_again(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    mp = tmp_path / "mp"
    skill = write_skill(mp, "status-report", "Write outputs/status.txt saying ready.",
                "Run `bash scripts/status.sh > outputs/status.txt`.",
                {"id": "ready", "prompt": "Write the status report with the status-report "
                                          "skill.",
                 "expected_outcome": "outputs/status.txt says ready.",
                 "assertions": [{"type": "file_contains", "path": "outputs/status.txt",
                                 "pattern": "ready"}],
                 "max_turns": 4})
    (skill / "scripts").mkdir()
    (skill / "scripts" / "status.sh").write_text("#!/usr/bin/env bash\necho ready\n")
    store = tmp_path / "store"
    model = ["--runtime", "builtin", "--model", "openai/scripted", "--no-grader"]
    with ScriptedModelServer([echo_script("works", tool=True)]) as good, \
            ScriptedModelServer([echo_script("idle", tool=False)]) as other:
        code, first = sweep(mp, store, *model, "--api-base", good.base_url_openai)
        assert code == 0 and first["status"] == "pass"
        code, second = sweep(mp, store, *model, "--api-base", other.base_url_openai)
        asked = len(other.requests_for("idle"))
    assert second["reused_from"] is None and asked > 0, "the other server was never asked"
    assert code == 1 and second["status"] == "fail"
    shutil.rmtree(store, ignore_errors=True)
