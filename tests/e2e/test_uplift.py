"""`aeval uplift` end to end through the command line, the builtin runtime and the scripted
model server: a skill the agent cannot do without (positive uplift), and a skill whose
instructions lead the agent astray on a task it does right on its own (negative uplift,
significant over six pairs: flagged, exit 1). The scripted agent tells the arms apart the way
a real one would: by whether its system prompt announces the skill."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from aeval.deployments.cli.main import main
from aeval.tasks.run.prefect_artifacts import artifact_key
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.conftest import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

EPOCHS = 6  # six discordant pairs all one way are the fewest with exact McNemar p < 0.05

LEDGER_MD = """---
name: ledger-balance
description: Compute the closing balance of a bank ledger CSV (date,amount) as JSON. Use when
  asked for the balance or total of a ledger export.
---
# Ledger balance

Sums a ledger export exactly (decimal arithmetic, no float rounding):

```bash
python3 scripts/balance.py fixtures/ledger.csv --out outputs/balance.json
```

The output is `{"closing": "<sum, two decimals>", "rows": <number of entries>}`.
"""
BALANCE_PY = """import argparse, csv, json, pathlib
from decimal import Decimal

p = argparse.ArgumentParser()
p.add_argument("ledger")
p.add_argument("--out", required=True)
a = p.parse_args()
rows = list(csv.DictReader(open(a.ledger)))
total = sum((Decimal(r["amount"]) for r in rows), Decimal("0"))
out = pathlib.Path(a.out)
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps({"closing": f"{total:.2f}", "rows": len(rows)}))
print(f"closing balance {total:.2f} over {len(rows)} rows")
"""
SORTER_MD = """---
name: name-sorter
description: Sort a list of people's names, one per line. Use when asked to sort or order
  names.
---
# Name sorter

Always use the bundled sorter, it knows the house convention:

```bash
python3 scripts/sort_names.py fixtures/names.txt --out outputs/sorted.txt
```
"""
SORT_PY = """import argparse, pathlib

p = argparse.ArgumentParser()
p.add_argument("names")
p.add_argument("--out", required=True)
a = p.parse_args()
names = [n for n in open(a.names).read().splitlines() if n.strip()]
out = pathlib.Path(a.out)
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("\\n".join(sorted(names, key=lambda n: n.split()[-1])) + "\\n")  # by surname
"""


def write_skills(root: Path) -> None:
    ledger = root / "skills" / "ledger-balance"
    (ledger / "scripts").mkdir(parents=True)
    (ledger / "fixtures").mkdir()
    (ledger / "SKILL.md").write_text(LEDGER_MD)
    (ledger / "scripts" / "balance.py").write_text(BALANCE_PY)
    (ledger / "fixtures" / "ledger.csv").write_text(
        "date,amount\n2026-01-02,100.10\n2026-01-05,-60.35\n2026-01-09,2.75\n")
    (ledger / "eval.config").write_text(json.dumps({"evals": [{
        "id": "closing",
        "prompt": "Compute the closing balance of fixtures/ledger.csv into "
                  "outputs/balance.json.",
        "expected_outcome": "outputs/balance.json holds the closing balance 42.50.",
        "files": ["fixtures/"],
        "assertions": [{"type": "json_path", "path": "outputs/balance.json",
                        "query": "closing", "equals": "42.50"}]}]}))
    sorter = root / "skills" / "name-sorter"
    (sorter / "scripts").mkdir(parents=True)
    (sorter / "fixtures").mkdir()
    (sorter / "SKILL.md").write_text(SORTER_MD)
    (sorter / "scripts" / "sort_names.py").write_text(SORT_PY)
    (sorter / "fixtures" / "names.txt").write_text(
        "Grace Hopper\nAda Lovelace\nAlan Turing\nBarbara Liskov\n")
    (sorter / "eval.config").write_text(json.dumps({"evals": [{
        "id": "alphabetical",
        "prompt": "Sort the names in fixtures/names.txt alphabetically into outputs/sorted.txt.",
        "expected_outcome": "outputs/sorted.txt lists the names in alphabetical order.",
        "files": ["fixtures/"],
        "assertions": [{"type": "command",
                        "run": "sort fixtures/names.txt | cmp - outputs/sorted.txt"}]}]}))


def bash(cmd: str) -> ToolCall:
    return ToolCall(name="bash", arguments={"command": cmd})


ANNOUNCED = "(?s)## Your skill.*"  # the builtin runtime's system prompt names the skill
SCRIPTS = [
    Script(name="ledger-with", match=ANNOUNCED + "Compute the closing balance", turns=[
        Turn(tool_calls=[bash("python3 .agents/skills/ledger-balance/scripts/balance.py "
                              "fixtures/ledger.csv --out outputs/balance.json")]),
        Turn(text="Done: the closing balance is 42.50 (outputs/balance.json).")]),
    Script(name="sorter-with", match=ANNOUNCED + "Sort the names", turns=[
        Turn(tool_calls=[bash("python3 .agents/skills/name-sorter/scripts/sort_names.py "
                              "fixtures/names.txt --out outputs/sorted.txt")]),
        Turn(text="Sorted with the skill's sorter (outputs/sorted.txt).")]),
    Script(name="ledger-without", match="Compute the closing balance", turns=[
        Turn(tool_calls=[bash(
            'test -d .agents/skills && echo "skills: $(ls .agents/skills)" || echo "no skills '
            'folder"; echo "SKILL_DIR has $(ls -A "$SKILL_DIR" | wc -l) entries"')]),
        Turn(text="I have no ledger tool here, so I did not compute the balance.")]),
    Script(name="sorter-without", match="Sort the names", turns=[
        Turn(tool_calls=[bash("mkdir -p outputs && sort fixtures/names.txt > "
                              "outputs/sorted.txt")]),
        Turn(text="Sorted alphabetically into outputs/sorted.txt.")]),
]


def load(p: Path) -> dict:
    return json.loads(p.read_text())


def test_uplift_positive_for_a_skill_that_helps_negative_and_flagged_for_one_that_hurts(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    mp = tmp_path / "marketplace"
    write_skills(mp)
    store = tmp_path / "store"
    with ScriptedModelServer(SCRIPTS) as srv:
        code = main(["uplift", str(mp), "--runtime", "builtin", "--model", "openai/scripted",
                     "--api-base", srv.base_url_openai, "--no-grader", "--epochs", str(EPOCHS),
                     "--concurrency", "4", "--out", str(store)])
        requests = list(srv.requests)
    out = capsys.readouterr().out
    assert code == 1, out

    # both arms ran every case EPOCHS times, and each arm's agent got its own prompts
    used = [r.script for r in requests]
    for name in ("ledger-with", "sorter-with", "ledger-without", "sorter-without"):
        assert used.count(name) == 2 * EPOCHS, (name, used)
    for r in requests:
        if r.script.endswith("-without"):  # the skill is never announced without it
            body = json.dumps(r.body)
            assert "ledger-balance" not in body and "name-sorter" not in body

    (with_run,) = (store / "runs").glob("*-with")
    (without_run,) = (store / "runs").glob("*-without")
    report = load(with_run / "uplift.json")
    schema = load(ROOT / "eval_skill" / "schemas" / "uplift.schema.json")
    jsonschema.validate(report, schema)
    assert report["without_run"] == without_run.name and report["epochs"] == EPOCHS
    skills = {s["skill"]: s for s in report["skills"]}

    helps = skills["ledger-balance"]["stats"]
    assert (helps["uplift"], helps["verdict"], helps["flagged"]) == (1.0, "helps", False)
    assert helps["with_skill"]["pass_rate"] == 1.0 and helps["without_skill"]["pass_rate"] == 0
    assert helps["mcnemar_p"] == pytest.approx(2 / 2 ** EPOCHS) and helps["ci_low"] > 0
    assert helps["with_skill"]["mean_tokens"] > 0 and helps["without_skill"]["mean_tokens"] > 0
    assert helps["with_skill"]["mean_wall_s"] > 0

    hurts = skills["name-sorter"]["stats"]
    assert (hurts["uplift"], hurts["verdict"], hurts["flagged"]) == (-1.0, "hurts", True)
    assert hurts["with_only"] == 0 and hurts["without_only"] == EPOCHS and hurts["ci_high"] < 0
    (case,) = skills["name-sorter"]["cases"]
    assert case["case_id"] == "alphabetical" and case["stats"]["pairs"] == EPOCHS
    assert report["gate"]["exit_code"] == 1 and "name-sorter" in report["gate"]["reason"]

    # the console: the table, the flag, where the files are
    assert (f"negative uplift: name-sorter [builtin]: 0/{EPOCHS} pass with the skill, "
            f"{EPOCHS}/{EPOCHS} without (p = 0.0312)") in out
    assert f"uplift.json: {with_run / 'uplift.json'}" in out
    assert "exit 1: the skill makes the agent significantly worse: name-sorter" in out

    # report.html of the with-skill run has the section, the flag and the link to the other arm
    html = (with_run / "report.html").read_text()
    assert "Uplift: with the skill vs without" in html
    assert "hurts: negative uplift" in html and f"../{without_run.name}/report.html" in html

    # every artifact of each arm stays inspectable; the arms share their assertions
    pair = next(p for p in report["pairs"] if p["skill"] == "ledger-balance")
    w, wo = with_run / pair["with_dir"], without_run / pair["without_dir"]
    assert load(w / "assertions.json")["sha256"] == load(wo / "assertions.json")["sha256"]
    assert load(w / "eval_metadata.json")["skill_installed"] is True
    assert load(wo / "eval_metadata.json")["skill_installed"] is False
    assert {e["id"] for e in load(w / "grading.json")["expectations"]} >= {"A1", "S1"}
    assert [e["id"] for e in load(wo / "grading.json")["expectations"]] == ["A1"]
    transcript = (wo / "transcript.md").read_text()
    assert "no skills folder" in transcript and "SKILL_DIR has 0 entries" in transcript
    assert not (without_run / "name-sorter" / "builtin" / "fix_suggestions.json").exists()

    # the Prefect table artifact, on the test session's server
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    key = artifact_key("uplift", report["uplift_id"])
    with get_client(sync_client=True) as client:
        (art,) = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=[key])))
    assert art.type == "table"
    rows = json.loads(art.data) if isinstance(art.data, str) else art.data
    by = {(r["skill"], r["case"]): r for r in rows}
    assert by[("name-sorter", "all")]["uplift"] == "-100%"
    assert by[("name-sorter", "all")]["verdict"] == "hurts, flagged"
    assert by[("ledger-balance", "closing")]["verdict"] == "helps"


def test_two_skills_of_one_name_each_keep_their_own_assertions(tmp_path, monkeypatch, capsys):
    """A marketplace with `skills/csv-report` and `legacy/csv-report` (both named csv-report,
    both with a case `report`). The agent does the same with and without the skill, so
    neither helps; each skill's without-arm must be graded against its own assertions, never
    against the other's (which made the legacy one look like a +100% uplift)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    mp = tmp_path / "marketplace"
    for folder, fmt in (("skills", "markdown"), ("legacy", "plain")):
        d = mp / folder / "csv-report"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: csv-report\ndescription: Write a {fmt} report of a CSV file. Use for "
            f"CSV reports.\n---\n# CSV report ({fmt})\n\nSummarize the columns in "
            f"outputs/report.{fmt[:2]}.\n")
        (d / "data.csv").write_text("city,population\nOslo,709000\nBergen,291000\n")
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": "report", "prompt": f"Write a {fmt} report of data.csv.",
            "expected_outcome": f"outputs/report.{fmt[:2]} exists", "files": ["data.csv"],
            "assertions": [{"type": "file_exists", "path": f"outputs/report.{fmt[:2]}"}]}]}))
    scripts = [Script(name=fmt, match=f"Write a {fmt} report", turns=[
        Turn(tool_calls=[bash(f"mkdir -p outputs && head -1 data.csv > outputs/report."
                              f"{fmt[:2]}")])], final="Report written.")
        for fmt in ("markdown", "plain")]
    store = tmp_path / "store"
    with ScriptedModelServer(scripts) as srv:
        code = main(["uplift", str(mp), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--no-grader", "--epochs", "1", "--out", str(store),
                     "-q"])
    assert code == 0, capsys.readouterr().out
    (with_run,) = (store / "runs").glob("*-with")
    (without_run,) = (store / "runs").glob("*-without")
    report = load(with_run / "uplift.json")
    assert [p["without_status"] for p in report["pairs"]] == ["pass", "pass"]
    for p in report["pairs"]:
        w, wo = with_run / p["with_dir"], without_run / p["without_dir"]
        assert p["with_dir"] == p["without_dir"]
        assert load(w / "assertions.json")["sha256"] == load(wo / "assertions.json")["sha256"]
    assert [s["stats"]["verdict"] for s in report["skills"]] == ["no_difference"] * 2
    # without the skill installed no case can use its files: no coverage table that would
    # flag every file as untouched (a dead script) in the without-run's report
    for bench in without_run.glob("*/builtin/benchmark.json"):
        assert load(bench)["coverage"] is None
    assert "Skill resource coverage" not in (without_run / "report.html").read_text()
    assert "Skill resource coverage" in (with_run / "report.html").read_text()
