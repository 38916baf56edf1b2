"""`aeval triggers` end to end: the builtin runtime against the scripted model server, skills
installed among the other skills of the example marketplace; precision and recall from what
the scripted agent loaded; triggers.json against its schema; the Prefect table artifact."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from aeval.artifacts import json_schema
from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SKILLS = ".agents/skills"
CSV_SHOULD = "Profile the columns of cities.csv and give me per-column statistics as JSON."
CSV_NOT = "Draft release notes for version 2.0 from the merged changes in changes.txt."
NOTES_SHOULD = ["Turn this list of merged changes into grouped release notes for 1.4.0.",
                "Write the changelog section for the next release from these merged PRs."]
NOTES_NOT = "Sum the invoice amounts per customer in invoices.csv and give me the totals."


def read(skill: str) -> Turn:
    return Turn(text="This task matches a skill.", tool_calls=[
        ToolCall(name="read_file", arguments={"path": f"{SKILLS}/{skill}/SKILL.md"})])


def cat(skill: str) -> Turn:
    return Turn(tool_calls=[ToolCall(name="bash", arguments={
        "command": f"cat $SKILL_DIR/../{skill}/SKILL.md | head -20"})])


SCRIPTS = [
    # csv-stats: the agent picks it when it should, and the right distractor when not
    Script(name="csv-should", match="Profile the columns of cities.csv",
           turns=[read("csv-stats")], final="Following csv-stats."),
    Script(name="csv-not", match="Draft release notes for version 2.0",
           turns=[cat("release-notes")], final="Following release-notes."),
    # release-notes: one hit, one should-prompt lost to csv-stats, one false trigger
    Script(name="notes-should-1", match="grouped release notes for 1.4.0",
           turns=[read("release-notes")], final="Following release-notes."),
    Script(name="notes-should-2", match="changelog section for the next release",
           turns=[read("csv-stats")], final="Profiling instead."),
    Script(name="notes-not", match="Sum the invoice amounts per customer",
           turns=[read("release-notes"), read("invoice-totals")], final="Totals done."),
]


def add_triggers(skill: Path, should: list[str], should_not: list[str]) -> None:
    config = skill / "eval.config"
    data = json.loads(config.read_text()) if config.is_file() else {"evals": [{
        "id": "notes", "prompt": "Draft release notes from fixtures/changes.txt.",
        "expected_outcome": "Grouped Markdown release notes."}]}
    data["triggers"] = {"should": should, "should_not": should_not}
    config.write_text(json.dumps(data, indent=2))


def test_precision_and_recall_from_what_the_agent_loaded(marketplace, tmp_path, monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from aeval.tasks.run.prefect_artifacts import artifact_key

    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    skills = marketplace / "skills"
    add_triggers(skills / "csv-stats", [CSV_SHOULD], [CSV_NOT])
    add_triggers(skills / "release-notes", NOTES_SHOULD, [NOTES_NOT])
    out = tmp_path / "store"
    with ScriptedModelServer(SCRIPTS) as srv:
        code = main(["triggers", str(skills / "csv-stats"), str(skills / "release-notes"),
                     "--model", "openai/scripted", "--api-base", srv.base_url_openai,
                     "--out", str(out), "-q"])
        sent = srv.requests_for("csv-should")
    assert code == 0
    (run_dir,) = (out / "triggers").iterdir()
    data = json.loads((run_dir / "triggers.json").read_text())
    jsonschema.validate(data, json_schema("triggers"))
    by = {s["skill"]: s for s in data["scores"]}

    csv = by["csv-stats"]
    assert (csv["tp"], csv["fn"], csv["fp"], csv["tn"]) == (1, 0, 0, 1)
    assert csv["precision"] == 1.0 and csv["recall"] == 1.0 and csv["source"] == "contract"
    # the other skills of the marketplace are the distractors (four: no bundled top-up)
    assert sorted(csv["distractors"]) == ["hello-docs", "invoice-totals", "release-notes",
                                          "segmentation"]
    trial = next(t for t in csv["trials"] if t["kind"] == "should_not")
    assert trial["outcome"] == "tn" and trial["loaded"] == ["release-notes"]
    assert "bash: cat $SKILL_DIR/../release-notes/SKILL.md" in trial["evidence"][0]

    notes = by["release-notes"]
    assert (notes["tp"], notes["fn"], notes["fp"], notes["tn"]) == (1, 1, 1, 0)
    assert notes["precision"] == 0.5 and notes["recall"] == 0.5
    assert notes["distractor_picks"] == {"csv-stats": 1}  # the recall lost to a distractor
    fp = next(t for t in notes["trials"] if t["kind"] == "should_not")
    assert fp["loaded"] == ["release-notes", "invoice-totals"]

    # every trial ran for real and is kept: events and transcript in its folder
    for s in data["scores"]:
        for t in s["trials"]:
            assert (run_dir / t["dir"] / "events.jsonl").is_file()
            assert (run_dir / t["dir"] / "transcript.md").is_file()
    # the agent was shown every installed skill, with a prompt that does not name one
    systems = [r.body["messages"][0]["content"] for r in sent]
    assert systems and "5 agent skills are installed" in systems[0]
    assert "read its SKILL.md first" not in systems[0]

    html = (run_dir / "report.html").read_text()
    assert "Trigger accuracy" in html and "csv-stats (1)" in html

    with get_client(sync_client=True) as client:
        (art,) = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=[artifact_key("triggers", run_dir.name)])))
    assert art.type == "table"
    rows = json.loads(art.data) if isinstance(art.data, str) else art.data
    assert {r["skill"]: r["recall"] for r in rows} == {"csv-stats": 1.0, "release-notes": 0.5}


def test_generic_tier_and_bundled_distractors(tmp_path, monkeypatch):
    """A lone skill with no eval.config: one should-prompt from its description, installed
    among aeval's bundled distractors."""
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    skill = tmp_path / "lone" / "changelog-bot"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: changelog-bot\ndescription: Summarize a git log into a short changelog "
        "grouped by type.\n---\n\n# Changelog bot\n\nRun `git log --oneline` and group.\n")
    script = Script(name="generic", match="Summarize a git log into a short changelog",
                    turns=[read("git-commit-messages")], final="Used the commit skill.")
    out = tmp_path / "store"
    with ScriptedModelServer([script]) as srv:
        code = main(["triggers", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(out), "-q", "--epochs", "2"])
    assert code == 0
    (run_dir,) = (out / "triggers").iterdir()
    data = json.loads((run_dir / "triggers.json").read_text())
    jsonschema.validate(data, json_schema("triggers"))
    (score,) = data["scores"]
    assert data["distractor_source"] == "bundled" and data["epochs"] == 2
    assert score["source"] == "generic" and len(score["distractors"]) == 6
    assert [t["epoch"] for t in score["trials"]] == [1, 2]
    for trial in score["trials"]:
        assert trial["prompt"].endswith("Summarize a git log into a short changelog grouped "
                                        "by type.")
        assert trial["outcome"] == "fn" and trial["dir"].endswith(f"epoch-{trial['epoch']}")
    assert score["recall"] == 0.0 and score["precision"] is None  # nothing loaded: no 0/0
    assert score["distractor_picks"] == {"git-commit-messages": 2}
