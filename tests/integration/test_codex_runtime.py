"""The real Codex CLI (`codex exec --json`) against the scripted model server (Responses API)
on loopback, through the whole pipeline: the paper's segmentation case, isolation of HOME,
CODEX_HOME and the model key, and a transient fault retried from a fresh workspace.

Codex may interleave function calls with their outputs, so every scripted turn makes one
tool call. Skipped only when the Codex CLI is not installed (.ci/install-clis.sh)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeval.adapters.runtimes.codex import CODEX_VERSION, CodexRuntime
from aeval.deployments.cli.main import main
from aeval.isolation.workspace import manifest
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.segmentation_case import (
    GITLAB_TOKEN,
    MATCH,
    REAL_HOME,
    ROW,
    load,
    segmentation_copy,
    tree,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(CodexRuntime().binary() is None,
                       reason=f"Codex CLI not installed: {CodexRuntime.install_hint} "
                              "(or .ci/install-clis.sh)"),
]

SKILL = ".agents/skills/segmentation"
LOOP_KEY = "sk-codex-canary-0042"


def sh(cmd: str) -> ToolCall:
    """Codex's shell tool, as it offers it to a model it has no metadata for."""
    return ToolCall(name="exec_command", arguments={"cmd": cmd})


PROBE = ("env | sort; echo leaks=$(grep -l canary-0042 /proc/[0-9]*/environ 2>/dev/null "
         "| wc -l)")  # the model key, searched in every process environment it can read
PATCH = (f"apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: {SKILL}/SKILL.md\n@@\n"
         f"-{ROW}\n+{ROW.replace('segment_train', 'train')}\n*** End Patch\nPATCH")
TURNS = [
    Turn(text="Reading the skill first.", tool_calls=[sh(f"cat {SKILL}/SKILL.md")]),
    Turn(tool_calls=[sh(f"python3 {SKILL}/scripts/run.py segment_train --data fixtures "
                        "--out outputs")]),
    Turn(text="The runner only knows `train`; fixing the documented action name.",
         tool_calls=[sh(PATCH)]),  # Codex turns an apply_patch command into a file_change
    Turn(tool_calls=[sh(f"python3 {SKILL}/scripts/run.py train --data fixtures --out outputs")]),
    Turn(tool_calls=[sh(PROBE)]),
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
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", LOOP_KEY)
    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", GITLAB_TOKEN)
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    return home


def run(skill: Path, srv: ScriptedModelServer, out: Path) -> tuple[int, Path]:
    code = main(["run", str(skill), "--runtime", "codex", "--model", "openai/scripted",
                 "--api-base", srv.base_url_openai, "--out", str(out), "-q", "--no-grader"])
    (run_dir,) = (out / "runs").iterdir()
    return code, run_dir / "segmentation" / "codex" / "train"


def test_paper_case_codex_edits_the_skill_and_fails_first_attempt(skill_copy, tmp_path,
                                                                   fake_home):
    before = manifest(skill_copy)
    real_codex = REAL_HOME / ".codex"
    real_before = tree(real_codex)
    with ScriptedModelServer([Script(name="codex", match=MATCH, turns=TURNS)]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
        requests = srv.requests_for("codex")
    assert len(requests) == len(TURNS) and all(r.path == "/v1/responses" for r in requests)
    assert requests[0].headers["authorization"] == "Bearer ***"  # the key reached Codex
    developer = json.dumps(requests[0].body["input"])
    assert "You are the EXECUTOR" in developer and SKILL in developer  # executor prompt
    assert "segmentation" in developer  # Codex discovered the skill in .agents/skills

    g = load(case / "grading.json")
    assert code == 1 and g["status"] == "fail"
    sc = g["self_correction"]
    (change,) = sc["changes_made"]
    assert change["path"] == "SKILL.md" and change["change"] == "modified"
    assert change["tool"] == "edit_file" and change["attribution"] == "recorded"
    assert f"-{ROW}" in change["diff"] and "+| `train` |" in change["diff"]
    (err,) = sc["first_attempt_errors"]
    assert "KeyError: 'segment_train'" in err["excerpt"] and err["exit_code"] == 1
    assert "segment_train" in err["command"]
    by = {e["id"]: e for e in g["expectations"]}
    assert by["S1"]["passed"] is False and by["A1"]["passed"] is True
    assert (case / "skill.diff").read_text().count("+| `train` |") == 1
    # the tools really ran in the workspace
    assert load(case / "outputs" / "outputs" / "model.json")["images"] == 2
    meta = load(case / "eval_metadata.json")
    assert [o["path"] for o in meta["outputs"]] == ["outputs/model.json"]
    assert meta["runtime"] == "codex" and meta["runtime_version"] == f"codex-cli {CODEX_VERSION}"
    assert meta["usage"]["cached_input_tokens"] > 0 and meta["usage"]["output_tokens"] > 0
    assert meta["usage"]["input_tokens"] + meta["usage"]["cached_input_tokens"] == sum(
        r.usage["input_tokens"] + r.usage["cached_input_tokens"] for r in requests)
    assert meta["wall_s"] > 0
    events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
    assert events[0]["kind"] == "message" and events[-1]["kind"] == "end"
    assert [e["tool"] for e in events if e["kind"] == "tool_call"] == [
        "bash", "bash", "edit_file", "bash", "bash"]
    transcript = (case / "transcript.md").read_text()
    assert "tool call `edit_file`" in transcript and "KeyError" in transcript
    assert (case / "attempts" / "1" / "raw.jsonl").is_file()
    # isolation: the original skill, aeval's HOME and the machine's ~/.codex are untouched
    assert manifest(skill_copy) == before
    assert list(fake_home.iterdir()) == []
    assert tree(real_codex) == real_before


def test_model_key_and_undeclared_tokens_never_reach_commands_or_artifacts(
        skill_copy, tmp_path, fake_home):
    with ScriptedModelServer([Script(name="codex", match=MATCH, turns=TURNS)]) as srv:
        _, case = run(skill_copy, srv, tmp_path / "s")
    transcript = (case / "transcript.md").read_text()
    assert "PATH=" in transcript and "SKILL_DIR=" in transcript  # `env | sort` ran
    assert "leaks=0" in transcript  # not even /proc/<codex>/environ: the sandbox hides it
    for name in ("OPENAI_API_KEY", "AEVAL_CODEX_API_KEY", "CODEX_HOME", "AEVAL_GITLAB_TOKEN"):
        assert f"{name}=" not in transcript, name
    for p in (tmp_path / "s").rglob("*"):
        if p.is_file():
            text = p.read_text(errors="replace")
            assert LOOP_KEY not in text and GITLAB_TOKEN not in text, p


def test_rate_limit_on_the_first_turn_retries_the_case_from_a_fresh_workspace(
        skill_copy, tmp_path, fake_home):
    turns = [Turn(fault=429, fault_times=1, text=TURNS[0].text,
                  tool_calls=TURNS[0].tool_calls), *TURNS[1:]]
    with ScriptedModelServer([Script(name="codex", match=MATCH, turns=turns)]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
        faults = [r for r in srv.requests if r.fault]
    assert len(faults) == 1  # Codex's own retries are off: aeval's case retry is the retry
    meta = load(case / "eval_metadata.json")
    assert [a["outcome"] for a in meta["attempts"]] == ["transient_error", "completed"]
    assert meta["attempts"][0]["error_type"] == "ModelTransientError"
    assert "429" in meta["attempts"][0]["error"]
    first = (case / "attempts" / "1" / "events.jsonl").read_text()
    assert '"transient":true' in first.replace(" ", "") and "KeyError" not in first
    g = load(case / "grading.json")
    assert g["self_correction"]["changes_made"][0]["path"] == "SKILL.md"
    assert g["status"] == "fail" and code == 1  # a skill verdict, never `error`


def test_calls_codex_refused_are_events_and_never_the_skills_failure(skill_copy, tmp_path,
                                                                     fake_home):
    """The exec stream shows neither a call of a tool Codex has not got nor a command its
    approval policy rejects: grading used to say "no command was run". Both are events now
    (from Codex's session record), in the transcript as refused, and neither counts against
    the skill, though the first one ran the documented command's words. Every model
    response is a request."""
    documented = (f"python3 {SKILL}/scripts/run.py segment_train --data fixtures "
                  "--out outputs")
    turns = [
        Turn(tool_calls=[ToolCall(name="bash", arguments={"command": documented})]),
        Turn(tool_calls=[ToolCall(name="exec_command", arguments={
            "cmd": "touch /etc/aeval-escalated", "sandbox_permissions": "require_escalated",
            "justification": "write outside"})]),
        Turn(tool_calls=[sh("echo ran")]),
        Turn(text="Done."),
    ]
    with ScriptedModelServer([Script(name="codex", match=MATCH, turns=turns)]) as srv:
        _, case = run(skill_copy, srv, tmp_path / "s")
        requests = srv.requests_for("codex")
    events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["kind"] == "tool_call"]
    results = {e["call_id"]: e for e in events if e["kind"] == "tool_result"}
    assert [c["input"]["command"] for c in calls] == [
        documented, "touch /etc/aeval-escalated", "echo ran"]
    assert [(results[c["call_id"]]["ok"], results[c["call_id"]].get("refused"))
            for c in calls] == [(False, "unknown_tool"), (False, "policy"), (True, None)]
    assert results[calls[0]["call_id"]]["output"] == "unsupported call: bash"
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert calls[0]["seq"] < results[calls[0]["call_id"]]["seq"] < calls[1]["seq"]
    transcript = (case / "transcript.md").read_text()
    assert transcript.count("REFUSED") == 2
    g = load(case / "grading.json")
    by = {e["id"]: e for e in g["expectations"]}
    assert by["S2"]["passed"] is True  # the documented command never ran
    assert "refused by the runtime" in by["A3"]["evidence"]  # commands_succeeded says why
    errors = g["self_correction"]["first_attempt_errors"]
    assert len(errors) == 2 and all(e["agent_error"] and not e["documented"] for e in errors)
    usage = load(case / "eval_metadata.json")["usage"]
    assert usage["requests"] == len(requests) == len(turns)
