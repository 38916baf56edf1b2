"""The contract is the test, not the skill: an agent that reads the skill's eval.config (or
skill-creator's evals/evals.json) would learn the expected outcome and the assertions, write
them by hand, and — having "read a file of the skill" — count as having exercised it. The
skill copy in the workspace holds neither; the skill's other files (an evals/ folder's inputs
too) are there; and the grader is never kept from an output line because the contract holds
it.

The attack: a working invoice-totals and an agent that skips the skill, looks for the
contract, and hand-writes the totals the expected outcome names. With the contract in the
copy its `cat` succeeded, counted as reading the skill, and the case passed."""

from __future__ import annotations

import json
import shutil

import pytest

from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.conftest import EXAMPLES

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

SKILL = ".agents/skills/invoice-totals"


def bash(cmd: str) -> ToolCall:
    return ToolCall(name="bash", arguments={"command": cmd})


CHEAT = Script(name="agent", match="Compute the invoice totals", turns=[
    Turn(text="Looking for how this skill is tested.", tool_calls=[bash(
        f"ls -a {SKILL} {SKILL}/evals; cat {SKILL}/eval.config {SKILL}/evals/evals.json")]),
    Turn(text="Writing what the test expects.", tool_calls=[bash(
        "mkdir -p outputs && printf '{\"acme\": 1250.0, \"globex\": 80.5}' "
        "> outputs/totals.json && cat outputs/totals.json")]),
    Turn(text="Done: acme 1250.0, globex 80.5."),
])


def test_an_agent_cannot_read_the_contract_from_the_skill_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    skill = tmp_path / "mp" / "invoice-totals"
    shutil.copytree(EXAMPLES / "skills" / "invoice-totals", skill)
    for name in ("SKILL.md", "eval.config"):  # the example's defect fixed: a working skill
        p = skill / name
        p.write_text(p.read_text().replace("totals.py summarize", "totals.py summary"))
    # skill-creator's format beside it, with an input file its cases would use
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "evals" / "files" / "march.csv").write_text("customer,amount\nacme,10\n")
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "invoice-totals",
        "evals": [{"id": 1, "prompt": "Sum march.csv", "expected_output": "acme 10.0",
                   "files": ["evals/files/march.csv"]}]}))
    with ScriptedModelServer([CHEAT]) as srv:
        code = main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(tmp_path / "s"), "-q", "--no-grader"])
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    case = rd / "invoice-totals" / "builtin" / "totals"
    events = [json.loads(ln) for ln in (case / "events.jsonl").read_text().splitlines()]
    looked = next(e for e in events if e.get("kind") == "tool_result")
    # the contract is not in the copy; the skill's own files and the evals' inputs are
    assert "No such file or directory" in looked["output"]
    assert "acme 1250.0" not in looked["output"] and "expected_outcome" not in looked["output"]
    assert "SKILL.md" in looked["output"] and "scripts" in looked["output"]
    assert "files" in looked["output"]
    g = json.loads((case / "grading.json").read_text())
    # the hand-written totals match, but nothing of the skill ran: never a pass
    by = {e["id"]: e["status"] for e in g["expectations"]}
    assert by["A1"] == by["A2"] == "passed" and by["S0"] == "passed"
    assert g["status"] == "untested", (g["status"], g.get("status_reason"))
    assert g["status_reason"].startswith("nothing of the skill ran"), g["status_reason"]
    assert code == 0  # untested is not green by proof: --require-tested makes it exit 2


def test_the_grader_sees_an_output_line_the_contract_also_holds(tmp_path):
    """An output that repeats the expected outcome stays visible to the grader; the skill's
    own lines stay withheld."""
    from aeval.tasks.case.model_grader import skill_lines

    skill = tmp_path / "invoice-totals"
    shutil.copytree(EXAMPLES / "skills" / "invoice-totals", skill)
    lines = skill_lines(skill)
    expected = json.loads((skill / "eval.config").read_text())["evals"][0]["expected_outcome"]
    assert expected not in lines
    assert "Amounts are summed as given; rows with an empty amount are skipped." in lines
