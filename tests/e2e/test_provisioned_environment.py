"""Issue 45, class 2: a skill that documents ``uv run scripts/x.py`` with a PEP 723 header gets
the packages it declares, fetched before the case in a phase that reaches only the package
registries, and runs offline from them (`aeval run --runtime literal`, zero keys).

These need the package registry (PyPI): they are skipped, with the reason, where it cannot
be reached; CI runs where it can.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.deployments.cli.main import main


def _registry_reachable() -> bool:
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


pytestmark = [
    pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(not _registry_reachable(), reason="the package registry is unreachable"),
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap: {bwrap_problem()}"),
]

REPORT = '''\
    # /// script
    # requires-python = ">=3.10"
    # dependencies = [DEPS]
    # ///
    """Summarise a CSV of releases as an aligned table, with each date's weekday."""
    import csv
    import sys

    from dateutil import parser
    from tabulate import tabulate


    def main(path):
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        table = [[r["version"], parser.parse(r["date"]).strftime("%a %d %b %Y")] for r in rows]
        print(tabulate(table, headers=["version", "released"]))


    if __name__ == "__main__":
        main(sys.argv[1])
    '''

SKILL_MD = '''\
    ---
    name: release-table
    description: Render a CSV of releases as an aligned plain-text table for a changelog.
    ---

    # Release table

    Print the table of the bundled example and paste it into CHANGELOG.md:

    ```bash
    uv run scripts/report.py examples/releases.csv
    ```
    '''

CSV = "version,date\n1.0.0,2026-01-05\n1.1.0,2026-03-17\n"


def make_skill(mp: Path, deps: str, contract: dict | None = None) -> Path:
    skill = mp / "release-table"
    (skill / "scripts").mkdir(parents=True)
    (skill / "examples").mkdir()
    (skill / "SKILL.md").write_text(dedent(SKILL_MD))
    (skill / "scripts" / "report.py").write_text(dedent(REPORT).replace("DEPS", deps))
    (skill / "examples" / "releases.csv").write_text(CSV)
    if contract is not None:
        (skill / "eval.config").write_text(json.dumps(contract))
    return skill


def run(tmp: Path) -> tuple[int, list[dict], Path]:
    out = tmp / "store"
    code = main(["run", str(tmp / "mp"), "--runtime", "literal", "--out", str(out), "-q"])
    (rd,) = (out / "runs").iterdir()
    (skill,) = json.loads((rd / "run.json").read_text())["skills"]
    return code, skill["cases"], rd


def provisioning(rd: Path, case: dict) -> dict:
    meta = json.loads((rd / case["dir"] / "eval_metadata.json").read_text())
    return meta["attempts"][-1]["provisioning"]


def test_a_skill_that_uv_runs_a_script_with_declared_packages_passes_offline(tmp_path):
    """Was `untested: needs uv`: now the doc test's `uv run` finds uv and the script's
    packages (fetched before the case), and the case passes with no key."""
    make_skill(tmp_path / "mp", '"tabulate>=0.9", "python-dateutil>=2.8"')
    code, (case,), rd = run(tmp_path)
    assert (code, case["status"]) == (0, "pass"), case["reason"]
    p = provisioning(rd, case)
    assert p["declared"] == ["scripts/report.py (PEP 723)"]
    assert any(w.startswith("tabulate-") for w in p["packages"]), p
    assert p["outcome"] in ("built", "cached") and p["reason"] is None, p
    transcript = (rd / case["dir"] / "transcript.md").read_text()
    assert "Mon 05 Jan 2026" in transcript  # dateutil and tabulate really ran


def test_the_cases_of_one_skill_provision_once_and_the_attempt_stays_offline(tmp_path):
    """Four cases of one skill start together: one fetches, three find it cached. A step that
    fetches something the skill did not declare cannot reach the registry from the attempt."""
    step = "uv run $SKILL_DIR/scripts/report.py $SKILL_DIR/examples/releases.csv"
    cases = [{"id": f"table-{i}", "prompt": "Print the release table.",
              "expected_outcome": "The table lists 1.0.0 and 1.1.0 with their weekdays.",
              "steps": [step], "assertions": [{"type": "transcript_contains", "text": "1.1.0"}]}
             for i in range(3)]
    cases.append({"id": "undeclared-fetch", "prompt": "Print the table, then fetch six.",
                  "expected_outcome": "The table is printed.",
                  "steps": [f"{step} && (python -m pip download --no-deps --quiet -d "
                            "\"$TMPDIR/w\" six || echo the registry is out of reach)"],
                  "assertions": [{"type": "transcript_contains",
                                  "text": "the registry is out of reach"}]})
    make_skill(tmp_path / "mp", '"tabulate==0.9.0", "python-dateutil>=2.8"', {"evals": cases})
    _, found, rd = run(tmp_path)
    for case in found:
        assert case["status"] == "pass", (case["case_id"], case["reason"])
    outcomes = sorted(provisioning(rd, c)["outcome"] for c in found)
    assert outcomes.count("built") == 1 and outcomes.count("cached") == len(found) - 1, outcomes


def test_a_package_the_registry_does_not_have_leaves_the_case_untested_naming_it(tmp_path):
    make_skill(tmp_path / "mp", '"tabulate>=0.9", "aeval-test-absent-tablekit-zz"')
    code, (case,), rd = run(tmp_path)
    assert case["status"] == "untested", case
    assert "needs aeval-test-absent-tablekit-zz" in case["reason"], case["reason"]
    assert code == 0
    p = provisioning(rd, case)
    assert "aeval-test-absent-tablekit-zz (not on the package registry)" in p["reason"], p
    assert any(w.startswith("tabulate-") for w in p["packages"]), p  # the rest was fetched
