"""Issue 47, items 2-3, zero-key through `aeval run --runtime literal`: every case records
what its graded attempt cost (commands, tool calls, wall time; no model, so no turns or
tokens) in eval_metadata.json, grading.json, summary.md and report.html; eval.config's
budgets fail a case with the measured figure as evidence; files a run leaves outside the
case's declared outputs are listed, and `no_stray_files` fails naming them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.deployments.cli.main import main

pytestmark = pytest.mark.usefixtures("prefect_harness")

REPORT_PY = '''\
    #!/usr/bin/env python3
    """Summarize a sales CSV export: validate it, total it per region, render Markdown."""
    import argparse
    import csv
    import json
    import os
    import sys

    MESSY = {messy}


    def rows(path):
        with open(path, newline="") as fh:
            return list(csv.DictReader(fh))


    def main():
        ap = argparse.ArgumentParser(prog="report.py")
        sub = ap.add_subparsers(dest="cmd", required=True)
        v = sub.add_parser("validate")
        v.add_argument("csv")
        t = sub.add_parser("totals")
        t.add_argument("csv")
        t.add_argument("--out", required=True)
        r = sub.add_parser("render")
        r.add_argument("totals")
        r.add_argument("--out", required=True)
        args = ap.parse_args()
        if args.cmd == "validate":
            data = rows(args.csv)
            bad = [i for i, row in enumerate(data, 2) if not row["amount"].strip()]
            if bad:
                sys.exit(f"error: {{args.csv}}: empty amount on line(s) {{bad}}")
            print(f"{{len(data)}} rows ok")
        elif args.cmd == "totals":
            totals = {{}}
            for row in rows(args.csv):
                totals[row["region"]] = totals.get(row["region"], 0) + float(row["amount"])
            with open(args.out, "w") as fh:
                json.dump(totals, fh, indent=1)
            if MESSY:  # a leftover debugging aid: droppings beside the output
                with open("debug.log", "a") as fh:
                    fh.write(f"totals: {{totals}}\\n")
                os.makedirs("tmp", exist_ok=True)
                with open("tmp/cache.json", "w") as fh:
                    json.dump({{"rows": len(totals)}}, fh)
        else:
            with open(args.totals) as fh:
                totals = json.load(fh)
            with open(args.out, "w") as fh:
                fh.write("# Sales report\\n\\n## Totals\\n\\n")
                for region, amount in sorted(totals.items()):
                    fh.write(f"- {{region}}: {{amount:.2f}}\\n")
            print(f"wrote {{args.out}}")


    main()
    '''

SKILL_MD = '''\
    ---
    name: {name}
    description: Summarize a sales CSV export into a Markdown report - validate the export,
      total the amounts per region, and render report.md.
    ---
    # Sales report

    Validate the export, total it per region, then render the report:

    ```bash
    python3 scripts/report.py validate data/sales.csv
    python3 scripts/report.py totals data/sales.csv --out totals.json
    python3 scripts/report.py render totals.json --out report.md
    ```
    '''

SALES = "region,amount\nnorth,120.50\nsouth,80\nnorth,19.50\neast,42\n"

STEPS = [
    "python3 $SKILL_DIR/scripts/report.py validate data/sales.csv",
    "python3 $SKILL_DIR/scripts/report.py totals data/sales.csv --out totals.json",
    "python3 $SKILL_DIR/scripts/report.py render totals.json --out report.md",
    "test -s report.md",
    "grep -c '^- ' report.md",
]


def case(case_id: str, **extra) -> dict:
    return {"id": case_id, "prompt": "Write report.md from data/sales.csv with the skill.",
            "expected_outcome": "report.md lists the total per region.",
            "files": ["data/"], "steps": STEPS,
            "assertions": [{"type": "file_contains", "path": "report.md",
                            "pattern": "north: 140.00"}], **extra}


def skill(name: str, cases: list[dict], messy: bool = False) -> dict[str, str]:
    return {"SKILL.md": dedent(SKILL_MD.format(name=name)),
            "scripts/report.py": dedent(REPORT_PY.format(messy=messy)),
            "data/sales.csv": SALES,
            "eval.config": json.dumps({"evals": cases}, indent=1)}


def run(tmp: Path, skills: dict[str, dict[str, str]]) -> tuple[int, Path]:
    mp, out = tmp / "mp", tmp / "store"
    for name, files in skills.items():
        for rel, text in files.items():
            p = mp / "skills" / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            os.chmod(p, 0o644)
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out), "-q"])
    (rd,) = (out / "runs").iterdir()
    return code, rd


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def expectation(grading: dict, text: str) -> dict:
    (e,) = [e for e in grading["expectations"] if e["text"] == text]
    return e


def test_budgets_fail_a_case_with_the_measured_figure_and_efficiency_is_recorded(tmp_path):
    code, rd = run(tmp_path, {"sales-report": skill("sales-report", [
        case("tight", max_commands=3),
        case("slow", max_wall_s=0.001),  # five real processes never finish in a millisecond
        case("roomy", max_commands=10, max_wall_s=600, max_tokens=1000, max_turns=5),
    ])})
    base = rd / "sales-report" / "literal"
    tight, slow, roomy = (load(base / c / "grading.json") for c in ("tight", "slow", "roomy"))

    assert tight["status"] == "fail", tight["status_reason"]
    b = expectation(tight, "at most 3 commands")
    assert (b["id"], b["passed"], b["evidence"]) == ("B1", False, "ran 5 commands")
    assert tight["status_reason"].startswith("over budget: B1 at most 3 commands: ran 5 "
                                             "commands"), tight["status_reason"]
    # the author's own assertion still passed: the budget alone failed the case
    assert expectation(tight, "File report.md matches /north: 140.00/")["passed"] is True

    assert slow["status"] == "fail", slow["status_reason"]
    b = expectation(slow, "at most 0.001 s of wall time")
    assert b["passed"] is False and b["evidence"].startswith("took "), b

    assert roomy["status"] == "pass", roomy["status_reason"]
    # literal runs no model: turns and tokens are not budgeted, commands and wall time are
    assert [(e["id"], e["text"], e["passed"]) for e in roomy["expectations"]
            if e["id"].startswith("B")] == [("B1", "at most 10 commands", True),
                                            ("B2", "at most 600 s of wall time", True)]
    assert expectation(roomy, "at most 10 commands")["evidence"] == "ran 5 commands"

    meta = load(base / "roomy" / "eval_metadata.json")
    eff = meta["efficiency"]
    assert (eff["commands"], eff["tool_calls"], eff["turns"], eff["tokens"],
            eff["input_tokens"]) == (5, 5, None, None, None)
    assert 0 < eff["wall_s"] == meta["wall_s"]
    assert roomy["efficiency"] == eff and roomy["execution_metrics"]["commands"] == 5
    # assertions.json holds the budgets before anything ran, typed
    spec = [a for a in load(base / "roomy" / "assertions.json")["assertions"]
            if a["id"] == "B1"]
    assert spec[0]["check"] == {"type": "budget", "measure": "commands", "at_most": 10,
                                "description": None, "vs_base": None, "base": None}

    summary = (base / "summary.md").read_text()
    assert "| case | turns | tool calls | commands | tokens in / cached / out | wall |" \
           in summary
    assert "| tight | – | 5 | 5 | – |" in summary, summary
    html = (rd / "report.html").read_text()
    assert "<h2>Efficiency</h2>" in html and "at most 3 commands" in html
    assert code == 1


def test_stray_files_are_listed_and_no_stray_files_fails_naming_them(tmp_path):
    strict = [{"type": "file_contains", "path": "report.md", "pattern": "north: 140.00"},
              {"type": "no_stray_files"}]
    code, rd = run(tmp_path, {
        "messy-report": skill("messy-report", [
            case("report", outputs=["totals.json"], assertions=strict),
            # no no_stray_files: the strays are still listed, the case passes
            case("listed", outputs=["report.md", "totals.json"])], messy=True),
        "clean-report": skill("clean-report", [
            case("report", outputs=["*.json"], assertions=strict),
            case("undeclared")]),  # declares report.md only through its file check
    })
    messy = load(rd / "messy-report" / "literal" / "report" / "grading.json")
    assert messy["status"] == "fail", messy["status_reason"]
    e = expectation(messy, "No file is left outside the case's declared outputs")
    assert (e["passed"], e["evidence"]) == (False, "2 stray files: debug.log, tmp/cache.json")
    assert messy["stray_files"] == ["debug.log", "tmp/cache.json"]
    meta = load(rd / "messy-report" / "literal" / "report" / "eval_metadata.json")
    assert meta["stray_files"] == ["debug.log", "tmp/cache.json"]
    # the skill copy's own folder is never stray, though the doc test ran inside it

    listed = load(rd / "messy-report" / "literal" / "listed" / "grading.json")
    assert listed["status"] == "pass", listed["status_reason"]
    assert listed["stray_files"] == ["debug.log", "tmp/cache.json"]

    clean = load(rd / "clean-report" / "literal" / "report" / "grading.json")
    assert clean["status"] == "pass", clean["status_reason"]
    assert clean["stray_files"] == []
    assert expectation(clean, "No file is left outside the case's declared outputs")[
        "evidence"] == "no file outside the declared outputs"
    undeclared = load(rd / "clean-report" / "literal" / "undeclared" / "grading.json")
    assert undeclared["stray_files"] == ["totals.json"]

    summary = (rd / "messy-report" / "literal" / "summary.md").read_text()
    assert "debug.log, tmp/cache.json |" in summary
    assert "debug.log, tmp/cache.json" in (rd / "report.html").read_text()
    assert code == 1


def test_an_agent_runs_tokens_and_turns_are_measured_and_its_token_budget_holds(
        tmp_path, monkeypatch):
    """The builtin agent against the scripted model (fixed token counts per turn): turns,
    tool calls, commands and tokens are the run's own; a token budget fails the case with
    the tokens it used, and the note the agent left beside the report is stray."""
    from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn

    monkeypatch.setenv("OPENAI_API_KEY", "sk-efficiency-test")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    spent = {"input_tokens": 1000, "cached_input_tokens": 500, "output_tokens": 50}
    tool = ".agents/skills/sales-report/scripts/report.py"

    def bash(cmd: str) -> ToolCall:
        return ToolCall(name="bash", arguments={"command": cmd})

    agent = Script(name="agent", match="Write report.md from data/sales.csv", turns=[
        Turn(text="Checking the export first.", usage=spent,
             tool_calls=[bash(f"python3 {tool} validate data/sales.csv")]),
        Turn(usage=spent, tool_calls=[
            bash(f"python3 {tool} totals data/sales.csv --out totals.json"),
            ToolCall(name="write_file", arguments={
                "path": "notes.md", "content": "north has two rows; totals look right\n"})]),
        Turn(usage=spent, tool_calls=[
            bash(f"python3 {tool} render totals.json --out report.md")]),
        Turn(text="report.md lists the totals per region.", usage=spent)])
    files = skill("sales-report", [case("agent", max_tokens=5000, max_commands=5,
                                        outputs=["report.md", "totals.json"])])
    mp, out = tmp_path / "mp", tmp_path / "store"
    for rel, text in files.items():
        (mp / "sales-report" / rel).parent.mkdir(parents=True, exist_ok=True)
        (mp / "sales-report" / rel).write_text(text)
    with ScriptedModelServer([agent]) as srv:
        code = main(["run", str(mp / "sales-report"), "--model", "openai/scripted",
                     "--api-base", srv.base_url_openai, "--out", str(out), "-q",
                     "--no-grader"])
    (rd,) = (out / "runs").iterdir()
    g = load(rd / "sales-report" / "builtin" / "agent" / "grading.json")
    eff = g["efficiency"]
    assert (eff["turns"], eff["tool_calls"], eff["commands"]) == (4, 4, 3), eff
    assert (eff["input_tokens"], eff["cached_input_tokens"], eff["output_tokens"],
            eff["tokens"]) == (4000, 2000, 200, 6200), eff
    assert [(e["id"], e["text"], e["passed"], e["evidence"]) for e in g["expectations"]
            if e["id"].startswith("B")] == [
        ("B1", "at most 5,000 tokens", False,
         "used 6,200 tokens (input 4,000, cached 2,000, output 200)"),
        ("B2", "at most 5 commands", True, "ran 3 commands")]
    assert g["status"] == "fail" and g["status_reason"].startswith("over budget: B1"), g
    assert g["stray_files"] == ["notes.md"]
    summary = (rd / "sales-report" / "builtin" / "summary.md").read_text()
    assert "| agent | 4 | 4 | 3 | 4,000 / 2,000 / 200 |" in summary, summary
    assert code == 1
