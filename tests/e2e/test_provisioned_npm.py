"""Issue 45, class 2, npm: a skill whose documented ``node scripts/x.mjs`` has a
``package.json`` beside it, and whose docs run ``npx <tool>``, gets those packages, installed
before the case in the phase that reaches only the package registries, and runs offline from
them (`aeval run --runtime literal`, zero keys).

These need npm and its registry: they are skipped, with the reason, where either is missing.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from tests.e2e.test_provisioned_environment import CSV, run


def _npm_registry_reachable() -> bool:
    try:
        socket.create_connection(("registry.npmjs.org", 443), timeout=5).close()
        return True
    except OSError:
        return False


pytestmark = [
    pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed"),
    pytest.mark.skipif(not _npm_registry_reachable(), reason="the npm registry is unreachable"),
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap: {bwrap_problem()}"),
]

TABLE = '''\
    // Print a CSV of releases as a Markdown table for the changelog.
    import { readFileSync } from "node:fs";
    import { markdownTable } from "markdown-table";
    IMPORTS
    const [header, ...rows] = readFileSync(process.argv[2], "utf8").trim().split("\\n")
      .map((line) => line.split(","));
    console.log(markdownTable([header, ...rows], { align: ["l", "r"] }));
    '''

SKILL_MD = '''\
    ---
    name: changelog-table
    description: Turn a CSV of releases into a Markdown table and work out the next version.
    ---

    # Changelog table

    Print the table of the bundled example and paste it into CHANGELOG.md:

    ```bash
    node scripts/table.mjs examples/releases.csv
    ```

    Then compute the next minor version from the last one in the table:

    ```bash
    npx -y TOOL -i minor 1.1.0
    ```
    '''


def make_skill(mp: Path, deps: dict[str, str], imports: str = "", tool: str = "semver") -> Path:
    skill = mp / "changelog-table"
    (skill / "scripts").mkdir(parents=True)
    (skill / "examples").mkdir()
    (skill / "SKILL.md").write_text(dedent(SKILL_MD).replace("TOOL", tool))
    (skill / "scripts" / "table.mjs").write_text(dedent(TABLE).replace("IMPORTS", imports))
    (skill / "scripts" / "package.json").write_text(json.dumps(
        {"name": "changelog-table", "private": True, "type": "module", "dependencies": deps},
        indent=2))
    (skill / "examples" / "releases.csv").write_text(CSV)
    return skill


def npm_record(rd: Path, case: dict) -> dict:
    meta = json.loads((rd / case["dir"] / "eval_metadata.json").read_text())
    return meta["attempts"][-1]["npm_provisioning"]


def test_node_imports_the_package_json_dependencies_and_npx_runs_its_tool_offline(tmp_path):
    """Was `untested: needs markdown-table`: the ESM import resolves through the provisioned
    node_modules, `npx semver` runs from the npm cache, offline, and the skill copy is left
    as shipped (S1 holds: the case passes)."""
    make_skill(tmp_path / "mp", {"markdown-table": "^3.0.3"})
    code, (case,), rd = run(tmp_path)
    assert (code, case["status"]) == (0, "pass"), case["reason"]
    p = npm_record(rd, case)
    assert p["declared"] == ["scripts/package.json (package.json)", "npx semver (npx)"], p
    assert p["packages"] == ["markdown-table", "npx semver"], p
    assert p["outcome"] in ("built", "cached") and p["reason"] is None, p
    transcript = (rd / case["dir"] / "transcript.md").read_text()
    assert "| 1.1.0   | 2026-03-17 |" in transcript, transcript  # markdown-table ran
    assert "1.2.0" in transcript  # semver ran


def test_a_dependency_the_npm_registry_does_not_have_leaves_the_case_untested(tmp_path):
    make_skill(tmp_path / "mp", {"markdown-table": "^3.0.3",
                                 "aeval-test-absent-tablekit-zz": "^1.0.0"},
               imports='import "aeval-test-absent-tablekit-zz";')
    code, (case,), rd = run(tmp_path)
    assert (code, case["status"]) == (0, "untested"), case
    assert ("not provisioned: needs aeval-test-absent-tablekit-zz (not on the package "
            "registry)") in case["reason"], case["reason"]
    assert npm_record(rd, case)["packages"][0] == "markdown-table"  # the rest was installed


def test_an_npx_tool_the_registry_does_not_have_leaves_the_case_untested(tmp_path):
    """The table still runs; npx, offline, cannot get the tool: the reader's need, named."""
    make_skill(tmp_path / "mp", {"markdown-table": "^3.0.3"}, tool="aeval-test-absent-semver-zz")
    code, (case,), rd = run(tmp_path)
    assert (code, case["status"]) == (0, "untested"), case
    assert "needs aeval-test-absent-semver-zz" in case["reason"], case["reason"]
    assert ("not provisioned: needs aeval-test-absent-semver-zz (not on the package "
            "registry)") in case["reason"], case["reason"]
    assert npm_record(rd, case)["packages"] == ["markdown-table"]
