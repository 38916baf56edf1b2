"""A skill author who already has Anthropic skill-creator's ``evals/evals.json`` gets cases at
once (issue 46): without an eval.config, aeval reads that file (per-skill tier) — its prompts,
expected outputs, input files and expectations — validates it with one line per problem in
the file's own field names, and runs its cases like any other (here the builtin agent loop
against the scripted model server)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from aeval.skill.contract import Tier, load_contract
from aeval.skill.skill_md import load_skill
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

TOTALS = textwrap.dedent('''\
    #!/usr/bin/env python3
    """Sum the amount column of an invoice CSV and print the total with its currency."""
    import csv
    import sys

    rows = list(csv.DictReader(open(sys.argv[1], newline="")))
    total = sum(float(r["amount"]) for r in rows)
    print(f"TOTAL {total:.2f} {rows[0]['currency']}")
''')

EVALS = {
    "skill_name": "invoice-sum",
    "evals": [
        {"id": 1, "prompt": "What is the total of the invoice in evals/files/march.csv?",
         "expected_output": "The total 1234.50 EUR is reported.",
         "files": ["evals/files/march.csv"],
         "expectations": ["The answer states the total 1234.50 EUR",
                          "The skill's sum script was used rather than mental arithmetic"]},
        {"id": 2, "prompt": "Sum the invoice at evals/files/march.csv and say the currency.",
         "expected_output": "EUR is named as the currency.",
         "files": ["evals/files/march.csv"],
         "expectations": ["The currency EUR is named"]},
    ],
}


def invoice_skill(root: Path, evals: dict | None = None) -> Path:
    skill = root / "invoice-sum"
    (skill / "scripts").mkdir(parents=True)
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "SKILL.md").write_text(textwrap.dedent("""\
        ---
        name: invoice-sum
        description: Total an invoice exported as CSV (amount and currency columns).
        ---

        # Invoice sum

        ```bash
        python3 scripts/total.py evals/files/march.csv
        ```

        It prints `TOTAL <amount> <currency>`.
        """))
    (skill / "scripts" / "total.py").write_text(TOTALS)
    (skill / "evals" / "files" / "march.csv").write_text(
        "item,amount,currency\nhosting,1000.00,EUR\nsupport,234.50,EUR\n")
    (skill / "evals" / "evals.json").write_text(json.dumps(evals or EVALS, indent=2))
    return skill


def test_skill_creator_evals_are_the_skills_cases(tmp_path):
    skill = invoice_skill(tmp_path)
    loaded = load_contract(load_skill(skill), None)
    assert loaded.tier == Tier.per_skill
    assert loaded.source == str(skill / "evals" / "evals.json")
    first, second = loaded.config.evals
    assert (first.id, second.id) == ("1", "2")
    assert first.expected_outcome == "The total 1234.50 EUR is reported."
    assert first.files == ["evals/files/march.csv"]
    assert first.assertions == EVALS["evals"][0]["expectations"]
    assert main(["validate", str(skill)]) == 0


def test_a_broken_skill_creator_file_is_one_line_in_its_own_field_names(tmp_path, capsys):
    broken = json.loads(json.dumps(EVALS))
    del broken["evals"][1]["expected_output"]
    broken["evals"][0]["expectations"] = "The total is right"
    skill = invoice_skill(tmp_path, broken)
    assert main(["validate", str(skill)]) == 2
    cap = capsys.readouterr()
    err = cap.err + cap.out
    where = skill / "evals" / "evals.json"
    assert f"{where}:evals[1].expected_output: Field required" in err, err
    assert f"{where}:evals[0].expectations: " in err, err


def test_an_agent_run_follows_the_skill_creator_cases(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-skill-creator-canary")
    skill = invoice_skill(tmp_path)
    run_total = ToolCall(name="bash", arguments={
        "command": "python3 .agents/skills/invoice-sum/scripts/total.py evals/files/march.csv"})
    scripts = [Script(name=f"case-{n}", match=EVALS["evals"][n - 1]["prompt"][:40], turns=[
        Turn(tool_calls=[run_total]), Turn(text="The total is 1234.50 EUR.")]) for n in (1, 2)]
    with ScriptedModelServer(scripts) as srv:
        code = main(["run", str(skill), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(tmp_path / "out"), "-q",
                     "--no-grader"])
        assert srv.requests_for("case-1") and srv.requests_for("case-2")
    (run_dir,) = (tmp_path / "out" / "runs").iterdir()
    manifest = json.loads((run_dir / "run.json").read_text())
    (entry,) = manifest["skills"]
    assert sorted(c["case_id"] for c in entry["cases"]) == ["1", "2"]
    case = run_dir / "invoice-sum" / "builtin" / "1"
    meta = json.loads((case / "eval_metadata.json").read_text())
    assert meta["tier"] == "per-skill"
    text = json.dumps(json.loads((case / "assertions.json").read_text()))
    assert "The answer states the total 1234.50 EUR" in text
    # natural-language expectations with no grader are ungraded, never passed (exit 3)
    assert code == 3, manifest
