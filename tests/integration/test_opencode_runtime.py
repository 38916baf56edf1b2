"""The real OpenCode CLI (`opencode run --format json`) against the scripted model server
(chat completions, streamed) on loopback, through the whole pipeline: the paper's
segmentation case, isolation of HOME / XDG dirs and the model key, and a transient fault
retried from a fresh workspace.

OpenCode's own title request is switched off (`--title`), so every generation request is the
agent's. Skipped only when the OpenCode CLI is not installed (.ci/install-clis.sh)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeval.adapters.runtimes.opencode import OPENCODE_VERSION, OpenCodeRuntime
from aeval.deployments.cli.main import main
from aeval.isolation.workspace import manifest
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.segmentation_case import GITLAB_TOKEN, MATCH, REAL_HOME, load, segmentation_copy, tree

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(OpenCodeRuntime().binary() is None,
                       reason=f"OpenCode CLI not installed: {OpenCodeRuntime.install_hint} "
                              "(or .ci/install-clis.sh)"),
]

SKILL = ".opencode/skills/segmentation"
LOOP_KEY = "sk-opencode-canary-0042"
PROBE = ("env | sort; echo leaks=$(grep -l canary-0042 /proc/[0-9]*/environ 2>/dev/null "
         "| wc -l)")  # the model key, searched in every process environment it can read


def bash(cmd: str) -> ToolCall:
    return ToolCall(name="bash", arguments={"command": cmd, "description": "run a command"})


TURNS = [
    Turn(text="Reading the skill first.",
         tool_calls=[ToolCall(name="read", arguments={"filePath": f"{SKILL}/SKILL.md"})]),
    Turn(tool_calls=[bash(f"python3 {SKILL}/scripts/run.py segment_train --data fixtures "
                          "--out outputs")]),
    Turn(text="The runner only knows `train`; fixing the documented action name.",
         tool_calls=[ToolCall(name="edit", arguments={
             "filePath": f"{SKILL}/SKILL.md", "oldString": "| `segment_train` |",
             "newString": "| `train` |"})]),
    Turn(tool_calls=[bash(f"python3 {SKILL}/scripts/run.py train --data fixtures "
                          "--out outputs")]),
    Turn(tool_calls=[bash(PROBE)]),
    Turn(text="Done: trained, mIoU=0.8125. I changed SKILL.md (segment_train -> train)."),
]


@pytest.fixture
def skill_copy(tmp_path: Path) -> Path:
    return segmentation_copy(tmp_path)


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch) -> Path:
    """aeval's own HOME for the test: the CLI must never write there."""
    home = tmp_path / "real-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MOCK_API_KEY", LOOP_KEY)  # the key of `--model mock/...`
    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", GITLAB_TOKEN)
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    return home


def run(skill: Path, srv: ScriptedModelServer, out: Path) -> tuple[int, Path]:
    code = main(["run", str(skill), "--runtime", "opencode", "--model", "mock/scripted",
                 "--api-base", srv.base_url_openai, "--out", str(out), "-q", "--no-grader"])
    (run_dir,) = (out / "runs").iterdir()
    return code, run_dir / "segmentation" / "opencode" / "train"


def test_paper_case_opencode_edits_the_skill_and_fails_first_attempt(skill_copy, tmp_path,
                                                                     fake_home):
    before = manifest(skill_copy)
    real = [REAL_HOME / d / "opencode" for d in (".config", ".local/share", ".local/state",
                                                 ".cache")]
    real_before = [tree(p) for p in real]
    with ScriptedModelServer([Script(name="opencode", match=MATCH, turns=TURNS)]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
        requests = [r for r in srv.requests if r.wire == "chat"]
    assert len(requests) == len(TURNS)  # no title request, no retries
    assert all(r.script == "opencode" and r.stream and r.body.get("tools") for r in requests)
    assert requests[0].headers["authorization"] == "Bearer ***"  # the key reached OpenCode
    system = json.dumps(requests[0].body["messages"][0])
    assert "You are the EXECUTOR" in system and SKILL in system  # executor instructions
    assert "<name>segmentation</name>" in system  # OpenCode discovered the skill

    g = load(case / "grading.json")
    assert code == 1 and g["status"] == "fail"
    sc = g["self_correction"]
    (change,) = sc["changes_made"]
    assert change["path"] == "SKILL.md" and change["change"] == "modified"
    assert change["tool"] == "edit_file" and change["attribution"] == "recorded"
    assert "-| `segment_train` |" in change["diff"] and "+| `train` |" in change["diff"]
    (err,) = sc["first_attempt_errors"]
    assert "KeyError: 'segment_train'" in err["excerpt"] and err["exit_code"] == 1
    by = {e["id"]: e for e in g["expectations"]}
    assert by["S1"]["passed"] is False and by["A1"]["passed"] is True
    assert (case / "skill.diff").read_text().count("+| `train` |") == 1
    # the tools really ran in the workspace; .opencode/ (config) is not an output
    assert load(case / "outputs" / "outputs" / "model.json")["images"] == 2
    meta = load(case / "eval_metadata.json")
    assert [o["path"] for o in meta["outputs"]] == ["outputs/model.json"]
    assert meta["runtime"] == "opencode"
    assert meta["runtime_version"] == f"opencode {OPENCODE_VERSION}"
    usage = meta["usage"]
    assert usage["requests"] == len(requests) and usage["cached_input_tokens"] > 0
    assert usage["input_tokens"] == sum(r.usage["input_tokens"] for r in requests)
    assert usage["cached_input_tokens"] == sum(r.usage["cached_input_tokens"] for r in requests)
    events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
    assert events[0]["kind"] == "message" and events[-1]["kind"] == "end"
    assert [e["tool"] for e in events if e["kind"] == "tool_call"] == [
        "read_file", "bash", "edit_file", "bash", "bash"]
    transcript = (case / "transcript.md").read_text()
    assert "tool call `edit_file`" in transcript and "KeyError" in transcript
    assert (case / "attempts" / "1" / "raw.jsonl").is_file()
    # isolation: the original skill, aeval's HOME and the machine's OpenCode dirs untouched
    assert manifest(skill_copy) == before
    assert list(fake_home.iterdir()) == []
    assert [tree(p) for p in real] == real_before


def test_model_key_and_opencode_settings_never_reach_commands_or_artifacts(
        skill_copy, tmp_path, fake_home):
    with ScriptedModelServer([Script(name="opencode", match=MATCH, turns=TURNS)]) as srv:
        _, case = run(skill_copy, srv, tmp_path / "s")
    transcript = (case / "transcript.md").read_text()
    assert "PATH=" in transcript and "SKILL_DIR=" in transcript  # `env | sort` ran
    assert "leaks=0" in transcript  # the key is in no process environment at all
    for name in ("MOCK_API_KEY", "OPENCODE_CONFIG_CONTENT", "OPENCODE_DISABLE", "XDG_",
                 "AEVAL_GITLAB_TOKEN", "SHELL="):
        assert name not in transcript, name
    for p in (tmp_path / "s").rglob("*"):
        if p.is_file():
            text = p.read_text(errors="replace")
            assert LOOP_KEY not in text and GITLAB_TOKEN not in text, p


def test_rate_limit_on_the_first_turn_retries_the_case_from_a_fresh_workspace(
        skill_copy, tmp_path, fake_home):
    # OpenCode retries a 429 five times itself (not configurable in 1.18): six faults make the
    # first attempt fail; the case retry then starts from a fresh workspace.
    turns = [Turn(fault=429, fault_times=6, text=TURNS[0].text,
                  tool_calls=TURNS[0].tool_calls), *TURNS[1:]]
    with ScriptedModelServer([Script(name="opencode", match=MATCH, turns=turns)]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
        faults = [r for r in srv.requests if r.fault]
    assert len(faults) == 6
    meta = load(case / "eval_metadata.json")
    assert [a["outcome"] for a in meta["attempts"]] == ["transient_error", "completed"]
    assert meta["attempts"][0]["error_type"] == "ModelTransientError"
    assert "429" in meta["attempts"][0]["error"]
    first = (case / "attempts" / "1" / "events.jsonl").read_text()
    assert '"transient":true' in first.replace(" ", "") and "KeyError" not in first
    g = load(case / "grading.json")
    assert g["self_correction"]["changes_made"][0]["path"] == "SKILL.md"
    assert g["status"] == "fail" and code == 1  # a skill verdict, never `error`
