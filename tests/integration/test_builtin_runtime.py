"""The builtin agent loop against the scripted model server on loopback: real tool execution
in real workspaces, Δ and first-attempt errors, isolation of keys, transient retries, and a
byte-stable request prefix."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from aeval.isolation.workspace import manifest
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.conftest import EXAMPLES
from tests.segmentation_case import GITLAB_TOKEN, load, segmentation_copy

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SKILL = ".agents/skills/segmentation"
LOOP_KEY = "sk-loop-canary-0042"


def bash(cmd: str) -> ToolCall:
    return ToolCall(name="bash", arguments={"command": cmd})


READ = Turn(text="Reading the skill first.",
            tool_calls=[ToolCall(name="read_file", arguments={"path": f"{SKILL}/SKILL.md"})])
DOCUMENTED = Turn(tool_calls=[bash(
    f"python3 {SKILL}/scripts/run.py segment_train --data fixtures --out outputs")])
RERUN = Turn(tool_calls=[bash(
    f"python3 {SKILL}/scripts/run.py train --data fixtures --out outputs")])

EDITS_SKILL = Script(name="edits-skill", match="Train a segmentation model", turns=[
    READ, DOCUMENTED,
    Turn(text="The runner only knows `train`; fixing the documented action name.",
         tool_calls=[ToolCall(name="edit_file", arguments={
             "path": f"{SKILL}/SKILL.md", "old_text": "| `segment_train` |",
             "new_text": "| `train` |"})]),
    RERUN,
    Turn(text="Done: trained, mIoU=0.8125. I changed SKILL.md (segment_train -> train)."),
])
PATCHES_RUNNER = Script(name="patches-runner", match="Train a segmentation model", turns=[
    READ, DOCUMENTED,
    Turn(tool_calls=[ToolCall(name="write_file", arguments={
        "path": "runner.sh",
        "content": f"python3 {SKILL}/scripts/run.py train --data fixtures --out outputs\n"})]),
    Turn(tool_calls=[bash("bash runner.sh"), bash("env | sort")]),
    Turn(text="Done: trained with my own runner script. mIoU=0.8125."),
])


@pytest.fixture
def skill_copy(tmp_path: Path) -> Path:
    return segmentation_copy(tmp_path)


@pytest.fixture
def healthy_copy(tmp_path: Path) -> Path:
    """The segmentation skill with SKILL.md naming the runner's own actions: no skill defect,
    so what ends the case is the environment alone."""
    return segmentation_copy(tmp_path, healthy=True)


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", LOOP_KEY)
    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", GITLAB_TOKEN)
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")


def run(skill: Path, srv: ScriptedModelServer, out: Path, *extra: str) -> tuple[int, Path]:
    code = main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                 srv.base_url_openai, "--out", str(out), "-q", "--no-grader", *extra])
    (run_dir,) = (out / "runs").iterdir()
    return code, run_dir / "segmentation" / "builtin" / "train"


def test_variant1_skill_edit_is_in_delta_and_fails_first_attempt(skill_copy, tmp_path, keys):
    before = manifest(skill_copy)
    with ScriptedModelServer([EDITS_SKILL]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
    assert code == 1
    g = load(case / "grading.json")
    assert g["status"] == "fail"
    sc = g["self_correction"]
    assert sc["was_needed"] is True
    (change,) = sc["changes_made"]
    assert change["path"] == "SKILL.md" and change["change"] == "modified"
    assert change["tool"] == "edit_file" and change["attribution"] == "recorded"
    assert "-| `segment_train` |" in change["diff"] and "+| `train` |" in change["diff"]
    (err,) = sc["first_attempt_errors"]
    assert "KeyError: 'segment_train'" in err["excerpt"] and err["exit_code"] == 1
    by = {e["id"]: e for e in g["expectations"]}
    assert by["S1"]["passed"] is False and by["S1"]["terminal_passed"] is True
    assert by["A1"]["passed"] is True  # the checkpoint exists: terminally the run "worked"
    assert (case / "skill.diff").read_text().count("+| `train` |") == 1
    # the real tools ran in a real workspace
    assert json.loads((case / "outputs" / "outputs" / "model.json").read_text())["images"] == 2
    assert manifest(skill_copy) == before  # the original was never written
    # the executor's edit is an LV1 the run validated: after it nothing failed and the
    # final state met every assertion (commands_succeeded judges the time before the edit)
    fixes = load(case.parent / "fix_suggestions.json")["suggestions"]
    (lv1,) = [f for f in fixes if f["source"] != "static"]  # S0's are proven with no model
    assert lv1["source"] == "delta" and lv1["validated"] is True


def test_variant2_runner_patch_outside_skill_leaves_delta_empty(skill_copy, tmp_path, keys):
    with ScriptedModelServer([PATCHES_RUNNER]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
    g = load(case / "grading.json")
    sc = g["self_correction"]
    assert sc["changes_made"] == [] and sc["was_needed"] is False
    (err,) = sc["first_attempt_errors"]
    assert "segment_train" in err["command"] and "KeyError" in err["excerpt"]
    by = {e["id"]: e for e in g["expectations"]}
    assert by["S1"]["passed"] is True and by["A1"]["passed"] is True
    # Without a grader, the author's commands_succeeded check is what catches the workaround.
    assert by["A3"]["passed"] is False and "KeyError" in by["A3"]["evidence"]
    assert code == 1 and g["status"] == "fail"


def test_loop_key_and_undeclared_tokens_never_reach_tools_or_artifacts(skill_copy, tmp_path,
                                                                         keys):
    with ScriptedModelServer([PATCHES_RUNNER]) as srv:
        _, case = run(skill_copy, srv, tmp_path / "s")
        # the loop itself authenticated (the server records the header masked)
        assert srv.requests[0].headers["authorization"].startswith("Bearer ")
    transcript = (case / "transcript.md").read_text()
    assert "PATH=" in transcript and "HOME=" in transcript  # the `env | sort` call ran
    for p in (tmp_path / "s").rglob("*"):
        if p.is_file():
            text = p.read_text(errors="replace")
            assert LOOP_KEY not in text and GITLAB_TOKEN not in text, p
    assert "OPENAI_API_KEY" not in transcript and "AEVAL_GITLAB_TOKEN" not in transcript


def test_usage_wall_time_events_and_transcript_are_recorded(skill_copy, tmp_path, keys):
    with ScriptedModelServer([EDITS_SKILL]) as srv:
        _, case = run(skill_copy, srv, tmp_path / "s")
        n_requests = len(srv.requests)
    meta = load(case / "eval_metadata.json")
    assert meta["runtime"] == "builtin" and meta["model"] == "openai/scripted"
    assert meta["wall_s"] > 0 and meta["usage"]["requests"] == n_requests == 5
    assert meta["usage"]["output_tokens"] > 0
    # the scripted server simulates prompt caching: later turns read most of the prompt
    assert meta["usage"]["cached_input_tokens"] > meta["usage"]["input_tokens"]
    kinds = [json.loads(line)["kind"] for line in (case / "events.jsonl").read_text().split("\n")
             if line]
    assert kinds.count("tool_call") == kinds.count("tool_result") == 4
    assert kinds[0] == "message" and kinds[-1] == "end"
    transcript = (case / "transcript.md").read_text()
    assert "tool call `edit_file`" in transcript and "KeyError" in transcript
    assert (case / "attempts" / "1" / "raw.jsonl").is_file()


@pytest.mark.parametrize("fault", [429, 500])
def test_a_transient_fault_is_retried_per_call_and_the_attempt_goes_on(skill_copy, tmp_path,
                                                                       keys, fault):
    script = Script(name="flaky", match="Train a segmentation model", turns=[
        READ, Turn(fault=fault, fault_times=1, tool_calls=DOCUMENTED.tool_calls),
        *EDITS_SKILL.turns[2:]])
    with ScriptedModelServer([script]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
        assert [r.fault for r in srv.requests].count(True) == 1
    meta = load(case / "eval_metadata.json")
    assert [a["outcome"] for a in meta["attempts"]] == ["completed"]
    g = load(case / "grading.json")
    assert g["self_correction"]["changes_made"][0]["path"] == "SKILL.md"
    assert g["status"] == "fail" and code == 1  # a skill verdict, never `error`


def test_faults_beyond_the_per_call_budget_retry_the_case_from_a_fresh_workspace(
        skill_copy, tmp_path, keys, monkeypatch):
    monkeypatch.setenv("AEVAL_MODEL_RETRIES", "1")
    script = Script(name="flaky", match="Train a segmentation model", turns=[
        READ, Turn(fault=500, fault_times=2, tool_calls=DOCUMENTED.tool_calls),
        *EDITS_SKILL.turns[2:]])
    with ScriptedModelServer([script]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
        assert [r.fault for r in srv.requests].count(True) == 2
    meta = load(case / "eval_metadata.json")
    assert [a["outcome"] for a in meta["attempts"]] == ["transient_error", "completed"]
    assert "500" in meta["attempts"][0]["error"]
    # the second attempt started from scratch: attempt 1 died on the model call before it ran
    # the documented command; the graded attempt holds the whole conversation again
    assert "KeyError" not in (case / "attempts" / "1" / "events.jsonl").read_text()
    g = load(case / "grading.json")
    assert g["self_correction"]["changes_made"][0]["path"] == "SKILL.md"
    assert g["status"] == "fail" and code == 1


def test_persistent_transient_errors_end_as_error_not_fail(healthy_copy, tmp_path, keys):
    script = Script(name="down", match="Train a segmentation model",
                    turns=[Turn(fault=503, fault_times=99, text="never")])
    with ScriptedModelServer([script]) as srv:
        code, case = run(healthy_copy, srv, tmp_path / "s")
    assert code == 3
    meta = load(case / "eval_metadata.json")
    assert [a["outcome"] for a in meta["attempts"]] == ["transient_error"] * 3
    assert load(case / "grading.json")["status"] == "error"


def _prompt_text(body: dict) -> str:
    """The prompt as the provider reads it, in its processing order: tools, then the
    conversation. Cache markers are not prompt text."""
    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if k != "cache_control"}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o
    tools = json.dumps(strip(body.get("tools", [])), sort_keys=False)
    convo = json.dumps(strip([body.get("system", "")] + body["messages"]), sort_keys=False)
    return tools + convo


def test_request_prefix_is_byte_stable(skill_copy, tmp_path, keys):
    with ScriptedModelServer([EDITS_SKILL]) as srv:
        run(skill_copy, srv, tmp_path / "s")
        prompts = [_prompt_text(r.body) for r in srv.requests]
    assert len(prompts) == 5
    for prev, cur in itertools.pairwise(prompts):
        common = next((i for i, (a, b) in enumerate(zip(prev, cur, strict=False)) if a != b),
                      min(len(prev), len(cur)))
        assert common / len(prev) >= 0.95, (common, len(prev))


def test_whole_marketplace_with_a_model_runs_real_tools(tmp_path, keys):
    explore = Script(name="explore", match=".", turns=[
        Turn(tool_calls=[bash("ls .agents/skills && head -3 .agents/skills/*/SKILL.md")]),
        Turn(text="I looked at the skill; nothing else to do.")])
    mp = tmp_path / "mp"
    shutil.copytree(EXAMPLES, mp)
    with ScriptedModelServer([explore]) as srv:
        code = main(["run", str(mp), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(tmp_path / "s"), "-q", "--no-grader"])
        assert len(srv.requests) == 2 * 7  # one case each: 2 turns
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    for case in rd.glob("*/builtin/*"):
        if not case.is_dir():
            continue
        events = (case / "events.jsonl").read_text()
        assert '"tool": "bash"' in events.replace('"tool":"bash"', '"tool": "bash"')
        assert "name: " in (case / "transcript.md").read_text()  # real SKILL.md head output
        assert load(case / "eval_metadata.json")["usage"]["requests"] == 2
    assert code == 1  # the agent did nothing useful: the file checks fail


def test_anthropic_models_get_cache_breakpoints_and_normalized_usage(skill_copy, tmp_path,
                                                                      monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    with ScriptedModelServer([EDITS_SKILL]) as srv:
        code = main(["run", str(skill_copy), "--model", "anthropic/claude-test", "--api-base",
                     srv.url, "--out", str(tmp_path / "s"), "-q", "--no-grader"])
        reqs = [r for r in srv.requests if r.path.startswith("/v1/messages")]
    assert code == 1 and len(reqs) == 5
    for r in reqs:
        body = r.body
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        last = body["messages"][-1]["content"]
        assert any(isinstance(b, dict) and b.get("cache_control") for b in last)
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    case = rd / "segmentation" / "builtin" / "train"
    usage = json.loads((case / "eval_metadata.json").read_text())["usage"]
    served = [r.usage for r in reqs]  # what the server reported, in aeval's convention
    assert usage["input_tokens"] == sum(u["input_tokens"] for u in served)
    assert usage["cached_input_tokens"] == sum(u["cached_input_tokens"] for u in served) > 0
    assert json.loads((case / "grading.json").read_text())["self_correction"][
        "changes_made"][0]["path"] == "SKILL.md"


def test_faults_on_every_turn_leave_the_verdict_of_a_fault_free_run(skill_copy, tmp_path,
                                                                    keys):
    """Each model call of the run fails once (429, 500, 503, a dropped connection, in turn):
    per-call retries absorb them, and the case ends with exactly the fault-free verdict."""
    faults = itertools.cycle([429, 500, 503, "disconnect"])
    flaky = Script(name="flaky", match="Train a segmentation model", turns=[
        t.model_copy(update={"fault": next(faults), "fault_times": 1})
        for t in EDITS_SKILL.turns])
    with ScriptedModelServer([EDITS_SKILL]) as srv:
        _, clean = run(skill_copy, srv, tmp_path / "clean")
    with ScriptedModelServer([flaky]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "flaky")
        assert sum(r.fault for r in srv.requests) == len(EDITS_SKILL.turns)
    verdicts = [[(e["id"], e["status"]) for e in load(d / "grading.json")["expectations"]]
                for d in (clean, case)]
    assert verdicts[0] == verdicts[1]
    assert load(case / "grading.json")["status"] == "fail" and code == 1
    assert [a["outcome"] for a in load(case / "eval_metadata.json")["attempts"]] == [
        "completed"]


def test_a_missing_model_key_is_one_attempt_and_one_line(healthy_copy, tmp_path, monkeypatch):
    """Retrying cannot bring a key: no per-call retry, no case retry, and the reason says it."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    with ScriptedModelServer([EDITS_SKILL]) as srv:
        code, case = run(healthy_copy, srv, tmp_path / "s")
        assert srv.requests == []  # nothing was sent without a key
    meta = load(case / "eval_metadata.json")
    (attempt,) = meta["attempts"]
    assert attempt["outcome"] == "error" and attempt["error_type"] == "ModelPermanentError"
    g = load(case / "grading.json")
    assert g["status"] == "error" and "\n" not in g["status_reason"]
    assert "key" in g["status_reason"].lower() and code == 3
