"""Issue 45, class 2: a skill that declares its packages in a ``requirements.txt`` beside its
scripts (or at its root) or in its ``pyproject.toml`` gets them, fetched before the case in the
phase that reaches only the package registries, and its documented ``python scripts/x.py`` or
``uv run scripts/x.py`` runs offline from them (`aeval run --runtime literal`, zero keys).

These need the package registry (PyPI): they are skipped, with the reason, where it cannot
be reached; CI runs where it can.
"""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from tests.e2e.test_provisioned_environment import CSV, _registry_reachable, provisioning, run

pytestmark = [
    pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(not _registry_reachable(), reason="the package registry is unreachable"),
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap: {bwrap_problem()}"),
]

REPORT = '''\
    """Summarise a CSV of releases as an aligned table, with each date's weekday."""
    import csv
    import sys

    from dateutil import parser
    from tabulate import tabulate
    IMPORTS

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
    name: csv-report
    description: Render a CSV of releases as an aligned plain-text table for a changelog.
    ---

    # CSV report

    Install the packages the script needs once, then print the table of the bundled
    example and paste it into CHANGELOG.md:

    ```bash
    COMMAND
    ```
    '''

PYPROJECT = '''\
    [project]
    name = "csv-report"
    version = "0.3.0"
    requires-python = ">=3.10"
    dependencies = [DEPS]
    '''


def make_skill(mp: Path, command: str, requirements: str | None = None,
               requirements_at: str = "scripts", pyproject: str | None = None,
               imports: str = "", contract: dict | None = None) -> Path:
    skill = mp / "csv-report"
    (skill / "scripts").mkdir(parents=True)
    (skill / "examples").mkdir()
    (skill / "SKILL.md").write_text(dedent(SKILL_MD).replace("COMMAND", command))
    (skill / "scripts" / "report.py").write_text(dedent(REPORT).replace("IMPORTS", imports))
    (skill / "examples" / "releases.csv").write_text(CSV)
    if requirements is not None:
        (skill / requirements_at / "requirements.txt").write_text(requirements)
    if pyproject is not None:
        (skill / "pyproject.toml").write_text(dedent(PYPROJECT).replace("DEPS", pyproject))
    if contract is not None:
        (skill / "eval.config").write_text(json.dumps(contract))
    return skill


def transcript(rd: Path, case: dict) -> str:
    return (rd / case["dir"] / "transcript.md").read_text()


def test_python_runs_a_script_whose_requirements_txt_beside_it_was_provisioned(tmp_path):
    """Was `untested: needs dateutil`: the packages of scripts/requirements.txt are fetched
    before the case and importable by the documented `python3 scripts/report.py`."""
    make_skill(tmp_path / "mp", "python3 scripts/report.py examples/releases.csv",
               "# the table and the dates\ntabulate>=0.9\npython-dateutil>=2.8  # parser\n")
    code, (case,), rd = run(tmp_path)
    assert (code, case["status"]) == (0, "pass"), case["reason"]
    p = provisioning(rd, case)
    assert p["declared"] == ["scripts/requirements.txt (requirements.txt)"], p
    assert p["requirements"] == ["tabulate>=0.9", "python-dateutil>=2.8"], p
    assert any(w.startswith("python_dateutil-") for w in p["packages"]), p
    assert "Mon 05 Jan 2026" in transcript(rd, case)  # dateutil and tabulate really ran


def test_uv_run_in_a_skill_with_a_pyproject_uses_its_dependencies_and_edits_nothing(tmp_path):
    """`uv run` in the skill folder would sync the skill's project into a .venv and a
    uv.lock inside the skill copy (an edit of the skill: S1 fails); provisioned, it runs
    the script with the project's dependencies and leaves the copy as shipped."""
    make_skill(tmp_path / "mp", "uv run scripts/report.py examples/releases.csv",
               pyproject='"tabulate>=0.9", "python-dateutil>=2.8"')
    code, (case,), rd = run(tmp_path)
    assert (code, case["status"]) == (0, "pass"), case["reason"]
    p = provisioning(rd, case)
    assert p["declared"] == ["pyproject.toml (pyproject)"], p
    assert "Mon 05 Jan 2026" in transcript(rd, case)


def test_a_contract_that_pip_installs_the_root_requirements_runs_offline(tmp_path):
    """The contract's own `setup: pip install -r $SKILL_DIR/requirements.txt` (a skill-root
    file) installs from the wheelhouse, offline; the steps run the script with python, and
    so does a `command` check, in its fresh sandbox."""
    step = "python $SKILL_DIR/scripts/report.py $SKILL_DIR/examples/releases.csv"
    contract = {"evals": [{
        "id": "table", "prompt": "Print the release table.",
        "expected_outcome": "The table lists 1.0.0 and 1.1.0 with their weekdays.",
        "setup": ["pip install -r $SKILL_DIR/requirements.txt"], "steps": [step],
        "assertions": [{"type": "transcript_contains", "text": "Tue 17 Mar 2026"},
                       # a check that runs the script imports what the steps did
                       {"type": "command", "run": step, "stdout": "Mon 05 Jan 2026"}]}]}
    make_skill(tmp_path / "mp", "python scripts/report.py examples/releases.csv",
               "tabulate==0.9.0\npython-dateutil\n", requirements_at=".", contract=contract)
    code, cases, rd = run(tmp_path)
    (case,) = [c for c in cases if c["case_id"] == "table"]
    assert (code, case["status"]) == (0, "pass"), case["reason"]
    assert provisioning(rd, case)["declared"] == ["requirements.txt (requirements.txt)"]
    assert any(w.startswith("tabulate-0.9.0") for w in provisioning(rd, case)["packages"])


def test_a_requirement_the_registry_does_not_have_leaves_the_case_untested_naming_it(tmp_path):
    make_skill(tmp_path / "mp", "python3 scripts/report.py examples/releases.csv",
               "tabulate>=0.9\npython-dateutil\naeval-test-absent-tablekit-zz>=1.0\n",
               imports="from tablekit_zz import style  # noqa: F401")
    code, (case,), rd = run(tmp_path)
    assert (code, case["status"]) == (0, "untested"), case
    assert ("not provisioned: needs aeval-test-absent-tablekit-zz (not on the package "
            "registry)") in case["reason"], case["reason"]
    p = provisioning(rd, case)
    assert any(w.startswith("tabulate-") for w in p["packages"]), p  # the rest was fetched
