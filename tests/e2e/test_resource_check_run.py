"""What SKILL.md relies on, through `aeval run`, zero-key (literal runtime, real bubblewrap,
real Prefect): a ledger-export skill whose documented call lacks the option its script now
requires, and whose house-rules JSON (loaded by the script) is corrupt, fails S0 before
anything runs: exit 1, `fail`, and the console and run.json name SKILL.md's line, the
script's line declaring the option, and the JSON's line and column."""

from __future__ import annotations

import json

import pytest

from aeval.deployments.cli.main import main
from tests.unit.test_resource_check import EXPORT_PY, LINT_PY, build, front

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

SKILL = front("ledger-export", "Export a ledger to JSON or CSV reports. Use when asked for a "
                               "ledger report.") + """\
# Ledger export

Check the descriptions against the house rules, then export the month's ledger:

```bash
python3 scripts/lint.py
python3 scripts/export.py assets/ledger.csv --format csv
```
"""


def test_a_documented_call_lacking_a_required_option_and_a_corrupt_resource_fail_the_run(
        tmp_path, capsys):
    mp, out = tmp_path / "mp", tmp_path / "store"
    build(mp / "ledger-export", {
        "SKILL.md": SKILL,
        "scripts/export.py": EXPORT_PY,
        "scripts/lint.py": LINT_PY,
        "assets/ledger.csv": "date,amount\n2026-01-02,12.50\n",
        "data/rules.json": '{\n  "passive": "avoid",\n  "jargon": "avoid"\n  "length": 80\n}\n',
    })
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 1, console
    for needle in ("SKILL.md line 11: runs scripts/export.py without --currency, which it "
                   "requires (scripts/export.py line 13: required=True)",
                   "scripts/lint.py line 4: relies on data/rules.json, which is not valid "
                   "JSON: line 4 column 3"):
        assert needle in console, (needle, console)
    (rd,) = (out / "runs").iterdir()
    (skill,) = json.loads((rd / "run.json").read_text())["skills"]
    assert skill["status"] == "fail", skill
    text = json.dumps(skill)
    assert "without --currency" in text and "data/rules.json" in text, text
