"""`aeval init`: a starter eval.config drafted by the (scripted) model or written as a
template, validated, never over an existing contract, then run once.

The skill under test (tests/data/init/meeting-minutes) is what most public skills are: prose
for an agent, one helper script and a fixture; it has no eval.config.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from aeval.skill.contract import parse_config
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.conftest import EXAMPLES
from tests.integration.test_grade_and_suggest import NO_EXTRA, grader

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

DATA = Path(__file__).resolve().parent.parent / "data" / "init"
CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "marketplaces"
WRITER = "You write the EVAL.CONFIG of an agent skill"
DRAFT = {
    "evals": [{
        "id": "action-items",
        "prompt": "Here is this morning's standup (fixtures/standup.txt). Who has to do what? "
                  "Save the follow-ups as JSON in outputs/actions.json.",
        "expected_outcome": "outputs/actions.json lists the three action items with owners.",
        "files": ["fixtures/standup.txt"],
        "steps": ["mkdir -p outputs",
                  "python3 $SKILL_DIR/scripts/extract_actions.py fixtures/standup.txt "
                  "--format json > outputs/actions.json"],
        "assertions": [
            "Every action item keeps the owner named in the transcript",
            {"type": "file_exists", "path": "outputs/actions.json"},
            {"type": "json_path", "path": "outputs/actions.json", "query": "[1].due",
             "equals": "Friday"},
            {"type": "tool_used", "tool": "bash", "input": "extract_actions\\.py"},
        ],
        "timeout_s": 120,
    }],
    "triggers": {
        "should": ["Can you write up minutes from this call transcript?",
                   "I pasted our planning meeting below; what did we decide?",
                   "Turn transcript.txt into minutes with an action-item table."],
        "should_not": ["Summarize this research paper in three bullet points."],
    },
}


@pytest.fixture(autouse=True)
def env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    monkeypatch.setenv("AEVAL_MODEL_RETRIES", "1")


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    d = tmp_path / "mp" / "skills" / "meeting-minutes"
    shutil.copytree(DATA / "meeting-minutes", d)
    return d


def writer(*answers: str, fault: int | None = None) -> Script:
    turns = [Turn(text=a) for a in answers]
    if fault is not None:
        turns = [Turn(text="{}", fault=fault, fault_times=50)]
    return Script(name="contract-writer", match=WRITER, turns=turns)


def init(args: list[str], scripts: list[Script] | None = None) -> tuple[int, list[str]]:
    if scripts is None:
        return main(["init", *args]), []
    with ScriptedModelServer(scripts) as srv:
        code = main(["init", *args, "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai])
        return code, [json.dumps(r.body) for r in srv.requests
                      if r.script == "contract-writer"]


def test_a_prose_skill_gets_a_drafted_contract_whose_cases_run(skill, tmp_path, capsys):
    # the first run grades with the same model: no extra assertions; the grader sees A1-A4
    # (A4 the natural-language assertion, last once the typed checks are moved first)
    verdicts = {f"A{i}": (True, False) for i in range(1, 5)}
    code, requests = init([str(skill), "--runtime", "literal", "--out", str(tmp_path / "o")],
                          [writer(json.dumps(DRAFT)), NO_EXTRA, grader("grader", verdicts)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert len(requests) == 1
    sent = requests[0]
    assert "scripts/extract_actions.py" in sent and "references/style.md" in sent
    config = parse_config(skill / "eval.config")
    (case,) = config.evals
    # deterministic checks first, the natural-language one last
    assert [type(a).__name__ for a in case.assertions][-1] == "str"
    assert config.triggers is not None and len(config.triggers.should) == 3
    assert "meeting-minutes: drafted, 1 case(s); first run: " in out
    run = next((tmp_path / "o" / "runs").iterdir())
    grading = json.loads(
        (run / "meeting-minutes" / "literal" / "action-items" / "grading.json").read_text())
    texts = {e["text"]: e["passed"] for e in grading["expectations"]}
    assert any("outputs/actions.json" in t and p for t, p in texts.items())
    manifest = json.loads((run / "run.json").read_text())
    (result,) = manifest["skills"]
    assert {c["case_id"]: c["status"] for c in result["cases"]}["action-items"] == "pass"
    assert "meeting-minutes: drafted, 1 case(s); first run: 1 pass" in out


def test_an_invalid_answer_is_asked_again_once_with_the_error(skill, tmp_path, capsys):
    bad = {**DRAFT, "evals": [{**DRAFT["evals"][0], "files": ["fixtures/minutes.txt"]}]}
    code, requests = init([str(skill), "--no-run"],
                          [writer(json.dumps(bad), json.dumps(DRAFT))])
    assert code == 0, capsys.readouterr()
    assert len(requests) == 2
    assert "fixtures/minutes.txt" in requests[1] and "not a file or folder" in requests[1]
    assert parse_config(skill / "eval.config").evals[0].files == ["fixtures/standup.txt"]


@pytest.mark.parametrize("answers", [
    ("Sure! Here are some ideas for testing the skill.", "I cannot produce JSON."),
    (json.dumps({"evals": [{"id": "x", "prompt": ""}]}),
     json.dumps({"evals": [], "triggers": {"should": ["a"]}})),
], ids=["garbage", "schema-invalid"])
def test_an_answer_that_stays_invalid_writes_nothing_and_exits_3(skill, capsys, answers):
    code, requests = init([str(skill), "--no-run"], [writer(*answers)])
    captured = capsys.readouterr()
    assert code == 3, captured
    assert len(requests) == 2
    assert not (skill / "eval.config").exists()
    assert list(skill.glob(".eval.config*")) == []
    assert "stayed invalid after 2 attempts, nothing written" in captured.out
    assert "internal error" not in captured.err


def test_a_model_api_that_keeps_failing_exits_3_and_a_refusing_one_2(skill, capsys):
    code, _ = init([str(skill), "--no-run"], [writer(fault=503)])
    assert code == 3, capsys.readouterr()
    assert not (skill / "eval.config").exists()
    code, _ = init([str(skill), "--no-run"], [writer(fault=401)])
    assert code == 2, capsys.readouterr()
    assert not (skill / "eval.config").exists()


def test_an_existing_contract_is_never_lost(skill, capsys):
    mine = '{"evals": [{"id": "mine", "prompt": "p", "expected_outcome": "o"}]}\n'
    (skill / "eval.config").write_text(mine)
    code, requests = init([str(skill), "--no-run"], [writer(json.dumps(DRAFT))])
    assert code == 2 and requests == []
    assert "--force" in capsys.readouterr().out
    assert (skill / "eval.config").read_text() == mine
    code, _ = init([str(skill), "--no-run", "--force"], [writer(json.dumps(DRAFT))])
    assert code == 0
    assert (skill / "eval.config.orig").read_text() == mine
    assert parse_config(skill / "eval.config").evals[0].id == "action-items"
    code, _ = init([str(skill), "--no-run", "--force"], [writer(json.dumps(DRAFT))])
    assert code == 0 and (skill / "eval.config.orig.1").is_file()
    assert (skill / "eval.config.orig").read_text() == mine


def test_without_a_model_a_template_marks_what_is_left_and_runs(skill, tmp_path, capsys):
    code, _ = init([str(skill), "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads((skill / "eval.config").read_text())
    (case,) = data["evals"]
    assert case["files"] == ["fixtures"]
    assert case["steps"] == [
        'python3 "$SKILL_DIR/scripts/extract_actions.py" fixtures/standup.txt --format json']
    assert "meeting-minutes: template, 1 case(s); first run: 1 pass" in out
    assert main(["validate", str(skill)]) == 0
    shown = capsys.readouterr().out
    for field in ("evals[0].prompt", "evals[0].expected_outcome", "evals[0].assertions[1]",
                  "triggers.should[0]", "triggers.should_not[0]"):
        assert f"{field}: still aeval init's placeholder" in shown, shown


def test_missing_fills_every_skill_without_a_contract(tmp_path, capsys):
    mp = tmp_path / "marketplace"
    shutil.copytree(EXAMPLES, mp)
    contracts = {p: p.read_text() for p in [*mp.glob("skills/*/eval.config"),
                                            *mp.glob(".aeval/evals/*.config")]}
    named = {p.name.split(".")[0] if p.parent.name == "evals" else p.parent.name
             for p in contracts}
    without = sorted(p.parent.name for p in mp.glob("skills/*/SKILL.md")
                     if p.parent.name not in named)
    assert without and len(named) >= 3  # per-skill and per-name contracts, and skills without
    code, _ = init([str(mp), "--missing", "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0, out
    for path, text in contracts.items():
        assert path.read_text() == text
    for name in named:
        assert f"{name}: exists" in out
        assert not (mp / "skills" / name / "eval.config.orig").exists()
    for name in without:
        parse_config(mp / "skills" / name / "eval.config")
        assert f"{name}: template, 1 case(s); first run: 1 pass" in out
    assert f"[{len(without)}/{len(without)}]" in out


# A prose-only skill's drafted case, as a model writes it for an agent (no steps): read the
# skill, do the task, leave a file; checks on the transcript and the file first.
PROSE_DRAFT = {
    "evals": [{
        "id": "applies-the-skill",
        "prompt": "I'm about to start on the task in task.md. Work through it the way your "
                  "instructions for this kind of task say, and write what you did to "
                  "outputs/notes.md.",
        "expected_outcome": "outputs/notes.md records the steps taken, in the skill's order.",
        "assertions": [
            "The notes follow the order of steps the skill prescribes",
            {"type": "tool_used", "tool": "bash", "input": "SKILL\\.md"},
            {"type": "file_exists", "path": "outputs/notes.md"},
        ],
    }],
    "triggers": {"should": ["Help me work through this task properly.",
                            "Which process should I follow before I start coding this?",
                            "Here is the task in task.md; plan it before we begin."],
                 "should_not": ["What is the capital of Australia?"]},
}
# The scripted executor reads the installed skill (whichever it is) and writes the notes.
EXECUTOR = Script(name="executor", match="You are the EXECUTOR of an aeval test run", turns=[
    Turn(tool_calls=[ToolCall(name="bash", arguments={
        "command": "cat .agents/skills/*/SKILL.md | head -40 && mkdir -p outputs && "
                   "grep -m3 '^#' .agents/skills/*/SKILL.md > outputs/notes.md"})]),
    Turn(text="I read the skill and recorded its steps in outputs/notes.md."),
])


@pytest.mark.parametrize("source", [CORPUS / "workbench", EXAMPLES],
                         ids=["prose-corpus-marketplace", "example-marketplace"])
def test_missing_with_a_model_leaves_no_skill_without_a_contract_or_untested(
        tmp_path, capsys, source):
    mp = tmp_path / "mp"
    shutil.copytree(source, mp)
    before = sorted(p.parent for p in mp.rglob("SKILL.md"))
    had = {p.parent for p in mp.rglob("eval.config")} | {
        p for p in before if (mp / ".aeval" / "evals" / f"{p.name}.config").is_file()}
    verdicts = {f"A{i}": (True, False) for i in range(1, 4)}
    code, requests = init([str(mp), "--missing", "--out", str(tmp_path / "o")],
                          [writer(json.dumps(PROSE_DRAFT)), NO_EXTRA, EXECUTOR,
                           grader("grader", verdicts)])
    out = capsys.readouterr().out
    assert code == 0, out[-4000:]
    assert len(requests) == len(before) - len(had) >= 1
    run = next((tmp_path / "o" / "runs").iterdir())
    manifest = json.loads((run / "run.json").read_text())
    statuses = {s["name"]: {c["case_id"]: c["status"] for c in s["cases"]}
                for s in manifest["skills"]}
    for root in before:
        if root in had:
            continue
        config = parse_config(root / "eval.config")
        assert [c.id for c in config.evals] == ["applies-the-skill"]
        name = next(s["name"] for s in manifest["skills"] if Path(s["path"]) == root)
        assert statuses[name]["applies-the-skill"] == "pass", (name, out[-3000:])


def test_usage_errors_are_one_line(tmp_path, capsys):
    assert main(["init", str(tmp_path / "nope")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["init", str(EXAMPLES)]) == 2
    err = capsys.readouterr().err
    assert "no SKILL.md here" in err and "--missing" in err
