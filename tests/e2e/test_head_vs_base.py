"""`aeval run --changed-since BASE --compare-base` end to end: a small marketplace in a git
repository, a merge request that changes one skill, the literal runtime (deterministic) for
both versions, and a scripted comparative grader on the loopback model server that prefers
the output holding the right balance wherever it is shown (as a careful grader would), or
says tie when both hold it.

- the head fixes the base's defect: the head wins on outcome, the head run's gate is its own;
- the head is correct but slower: a tie on outcome, the wall time shows the cost;
- a grader that always prefers the first position: ties, recorded as position bias.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from aeval.artifacts import json_schema
from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, Turn
from tests.e2e.comparative_scripts import COMPARE, GRADER, careful

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

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
BALANCE_PY = """import argparse, csv, json, pathlib, time
from decimal import Decimal

p = argparse.ArgumentParser()
p.add_argument("ledger")
p.add_argument("--out", required=True)
a = p.parse_args()
rows = list(csv.DictReader(open(a.ledger)))
{delay}total = sum((Decimal(r["amount"]) for r in {rows}), Decimal("0"))
out = pathlib.Path(a.out)
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps({{"closing": f"{{total:.2f}}", "rows": len(rows)}}))
print(f"closing balance {{total:.2f}} over {{len(rows)}} rows")
"""
CORRECT = BALANCE_PY.format(delay="", rows="rows")
SKIPS_LAST_ROW = BALANCE_PY.format(delay="", rows="rows[:-1]")  # the defect: 39.75
SLOW = BALANCE_PY.format(delay="time.sleep(1.5)  # re-reads the bank's rate table\n",
                         rows="rows")
NOTES_MD = """---
name: meeting-notes
description: Turn raw meeting notes into a summary with decisions and action items. Use when
  asked to summarize a meeting.
---
# Meeting notes

```bash
python3 scripts/notes.py fixtures/raw.txt --out outputs/summary.md
```
"""
NOTES_PY = """import argparse, pathlib

p = argparse.ArgumentParser()
p.add_argument("raw")
p.add_argument("--out", required=True)
a = p.parse_args()
lines = [ln.strip() for ln in open(a.raw) if ln.strip()]
out = pathlib.Path(a.out)
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("# Summary\\n" + "\\n".join(f"- {ln}" for ln in lines) + "\\n")
"""
CASE = {
    "id": "closing",
    "prompt": "Compute the closing balance of fixtures/ledger.csv into outputs/balance.json.",
    "expected_outcome": "outputs/balance.json holds the closing balance 42.50 over 3 rows.",
    "files": ["fixtures/"],
    "steps": ["python3 $SKILL_DIR/scripts/balance.py fixtures/ledger.csv "
              "--out outputs/balance.json"],
    "assertions": [{"type": "json_path", "path": "outputs/balance.json", "query": "closing",
                    "equals": "42.50"}]}

RIGHT = r'\\"closing\\": \\"42\.50\\"|"closing": "42\.50"'
# a careful grader: the output with the right balance wins wherever it is shown
CAREFUL = careful(RIGHT, "closing balance 42.50", "the expected closing balance")
FIRST_POSITION = [Script(name="first", match=COMPARE, turns=[Turn(text=json.dumps(
    {"winner": "A", "reasons": [{"output": "A", "quote": "closing balance",
                                 "why": "it prints a balance"}]}))])]
# the case grader (the run's grader model grades every case too): A1 as the check found it
CASE_GRADER = Script(name="grader", match=GRADER, turns=[Turn(text=json.dumps({
    "expectations": [{"id": "A1", "passed": True, "needed_correction": False,
                      "evidence": "outputs/balance.json"}],
    "claims": [], "eval_feedback": {"suggestions": [], "overall": "ok"}}))])


def sh(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def marketplace(root: Path, balance_py: str) -> Path:
    """A git repository with two skills on main (the ledger's script is ``balance_py``)."""
    root.mkdir()
    sh(root, "init", "-q", "-b", "main")
    sh(root, "config", "user.email", "dev@example.com")
    sh(root, "config", "user.name", "dev")
    ledger = root / "skills" / "ledger-balance"
    (ledger / "scripts").mkdir(parents=True)
    (ledger / "fixtures").mkdir()
    (ledger / "SKILL.md").write_text(LEDGER_MD)
    (ledger / "scripts" / "balance.py").write_text(balance_py)
    (ledger / "fixtures" / "ledger.csv").write_text(
        "date,amount\n2026-01-02,100.10\n2026-01-05,-60.35\n2026-01-09,2.75\n")
    (ledger / "eval.config").write_text(json.dumps({"evals": [CASE]}, indent=2))
    notes = root / "skills" / "meeting-notes"
    (notes / "scripts").mkdir(parents=True)
    (notes / "fixtures").mkdir()
    (notes / "SKILL.md").write_text(NOTES_MD)
    (notes / "scripts" / "notes.py").write_text(NOTES_PY)
    (notes / "fixtures" / "raw.txt").write_text("ship on friday\nana writes the changelog\n")
    (root / "README.md").write_text("Our team's skills.\n")
    sh(root, "add", "-A")
    sh(root, "commit", "-qm", "ledger-balance and meeting-notes")
    return root


def merge_request(repo: Path, balance_py: str) -> None:
    """Branch `mr` with the ledger's script replaced, checked out (the MR's head)."""
    sh(repo, "checkout", "-qb", "mr")
    (repo / "skills" / "ledger-balance" / "scripts" / "balance.py").write_text(balance_py)
    sh(repo, "commit", "-qam", "ledger-balance: change the script")


@pytest.fixture(autouse=True)
def env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")


def compare_base(repo: Path, out: Path, scripts: list[Script], capsys) -> tuple[int, dict, str]:
    with ScriptedModelServer([CASE_GRADER, *scripts]) as srv:
        code = main(["run", str(repo), "--changed-since", "main", "--compare-base",
                     "--runtime", "literal", "--grader-model", "openai/scripted",
                     "--api-base", srv.base_url_openai, "--out", str(out), "-q"])
        asked = [r for r in srv.requests if r.script in {s.name for s in scripts}]
    printed = capsys.readouterr().out
    (head_dir,) = [d for d in (out / "runs").iterdir() if not d.name.endswith("-base")]
    report = json.loads((head_dir / "head_vs_base.json").read_text())
    jsonschema.validate(report, json_schema("head-vs-base"))
    # blind: nothing the comparative grader saw names a version or either run
    assert len(asked) == 2 * len(report["cases"])
    for r in asked:
        sent = json.dumps(r.body["messages"])
        assert head_dir.name not in sent and "-base" not in sent and "/mr" not in sent
    return code, report, printed


def test_a_head_that_fixes_the_bases_defect_wins(tmp_path, capsys):
    repo = marketplace(tmp_path / "mp", SKIPS_LAST_ROW)
    merge_request(repo, CORRECT)
    code, report, printed = compare_base(repo, tmp_path / "store", CAREFUL, capsys)
    assert code == 0  # the head's own gate: its case passed
    (skill,) = report["skills"]  # meeting-notes did not change: not run, not compared
    assert skill["skill"] == "ledger-balance"
    assert (skill["wins"], skill["ties"], skill["losses"], skill["ungraded"]) == (1, 0, 0, 0)
    (case,) = report["cases"]
    assert (case["head"]["status"], case["base"]["status"]) == ("pass", "fail")
    assert case["verdict"] == "head" and case["reason"] == "the head preferred in both orders"
    assert [o["winner"] for o in case["orders"]] == ["A", "B"]
    assert "| ledger-balance | literal | 1 | 0 | 0 | 0 |" in printed
    # the base's run is a run of its own, of the skill as it was at main
    base_dir = tmp_path / "store" / "runs" / report["base_run"]
    grading = json.loads((base_dir / "ledger-balance" / "literal" / "closing"
                          / "grading.json").read_text())
    assert grading["status"] == "fail"
    html = (tmp_path / "store" / "runs" / report["head_run"] / "report.html").read_text()
    assert "Head against base" in html and report["base_run"] in html


def test_a_head_that_is_correct_but_slower_ties_on_outcome(tmp_path, capsys):
    repo = marketplace(tmp_path / "mp", CORRECT)
    merge_request(repo, SLOW)
    code, report, _ = compare_base(repo, tmp_path / "store", CAREFUL, capsys)
    assert code == 0
    (skill,) = report["skills"]
    assert (skill["wins"], skill["ties"], skill["losses"]) == (0, 1, 0)
    assert skill["position_bias"] == 0  # a tie in both orders, not a cancelled bias
    (case,) = report["cases"]
    assert case["reason"] == "a tie in both orders"
    assert case["head"]["wall_s"] > case["base"]["wall_s"] + 1.0
    assert skill["head_mean_wall_s"] > skill["base_mean_wall_s"] + 1.0
    # the cost is a loss on efficiency, named by the figure that decided it
    assert skill["efficiency"] == "worse" and "wall seconds" in skill["efficiency_reason"]
    html = (tmp_path / "store" / "runs" / report["head_run"] / "report.html").read_text()
    assert 'class="fail" title="over 1.2x the base' in html


def test_a_grader_biased_to_the_first_position_cannot_make_either_version_win(tmp_path,
                                                                              capsys):
    repo = marketplace(tmp_path / "mp", SKIPS_LAST_ROW)
    merge_request(repo, CORRECT)
    _, report, printed = compare_base(repo, tmp_path / "store", FIRST_POSITION, capsys)
    (case,) = report["cases"]
    assert case["verdict"] == "tie" and "position bias" in case["reason"]
    assert [o["preferred"] for o in case["orders"]] == ["head", "base"]
    (skill,) = report["skills"]
    assert (skill["wins"], skill["ties"], skill["losses"], skill["position_bias"]) == \
        (0, 1, 0, 1)
    assert "1 (1 position bias)" in printed


def test_the_mr_flow_compares_head_with_base_when_asked(tmp_path):
    """The MR flow (its own clone at head) with `compare_base`: the same comparison, and the
    flow run ends as the head's gate."""
    from aeval.flows.mr import evaluate_mr
    from aeval.run.requests import MrRequest

    repo = marketplace(tmp_path / "mp", SKIPS_LAST_ROW)
    merge_request(repo, CORRECT)
    sh(repo, "checkout", "-q", "main")  # the serving checkout is not the MR's head
    with ScriptedModelServer([CASE_GRADER, *CAREFUL]) as srv:
        state = evaluate_mr(MrRequest(
            repo=str(repo), base="main", head="mr", runtimes=["literal"],
            grader_model="openai/scripted", api_base=srv.base_url_openai,
            store=str(tmp_path / "s"), compare_base=True), return_state=True)
    assert state.is_completed(), state
    (head_dir,) = [d for d in (tmp_path / "s" / "runs").iterdir()
                   if not d.name.endswith("-base")]
    report = json.loads((head_dir / "head_vs_base.json").read_text())
    assert [(s["skill"], s["wins"], s["losses"]) for s in report["skills"]] == \
        [("ledger-balance", 1, 0)]


def test_compare_base_without_a_change_is_a_usage_error(tmp_path, capsys):
    repo = marketplace(tmp_path / "mp", CORRECT)
    assert main(["run", str(repo), "--compare-base", "--out", str(tmp_path / "s")]) == 2
    assert "--compare-base needs --changed-since BASE" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
