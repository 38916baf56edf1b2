"""The worst a case's output can do is fail its own case. Skills whose steps write what a
hostile (or merely unlucky) skill writes run under one real `aeval run` with the literal
runtime: a line on which the contract's backtracking-prone pattern ``^(a+)+$`` would take
longer than the age of the universe with Python's ``re`` (in a file, in stdout, in the
transcript), a JSON document with a 5,000-digit number and one nested 200,000 deep. Each such
case ends `fail` with the reason, beside a healthy skill that passes; no case is `internal`
and aeval's own process never hangs (a hang is this test's subprocess timeout). A contract
whose pattern needs backtracking (a backreference) is `invalid` with one line naming the
field, already at `aeval validate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None,
                                 reason=f"bubblewrap: {bwrap_problem()}")

AEVAL = os.path.join(os.path.dirname(sys.executable), "aeval")
# a line no backtracking engine gets through under ^(a+)+$: 2^60 ways to split the a's
RUN_OF_AS = "a" * 60 + "b"

EXPORT = f'''"""Export the ledger's batch ids, one per line."""
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "export")
out.mkdir(parents=True, exist_ok=True)
(out / "ids.txt").write_text("batch ids\\n{RUN_OF_AS}\\n")
(out / "totals.json").write_text('{{"total": ' + "9" * 5000 + '}}')
(out / "tree.json").write_text("[" * 200000 + "]" * 200000)
print("{RUN_OF_AS}")
'''


def ledger_skill(root: Path, name: str, assertions: list[dict]) -> None:
    """A skill whose script exports a ledger: ids, totals, the account tree."""
    d = root / name
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Export the ledger's batch ids and totals.\n---\n"
        f"# Ledger export\n\n```bash\npython3 scripts/export.py export\n```\n")
    (d / "scripts" / "export.py").write_text(EXPORT)
    (d / "eval.config").write_text(json.dumps({"evals": [{
        "id": "export", "prompt": "Export the ledger.", "expected_outcome": "The export.",
        "steps": ["python3 $SKILL_DIR/scripts/export.py export"],
        "assertions": assertions}]}))


def marketplace(root: Path) -> Path:
    mp = root / "ledger-skills"
    ledger_skill(mp, "ids-file", [
        {"type": "file_contains", "path": "export/ids.txt", "pattern": "^(a+)+$"}])
    ledger_skill(mp, "ids-stdout", [
        {"type": "command", "run": "python3 $SKILL_DIR/scripts/export.py again",
         "stdout": "^(a+)+$"}])
    ledger_skill(mp, "ids-transcript", [
        {"type": "transcript_regex", "pattern": "^(a+)+$", "source": "tool_output"}])
    ledger_skill(mp, "totals", [
        {"type": "json_path", "path": "export/totals.json", "query": "total"}])
    ledger_skill(mp, "tree", [
        {"type": "json_path", "path": "export/tree.json", "query": "[0]"}])
    ledger_skill(mp, "healthy", [
        {"type": "file_contains", "path": "export/ids.txt", "pattern": "^batch ids$"},
        {"type": "command", "run": "python3 $SKILL_DIR/scripts/export.py again",
         "stdout": "^a+b$"}])
    return mp


def aeval(args: list[str], tmp_path: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), COLUMNS="200")
    return subprocess.run([AEVAL, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


@needs_bwrap
def test_a_hostile_output_fails_its_own_case_and_nothing_else(tmp_path):
    mp = marketplace(tmp_path)
    r = aeval(["run", str(mp), "--out", str(tmp_path / "store"), "--sandbox", "require"],
              tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out  # fail: a skill's case failed; not 4 (internal), no hang
    (rd,) = (tmp_path / "store" / "runs").iterdir()

    def evidence(name: str) -> str:
        g = json.loads((rd / name / "literal" / "export" / "grading.json").read_text())
        return " | ".join(e["evidence"] for e in g["expectations"] if not e["passed"])

    run = json.loads((rd / "run.json").read_text())
    statuses = {s["name"]: s["status"] for s in run["skills"]}
    assert statuses == {"ids-file": "fail", "ids-stdout": "fail", "ids-transcript": "fail",
                        "totals": "fail", "tree": "fail", "healthy": "pass"}, statuses
    assert "/^(a+)+$/ not found in export/ids.txt" in evidence("ids-file")
    assert "stdout does not match /^(a+)+$/" in evidence("ids-stdout")
    assert "not valid JSON" in evidence("totals") and "5000 digits" in evidence("totals")
    assert "nested deeper than 100 levels" in evidence("tree")
    assert "/^(a+)+$/" in evidence("ids-transcript")


@needs_bwrap
def test_a_skill_script_that_raises_before_a_long_blank_block_ends_in_its_verdict(tmp_path):
    """The issue's SKILL.md: the documented script raises, and the next block is 300 KB of
    blank lines (as a generator that pads its output writes it). Under the doc test, aeval's
    own line-anchored patterns read that block and the failure's output: with ``^\\s*``
    under MULTILINE each line start ran over every following blank line (minutes for
    150 KB, four times that for 300 KB: this test's timeout). Now the case ends `fail` on
    the script's own error."""
    d = tmp_path / "skills" / "ledger-report"
    (d / "scripts").mkdir(parents=True)
    script = d / "scripts" / "report.py"
    script.write_text("#!/usr/bin/env python3\n\"\"\"Summarise the ledger.\"\"\"\nimport sys\n\n"
                      "raise ValueError('no ledger rows for ' + ' '.join(sys.argv[1:]))\n")
    script.chmod(0o755)
    (d / "SKILL.md").write_text(
        "---\nname: ledger-report\ndescription: Summarise the ledger into a report.\n---\n"
        "# Ledger report\n\nSummarise:\n\n```bash\npython3 scripts/report.py summary\n```\n\n"
        "Then the batch:\n\n```bash\n" + "\n" * 300_000 + "echo batch done\n```\n")
    r = aeval(["run", str(d), "--out", str(tmp_path / "store"), "--sandbox", "require"],
              tmp_path, timeout=240)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "ValueError: no ledger rows for summary" in out
