"""Each deterministic check: a pass and a fail, with evidence a person can verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from aeval.artifacts.case import AssertionsFile
from aeval.events import MessageEvent, ToolCallEvent, ToolResultEvent
from aeval.isolation.shell import base_env
from aeval.skill.contract import DeterministicCheck
from aeval.verdicts.checks import CheckContext, describe, run_check

CHECK = TypeAdapter(DeterministicCheck)


@pytest.fixture
def ctx(tmp_path: Path) -> CheckContext:
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "m.json").write_text(json.dumps(
        {"metrics": {"miou": 0.81, "classes": ["road", "sky"]}, "ok": True}))
    (tmp_path / "outputs" / "log.txt").write_text("epoch 1\nmIoU=0.81\n")
    (tmp_path / "bad.json").write_text("{not json")
    events = [
        MessageEvent(seq=0, t=0, role="user", text="train please"),
        ToolCallEvent(seq=1, t=0, call_id="a", tool="bash",
                      input={"command": "python run.py segment_train"}),
        ToolResultEvent(seq=2, t=0, call_id="a", tool="bash", ok=False, exit_code=1,
                        output="Traceback ...\nKeyError: 'segment_train'"),
        ToolCallEvent(seq=3, t=0, call_id="b", tool="bash",
                      input={"command": "python run.py train"}),
        ToolResultEvent(seq=4, t=0, call_id="b", tool="bash", ok=True, exit_code=0,
                        output="mIoU=0.81"),
    ]
    return CheckContext(workspace=tmp_path, events=events, env=base_env(tmp_path))


@pytest.mark.parametrize("spec, passed, evidence", [
    ({"type": "file_exists", "path": "outputs/m.json"}, True, "outputs/m.json exists"),
    ({"type": "file_exists", "path": "outputs/nope"}, False, "does not exist"),
    ({"type": "file_contains", "path": "outputs/log.txt", "pattern": r"mIoU=0\.\d+"}, True,
     "outputs/log.txt:2: mIoU=0.81"),
    ({"type": "file_contains", "path": "outputs/log.txt", "pattern": "loss"}, False,
     "/loss/ not found in outputs/log.txt"),
    ({"type": "command", "run": "test -f outputs/m.json && echo yes", "stdout": "^yes$"}, True,
     "exit 0"),
    ({"type": "command", "run": "exit 3"}, False, "exit 3, expected 0"),
    ({"type": "command", "run": "exit 3", "exit_code": 3}, True, "exit 3"),
    ({"type": "command", "run": "echo no", "stdout": "yes"}, False, "stdout does not match"),
    ({"type": "command", "run": "sleep 5", "timeout_s": 0.3}, False, "timed out"),
    ({"type": "json_path", "path": "outputs/m.json", "query": "metrics.miou"}, True,
     "metrics.miou = 0.81"),
    ({"type": "json_path", "path": "outputs/m.json", "query": "$.metrics.classes[1]",
      "equals": "sky"}, True, '= "sky"'),
    ({"type": "json_path", "path": "outputs/m.json", "query": "metrics.miou", "equals": 0.9},
     False, "expected 0.9"),
    ({"type": "json_path", "path": "outputs/m.json", "query": "metrics.loss"}, False,
     "not found"),
    ({"type": "json_path", "path": "outputs/m.json", "query": "metrics.miou",
      "pattern": r"^0\.8"}, True, "0.81"),
    ({"type": "json_path", "path": "bad.json", "query": "a"}, False, "not valid JSON"),
    ({"type": "transcript_contains", "text": "KeyError: 'segment_train'"}, True,
     "event 2, tool output of event 1 (bash)"),
    ({"type": "transcript_contains", "text": "CUDA"}, False,
     "not in what the agent and its tools produced"),
    ({"type": "transcript_regex", "pattern": r"mIoU=\d\.\d+"}, True, "mIoU=0.81"),
    ({"type": "transcript_regex", "pattern": r"loss=\d"}, False,
     "not in what the agent and its tools produced"),
    ({"type": "tool_used", "tool": "bash", "input": "segment_train"}, True, "(events 1)"),
    ({"type": "tool_used", "tool": "bash", "min_count": 3}, False, "2 matching bash call(s)"),
    ({"type": "tool_used", "tool": "edit_file"}, False, "0 matching"),
    ({"type": "commands_succeeded"}, False, "KeyError: 'segment_train'"),
    ({"type": "commands_succeeded"}, False, "event 2: `python run.py segment_train`"),
])
def test_check(ctx, spec, passed, evidence):
    check = CHECK.validate_python(spec)
    out = run_check(check, ctx)
    assert out.passed is passed, out.evidence
    assert evidence in out.evidence
    assert describe(check)


def test_commands_succeeded_passes_on_clean_run_and_fails_on_no_run(ctx):
    clean = CheckContext(ctx.workspace, [e for e in ctx.events if e.seq >= 3], ctx.env)
    assert run_check(CHECK.validate_python({"type": "commands_succeeded"}), clean).passed
    empty = CheckContext(ctx.workspace, [], ctx.env)
    out = run_check(CHECK.validate_python({"type": "commands_succeeded"}), empty)
    assert not out.passed and "no command was run" in out.evidence


def test_command_check_runs_in_workspace_with_only_given_env(ctx, monkeypatch):
    monkeypatch.setenv("AEVAL_TEST_LEAK", "should-not-be-seen")
    out = run_check(CHECK.validate_python(
        {"type": "command", "run": 'test -z "$AEVAL_TEST_LEAK" && pwd', "stdout": "."}), ctx)
    assert out.passed and str(ctx.workspace) in out.evidence


def test_paths_outside_the_workspace_are_rejected_when_the_contract_is_read():
    with pytest.raises(ValueError, match="must be a relative path inside the workspace"):
        CHECK.validate_python({"type": "file_exists", "path": "../../etc/passwd"})


CLAIMS = [
    MessageEvent(seq=0, t=0, role="user", text="Train and print the final mIoU=0.9 line."),
    ToolCallEvent(seq=1, t=0, call_id="a", tool="bash",
                  input={"command": "python run.py segment_train"}),
    ToolResultEvent(seq=2, t=0, call_id="a", tool="bash", ok=False, exit_code=1,
                    output="KeyError: 'segment_train'"),
    ToolCallEvent(seq=3, t=0, call_id="b", tool="Bash", input={"command": "echo hi"}),
    ToolResultEvent(seq=4, t=0, call_id="b", tool="Bash", ok=False, refused="unknown_tool",
                    output="No such tool available: Bash; mIoU=0.5"),
    MessageEvent(seq=5, t=0, role="assistant", text="Done: trained, mIoU=0.8125."),
]


def outcome(tmp_path: Path, spec: dict):
    ctx = CheckContext(workspace=tmp_path, events=CLAIMS, env=base_env(tmp_path))
    return run_check(CHECK.validate_python(spec), ctx)


def test_the_prompt_is_never_evidence_for_a_transcript_check(tmp_path):
    """A check copied from the prompt: the words are in the prompt, nowhere else."""
    out = outcome(tmp_path, {"type": "transcript_contains", "text": "mIoU=0.9"})
    assert not out.passed
    assert "only in what the agent was given (event 0, user)" in out.evidence


def test_a_claim_is_not_tool_output(tmp_path):
    """Training never succeeded; the agent says it did. With `source: tool_output` the check
    fails (the claim is not evidence), and says where the text was; by default it passes on
    the agent's own words, and says so."""
    spec = {"type": "transcript_regex", "pattern": r"mIoU=\d"}
    said = outcome(tmp_path, spec)
    assert said.passed and "event 5, the agent's own words" in said.evidence
    out = outcome(tmp_path, {**spec, "source": "tool_output"})
    assert not out.passed
    assert "only in event 5, the agent's own words, which does not count here" in out.evidence
    # the runtime's complaint about a refused call is no tool output either
    assert "event 4" not in out.evidence
    assert describe(CHECK.validate_python({**spec, "source": "tool_output"})) == (
        "The output of a tool that ran matches /mIoU=\\d/")


def test_agent_source_reads_only_the_agents_words(tmp_path):
    assert not outcome(tmp_path, {"type": "transcript_contains", "text": "KeyError",
                                  "source": "agent"}).passed
    out = outcome(tmp_path, {"type": "transcript_contains", "text": "KeyError",
                             "source": "tool_output"})
    assert out.passed and out.evidence.startswith("event 2, tool output of event 1 (bash)")


def test_a_refused_call_is_named_as_such_by_commands_succeeded(tmp_path):
    events = CLAIMS[3:5]
    ctx = CheckContext(workspace=tmp_path, events=events, env=base_env(tmp_path))
    out = run_check(CHECK.validate_python({"type": "commands_succeeded"}), ctx)
    assert not out.passed and "refused by the runtime (the runtime has no tool" in out.evidence


def test_an_older_runs_pattern_re2_refuses_fails_its_check_with_the_reason(ctx):
    """``--resume`` reads assertions.json as an older run wrote it, when patterns ran on
    Python's ``re``: a lookahead and a backreference were fine then. Each such check now
    fails, saying why; none raises out of grading (the case was `internal`)."""
    older = json.dumps({"schema_version": 1, "skill": "segmentation", "case_id": "train",
                        "written_at": "2026-11-02T09:14:00Z", "writer": "author-only",
                        "sha256": "0" * 64,
                        "assertions": [
        {"id": "A1", "text": "log has mIoU", "kind": "deterministic", "source": "author",
         "check": {"type": "file_contains", "path": "outputs/log.txt",
                   "pattern": "^(?=.*mIoU)"}},
        {"id": "A2", "text": "no repeated word", "kind": "deterministic", "source": "author",
         "check": {"type": "transcript_regex", "pattern": r"(\w+) \1"}},
        {"id": "A3", "text": "miou", "kind": "deterministic", "source": "author",
         "check": {"type": "json_path", "path": "outputs/m.json", "query": "metrics.miou",
                   "pattern": r"0\.(?!0)"}}]})
    doc = AssertionsFile.model_validate_json(older)
    outcomes = [run_check(a.check, ctx) for a in doc.assertions]
    assert [o.passed for o in outcomes] == [False, False, False]
    assert "pattern /^(?=.*mIoU)/ cannot be run" in outcomes[0].evidence
    assert "pattern /(\\w+) \\1/ cannot be run" in outcomes[1].evidence
    assert "RE2 syntax" in outcomes[2].evidence
