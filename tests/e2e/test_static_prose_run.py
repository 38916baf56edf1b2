"""An S0 warning through `aeval run`, zero-key (literal runtime, real bubblewrap, real Prefect):
a security audit plugin whose reference file mentions, in prose, an old flag of the skill's
script and a script of the reader's own (issue 31, class 2) and a scientific skill whose
layout tree lists a file it no longer ships (class 5) pass, exit 0, and the console shows
each warning once, as a lint line; run.json keeps them with the skill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from tests.unit.test_static_prose import AUDIT, AUDIT_X, SPECTRA, build

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def test_s0_warnings_are_printed_once_and_do_not_fail_the_run(tmp_path, capsys):
    mp, out = tmp_path / "mp", tmp_path / "store"
    build(mp / "sarif-audit", AUDIT, AUDIT_X)
    spectra = build(mp / "spectra-fit", SPECTRA)
    (spectra / "scripts" / "plot_spectrum.py").unlink()
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 0, console
    for needle in ("documents the option --important for scripts/merge_sarif.py",
                   "runs scripts/export_jira.py, which the skill does not have",
                   "lists scripts/plot_spectrum.py in a layout tree"):
        assert console.count(needle) == 1, (needle, console)
    (rd,) = (out / "runs").iterdir()
    skills = {s["name"]: s for s in json.loads((rd / "run.json").read_text())["skills"]}
    # spectra-fit has no shell block for the doc test to run (its `uv run` is in a plain
    # fence, which S0 checks): untested, never a fail
    assert {n: s["status"] for n, s in skills.items()} == {"sarif-audit": "pass",
                                                            "spectra-fit": "untested"}
    assert any("--important" in w for w in skills["sarif-audit"]["warnings"])
    assert any("plot_spectrum.py" in w for w in skills["spectra-fit"]["warnings"])


def test_the_same_skills_validate_clean_with_the_warnings_shown(tmp_path, capsys):
    mp = tmp_path / "mp"
    build(mp / "sarif-audit", AUDIT, AUDIT_X)
    build(mp / "spectra-fit", SPECTRA)
    assert main(["validate", str(mp)]) == 0
    got = capsys.readouterr().out
    assert got.count("warning: ") == 2 and "2 skill(s), 0 invalid, 0 with a static defect" in got
    assert Path(mp / "sarif-audit").exists()
