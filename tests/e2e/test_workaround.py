"""The workaround without an edit: the agent runs the documented command, it fails, the agent
finds the right subcommand and gets the right totals, and never touches the skill. Δ is
empty and the outputs are right; the case must still fail its first attempt, citing the failed
documented command and the probe, with no grader and with a lenient one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.conftest import EXAMPLES

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

SKILL = ".agents/skills/invoice-totals"
GRADER_MATCH = "You are the GRADER of an aeval test run"
WRITER_MATCH = "You write ASSERTIONS for an aeval test case"


def bash(cmd: str) -> ToolCall:
    return ToolCall(name="bash", arguments={"command": cmd})


WORKAROUND = Script(name="agent", match="Compute the invoice totals", turns=[
    Turn(tool_calls=[ToolCall(name="read_file", arguments={"path": f"{SKILL}/SKILL.md"})]),
    Turn(text="Running the documented command.", tool_calls=[bash(
        f"cp fixtures/invoices.csv invoices.csv && python3 {SKILL}/scripts/totals.py "
        "summarize --input invoices.csv --out outputs/totals.json")]),
    Turn(text="The script calls it `summary`; using that.", tool_calls=[bash(
        f"python3 {SKILL}/scripts/totals.py summary --input invoices.csv "
        "--out outputs/totals.json")]),
    Turn(text="Done: acme 1250.00, globex 80.50 (written to outputs/totals.json)."),
])
# A lenient grader: everything passed, nothing needed a correction.
LENIENT = Script(name="grader", match=GRADER_MATCH, turns=[Turn(text=json.dumps({
    "expectations": [{"id": i, "passed": True, "needed_correction": False,
                      "evidence": "outputs/totals.json has the right totals"}
                     for i in ("A1", "A2", "A3")],
    "claims": [], "eval_feedback": {"suggestions": [], "overall": "looks good"}}))])
NO_EXTRA = Script(name="writer", match=WRITER_MATCH, turns=[Turn(text='{"assertions": []}')])


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    d = tmp_path / "mp" / "invoice-totals"
    shutil.copytree(EXAMPLES / "skills" / "invoice-totals", d)
    return d


@pytest.mark.parametrize("grading", ["no-grader", "lenient-grader"])
def test_a_workaround_without_an_edit_fails_the_first_attempt(skill, tmp_path, monkeypatch,
                                                               grading):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    scripts = [WORKAROUND] if grading == "no-grader" else [NO_EXTRA, LENIENT, WORKAROUND]
    extra = ["--no-grader"] if grading == "no-grader" else []
    with ScriptedModelServer(scripts) as srv:
        code = main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(tmp_path / "s"), "-q", *extra])
        graded = [r for r in srv.requests if r.script == "grader"]
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    case = rd / "invoice-totals" / "builtin" / "totals"
    g = json.loads((case / "grading.json").read_text())
    by = {e["id"]: e for e in g["expectations"]}
    # the agent's final state is right, and it never edited the skill
    assert by["A1"]["status"] == by["A2"]["status"] == "passed"
    assert by["S1"]["status"] == "passed" and g["self_correction"]["changes_made"] == []
    if grading == "lenient-grader":
        assert len(graded) == 1 and by["A3"]["status"] == "passed"
    # ... and still: the documented command failed, and the documented workflow fails as written
    assert by["S2"]["status"] == "failed"
    assert "invalid choice: 'summarize'" in by["S2"]["evidence"]
    assert "event " in by["S2"]["evidence"]
    assert by["S3"]["status"] == "failed" and g["probe"]["status"] == "failed"
    assert "invalid choice: 'summarize'" in by["S3"]["evidence"]
    assert (rd / g["probe"]["dir"] / "events.jsonl").is_file()
    assert g["status"] == "fail" and code == 1
    (err,) = [e for e in g["self_correction"]["first_attempt_errors"] if e["documented"]]
    assert err["documented"] == "scripts/totals.py summarize --input --out"


def test_an_agent_that_follows_a_working_skill_passes(tmp_path, monkeypatch):
    """The control: the same skill with its documentation fixed passes every structural
    assertion (the probe too), so the failures above are the defect's, not the harness's."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    d = tmp_path / "mp" / "invoice-totals"
    shutil.copytree(EXAMPLES / "skills" / "invoice-totals", d)
    for name in ("SKILL.md", "eval.config"):
        p = d / name
        p.write_text(p.read_text().replace("totals.py summarize", "totals.py summary"))
    follows = Script(name="agent", match="Compute the invoice totals", turns=[
        Turn(tool_calls=[bash(f"cp fixtures/invoices.csv invoices.csv && python3 "
                              f"{SKILL}/scripts/totals.py summary --input invoices.csv "
                              "--out outputs/totals.json")]),
        Turn(text="Done.")])
    with ScriptedModelServer([follows]) as srv:
        code = main(["run", str(d), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(tmp_path / "s"), "-q", "--no-grader"])
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    g = json.loads((rd / "invoice-totals" / "builtin" / "totals" / "grading.json").read_text())
    by = {e["id"]: e["status"] for e in g["expectations"]}
    assert by == {"A1": "passed", "A2": "passed", "A3": "ungraded", "S1": "passed",
                  "S2": "passed", "S3": "passed", "S0": "passed"}
    assert g["status"] == "pass" and code == 0
