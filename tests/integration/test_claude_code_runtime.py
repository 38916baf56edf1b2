"""The `claude-code` runtime: the real Claude Code CLI (bundled with claude-agent-sdk) against
the scripted model server on loopback, through the whole pipeline. The paper's case: the
documented action name fails, the agent edits SKILL.md and succeeds; Δ must catch the edit.
Also: isolation (keys, the parent environment, the real ~/.claude), transient retries,
timeouts, and that re-parsing raw.jsonl gives back events.jsonl."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from aeval.isolation.workspace import manifest
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.segmentation_case import GITLAB_TOKEN, PROMPT, TRAIN_CASE, load, segmentation_copy

pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(importlib.util.find_spec("claude_agent_sdk") is None,
                       reason="claude-agent-sdk is not installed: "
                              "pip install 'aeval-skills[claude]'"),
]

SKILL = ".claude/skills/segmentation"
# The conversation only: aeval's executor rules (appended to the system prompt), then the case
# prompt. Any side request Claude Code may send gets the server's default answer.
MATCH = r"(?s)EXECUTOR of an aeval test run.*Train a segmentation model on fixtures/"
API_KEY = "sk-ant-canary-api-key-0042"
PARENT_CANARY = "parent-env-canary-7731"


def bash(cmd: str) -> ToolCall:
    return ToolCall(name="Bash", arguments={"command": cmd, "description": "run"})


READ = Turn(text="Reading the skill first.",
            tool_calls=[ToolCall(name="Read", arguments={"file_path": f"{SKILL}/SKILL.md"})])
DOCUMENTED = Turn(tool_calls=[bash(
    f"python3 {SKILL}/scripts/run.py segment_train --data fixtures --out outputs")])
EDIT = Turn(text="The runner only knows `train`; fixing the documented action name.",
            tool_calls=[ToolCall(name="Edit", arguments={
                "file_path": f"{SKILL}/SKILL.md", "old_string": "| `segment_train` |",
                "new_string": "| `train` |"})])
RERUN = Turn(tool_calls=[bash(
    f"python3 {SKILL}/scripts/run.py train --data fixtures --out outputs")])
DONE = Turn(text="Done: trained, mIoU=0.8125. I changed SKILL.md (segment_train -> train).")
EDITS_SKILL = Script(name="edits-skill", match=MATCH, turns=[READ, DOCUMENTED, EDIT, RERUN, DONE])


@pytest.fixture
def skill_copy(tmp_path: Path) -> Path:
    return segmentation_copy(tmp_path)


@pytest.fixture
def keys(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", GITLAB_TOKEN)
    monkeypatch.setenv("AEVAL_TEST_PARENT_CANARY", PARENT_CANARY)
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")


def run(skill: Path, srv: ScriptedModelServer, out: Path) -> tuple[int, Path]:
    code = main(["run", str(skill), "--runtime", "claude-code", "--model", "claude-sonnet-4-5",
                 "--api-base", srv.url, "--out", str(out), "--no-grader", "-q"])
    (run_dir,) = (out / "runs").iterdir()
    return code, run_dir / "segmentation" / "claude-code" / "train"


def _processes_with(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline)
    return found


def user_claude_state() -> dict[str, int]:
    """mtime of everything under the real ~/.claude, and of ~/.claude.json."""
    home = Path.home()
    paths = [home / ".claude.json", home / ".claude", *(home / ".claude").rglob("*")]
    return {str(p): p.stat().st_mtime_ns for p in paths if p.exists()}


def test_skill_edit_is_in_delta_and_the_run_is_recorded(skill_copy, tmp_path, keys):
    before, claude_before = manifest(skill_copy), user_claude_state()
    with ScriptedModelServer([EDITS_SKILL]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
        convo = srv.requests_for("edits-skill")
    assert [r.turn for r in convo] == [0, 1, 2, 3, 4]
    assert all(r.headers.get("x-api-key") == "***" for r in convo)  # it authenticated
    # the tool calls really ran in the workspace
    model = json.loads((case / "outputs" / "outputs" / "model.json").read_text())
    assert model["images"] == 2
    for name in ("events.jsonl", "transcript.md", "grading.json", "skill.diff"):
        assert (case / name).is_file(), name
    g = load(case / "grading.json")
    assert code == 1 and g["status"] == "fail"
    sc = g["self_correction"]
    (change,) = sc["changes_made"]
    assert change["path"] == "SKILL.md" and change["change"] == "modified"
    assert change["tool"] == "edit_file" and change["attribution"] == "recorded"
    assert "+| `train` |" in change["diff"]
    (err,) = sc["first_attempt_errors"]
    assert err["tool"] == "bash" and err["exit_code"] == 1 and "KeyError" in err["excerpt"]
    # events: normalized names, in order
    events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
    calls = [e["tool"] for e in events if e["kind"] == "tool_call"]
    assert calls == ["read_file", "bash", "edit_file", "bash"]
    assert events[0] == {**events[0], "kind": "message", "role": "user", "text": PROMPT}
    assert [e["kind"] for e in events[-2:]] == ["usage", "end"]
    assert events[-1]["status"] == "completed" and "mIoU=0.8125" in events[-1]["final_text"]
    # usage: totals, with the simulated cache read by the later turns
    meta = load(case / "eval_metadata.json")
    assert meta["runtime"] == "claude-code" and meta["runtime_version"].startswith(
        "claude-agent-sdk ")
    usage = meta["usage"]
    assert usage["requests"] == 5 and usage["output_tokens"] > 0
    assert usage["cached_input_tokens"] > 0
    assert usage["input_tokens"] == sum(r.usage["input_tokens"] for r in convo)
    assert usage["cached_input_tokens"] == sum(r.usage["cached_input_tokens"] for r in convo)
    # re-parsing the raw stream gives back the events the live run emitted
    from aeval.adapters.runtimes._claude_code_parse import parse_records, read_raw

    raw = read_raw(case / "attempts" / "1" / "raw.jsonl")
    replayed = parse_records(raw).events
    assert replayed == [{k: v for k, v in e.items() if k not in ("seq", "t")} for e in events]
    # the original skill and the user's own Claude Code state are untouched
    assert manifest(skill_copy) == before
    assert user_claude_state() == claude_before


def test_api_key_and_parent_environment_never_reach_tools(skill_copy, tmp_path, keys):
    probe = Script(name="probe", match=MATCH, turns=[
        Turn(tool_calls=[bash("env | sort; echo FD3:; cat <&3 || true; "
                              "echo PARENT:; tr '\\0' '\\n' < /proc/$PPID/environ | sort")]),
        Turn(tool_calls=[ToolCall(name="Write", arguments={
            "file_path": str(tmp_path / "outside.txt"), "content": "escaped"})]),
        Turn(text="Looked around."),
    ])
    with ScriptedModelServer([probe]) as srv:
        _, case = run(skill_copy, srv, tmp_path / "s")
    events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
    env_out, write = [e for e in events if e["kind"] == "tool_result"]
    assert "PATH=" in env_out["output"] and "SKILL_DIR=" in env_out["output"]
    assert "\nHOME=" in env_out["output"] and f"\nHOME={Path.home()}\n" not in env_out["output"]
    for canary in ("ANTHROPIC_API_KEY", API_KEY, GITLAB_TOKEN, PARENT_CANARY):
        assert canary not in env_out["output"], canary
    assert "CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR=" not in env_out["output"].split("PARENT:")[0]
    # a write outside the workspace is refused (nobody is there to approve it)
    assert write["ok"] is False and not (tmp_path / "outside.txt").exists()
    for p in (tmp_path / "s").rglob("*"):
        if p.is_file():
            text = p.read_text(errors="replace")
            assert API_KEY not in text and GITLAB_TOKEN not in text and PARENT_CANARY not in text, p


def test_transient_model_error_retries_the_case_from_a_fresh_workspace(skill_copy, tmp_path,
                                                                        keys):
    flaky = Script(name="flaky", match=MATCH, turns=[
        Turn(fault=529, fault_times=1, text="never seen", tool_calls=READ.tool_calls),
        *EDITS_SKILL.turns[1:]])
    with ScriptedModelServer([flaky]) as srv:
        code, case = run(skill_copy, srv, tmp_path / "s")
        faults = [r for r in srv.requests if r.fault]
    assert [r.fault_kind for r in faults] == [529]  # Claude Code did not retry by itself
    meta = load(case / "eval_metadata.json")
    assert [a["outcome"] for a in meta["attempts"]] == ["transient_error", "completed"]
    assert meta["attempts"][0]["error_type"] == "ModelTransientError"
    assert "529" in meta["attempts"][0]["error"]
    first = [json.loads(x) for x in
             (case / "attempts" / "1" / "events.jsonl").read_text().splitlines()]
    assert first[-1]["kind"] == "error" and first[-1]["transient"] is True
    g = load(case / "grading.json")
    assert g["self_correction"]["changes_made"][0]["path"] == "SKILL.md"
    assert g["status"] == "fail" and code == 1  # a skill verdict, never `error`


def test_timeout_stops_the_cli_and_records_what_happened(skill_copy, tmp_path, keys):
    config = {**TRAIN_CASE, "timeout_s": 8}
    (skill_copy / "eval.config").write_text(json.dumps({"evals": [config]}))
    marker = f"aeval-sleeper-{tmp_path.name}"
    slow = Script(name="slow", match=MATCH, turns=[
        READ, Turn(tool_calls=[bash(f"python3 -c 'import time; time.sleep(60)' {marker}")])])
    with ScriptedModelServer([slow]) as srv:
        _, case = run(skill_copy, srv, tmp_path / "s")
    assert not _processes_with(marker)  # the CLI and its tool processes were stopped
    events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
    assert [e["tool"] for e in events if e["kind"] == "tool_call"] == ["read_file", "bash"]
    assert events[-1]["kind"] == "end" and events[-1]["status"] == "timeout"
    meta = load(case / "eval_metadata.json")
    assert meta["wall_s"] < 20


def test_the_attempt_cannot_steer_what_aeval_signals_or_writes_on_the_host(
        skill_copy, tmp_path, keys):
    """aeval signals the CLI at the deadline by the pid its launcher (outside the sandbox, as
    aeval's user) wrote down. If that pid lived where the attempt can write, its setup could
    plant a link there (the launcher writes through it, onto a host file) and a tool could
    write another pid (aeval kills a process of the host at the deadline). Both tried here,
    in the attempt's HOME where the pid used to be kept."""
    import subprocess
    import sys

    precious = tmp_path / "host" / "precious.conf"
    precious.parent.mkdir()
    precious.write_text("listen = 8080\n")
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        config = {**TRAIN_CASE, "timeout_s": 8,
                  "setup": [f"mkdir -p $HOME/.aeval && ln -sf {precious} $HOME/.aeval/claude.pid"]}
        (skill_copy / "eval.config").write_text(json.dumps({"evals": [config]}))
        marker = f"aeval-sleeper-{tmp_path.name}"
        hostile = Script(name="hostile", match=MATCH, turns=[
            READ, Turn(tool_calls=[bash(
                f"rm -f $HOME/.aeval/claude.pid; echo {victim.pid} > $HOME/.aeval/claude.pid; "
                f"python3 -c 'import time; time.sleep(60)' {marker}")])])
        with ScriptedModelServer([hostile]) as srv:
            _, case = run(skill_copy, srv, tmp_path / "s")
            assert srv.requests_for("hostile")  # the CLI ran the tool call
        assert victim.poll() is None, "aeval signalled the pid the attempt wrote"
        assert precious.read_text() == "listen = 8080\n"
        assert not _processes_with(marker)  # the deadline still stopped the CLI's tools
        events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
        assert events[-1]["kind"] == "end" and events[-1]["status"] == "timeout"
    finally:
        victim.kill()
        victim.wait()


class ObservedLauncher:
    """Wraps aeval's launcher in a shell script that first copies its own environment: what
    the host-side launcher holds before it execs anything (the sandbox, or the CLI)."""

    def __init__(self, dump: Path):
        self.dump = dump

    def __call__(self, home: Path) -> Path:
        from aeval.adapters.runtimes.claude_code import ClaudeCodeRuntime

        real = ClaudeCodeRuntime._write_launcher(home)
        wrapper = real.with_name("observed-launcher")
        wrapper.write_text(f"#!/bin/sh\ncat /proc/$$/environ > '{self.dump}'\n"
                           f"exec '{real}' \"$@\"\n")
        wrapper.chmod(0o700)
        return wrapper


def test_the_host_side_launcher_starts_with_nothing_of_aevals_environment(
        skill_copy, tmp_path, keys, monkeypatch):
    """claude-agent-sdk starts its CLI with the parent's whole environment merged under its
    options. aeval's launcher runs outside the sandbox, before it execs bwrap: its
    /proc/<pid>/environ must hold no provider key, no PREFECT_API_URL, nothing of aeval's."""
    from aeval.adapters.runtimes.claude_code import ClaudeCodeRuntime
    from aeval.isolation.redact import Redactor
    from aeval.isolation.shell import base_env
    from aeval.isolation.workspace import prepare_workspace
    from aeval.runtime.protocol import EventRecorder, ExecutionRequest, Limits

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api-canary-5521")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-canary-6632")
    dump = tmp_path / "launcher.environ"
    runtime = ClaudeCodeRuntime()
    monkeypatch.setattr(runtime, "_write_launcher", ObservedLauncher(dump))
    ws = prepare_workspace(tmp_path / "attempt", skill_copy, "segmentation", SKILL,
                           ["fixtures/"])
    quiet = Script(name="quiet", match=MATCH, turns=[Turn(text="Nothing to run.")])
    with ScriptedModelServer([quiet]) as srv:
        request = ExecutionRequest(
            prompt=PROMPT, case_id="train", workspace=ws.path, home=ws.home,
            skill_name="segmentation", skill_description="d", skill_dir=ws.skill_dir,
            env=base_env(ws.home, {"SKILL_DIR": str(ws.skill_dir)}),
            limits=Limits(timeout_s=120), model="claude-sonnet-4-5", api_base=srv.url,
            system_prompt="You are the EXECUTOR of an aeval test run.",
            raw_log=ws.root / "raw.jsonl")
        recorder = EventRecorder(tmp_path / "events.jsonl", Redactor())
        result = runtime.run(request, recorder)
        recorder.close()
        assert srv.requests_for("quiet")  # the CLI did start, through the wrapper
    assert result.status == "completed" and result.final_text == "Nothing to run."
    env = dict(x.split(b"=", 1) for x in dump.read_bytes().split(b"\0") if b"=" in x)
    assert b"AEVAL_CLAUDE_ARGV" in env  # it is the launcher's environment
    values = b"\n".join(env.values())
    for name in (b"ANTHROPIC_API_KEY", b"OPENAI_API_KEY", b"PREFECT_API_URL",
                 b"AEVAL_GITLAB_TOKEN", b"AEVAL_TEST_PARENT_CANARY"):
        assert name not in env, name
    for canary in (API_KEY, "sk-openai-canary-6632", "api-canary-5521", GITLAB_TOKEN,
                   PARENT_CANARY):
        assert canary.encode() not in values, canary
