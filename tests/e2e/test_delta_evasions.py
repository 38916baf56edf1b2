"""Δ cannot be evaded: each way a run can change the skill copy and hide it makes the case fail
with the change named (S1); what `setup` writes into $SKILL_DIR is the environment, not an
edit. The original skill stays byte-identical whatever the steps do."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.deployments.cli.main import main
from aeval.isolation.workspace import manifest

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

# skill name -> (steps, what the S1 evidence must name)
EVASIONS = {
    "chmod": (["chmod 0755 $SKILL_DIR/SKILL.md"], "mode 0644 -> 0755"),
    "edit-then-revert": (
        ["cp $SKILL_DIR/scripts/report.py saved.py",
         "sed -i 's/Report/Hacked/' $SKILL_DIR/scripts/report.py",
         "python3 $SKILL_DIR/scripts/report.py > out.txt",
         "cp saved.py $SKILL_DIR/scripts/report.py"], "modified and restored"),
    "planted-pyc": (["mkdir -p $SKILL_DIR/scripts/__pycache__",
                     "printf 'x' > $SKILL_DIR/scripts/__pycache__/report.cpython-311.pyc"],
                    "scripts/__pycache__/report.cpython-311.pyc"),
    "new-symlink": (["ln -s /etc/hostname $SKILL_DIR/scripts/host"], "scripts/host"),
    "repointed-symlink": (["ln -sfn /etc/hostname $SKILL_DIR/latest"], "symlink"),
    "hardlink-write": (["ln $SKILL_DIR/scripts/report.py alias.py",
                        "echo 'print(1)' >> alias.py"], "scripts/report.py"),
}


def make_skill(root: Path, name: str, steps: list[str], setup: list[str] | None = None) -> Path:
    d = root / name
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Prints a short report.\n---\n"
                                "# Report\n\nRun `python3 scripts/report.py`.\n")
    (d / "SKILL.md").chmod(0o644)
    (d / "scripts" / "report.py").write_text("print('Report: ok')\n")
    (d / "latest").symlink_to("scripts/report.py")
    case = {"id": "report", "prompt": "Print the report.", "expected_outcome": "A report.",
            "steps": [*steps, "python3 $SKILL_DIR/scripts/report.py > report.txt"],
            "assertions": [{"type": "file_contains", "path": "report.txt",
                            "pattern": "Report"}]}
    if setup:
        case["setup"] = setup
    (d / "eval.config").write_text(json.dumps({"evals": [case]}))
    return d


def test_every_evasion_fails_with_the_change_named(tmp_path):
    mp = tmp_path / "mp"
    skills = {name: make_skill(mp, name, steps) for name, (steps, _) in EVASIONS.items()}
    skills["setup-writes"] = make_skill(
        mp, "setup-writes", [], setup=["echo cached > $SKILL_DIR/.model-cache",
                                       "chmod 0755 $SKILL_DIR/scripts/report.py"])
    before = {name: manifest(d) for name, d in skills.items()}
    code = main(["run", str(mp), "--out", str(tmp_path / "s"), "-q"])
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    for name, (_, named) in EVASIONS.items():
        g = json.loads((rd / name / "literal" / "report" / "grading.json").read_text())
        s1 = next(e for e in g["expectations"] if e["id"] == "S1")
        if name == "hardlink-write" and not bwrap_problem():
            # under bubblewrap the copy is its own mount: a hard link into it cannot be made
            transcript = (rd / name / "literal" / "report" / "transcript.md").read_text()
            assert g["status"] == "fail" and "Invalid cross-device link" in transcript
            continue
        assert g["status"] == "fail" and s1["status"] == "failed", (name, g["status_reason"])
        assert named in s1["evidence"], (name, s1["evidence"])
    g = json.loads((rd / "setup-writes" / "literal" / "report" / "grading.json").read_text())
    assert g["status"] == "pass", g["status_reason"]
    assert code == 1
    for name, d in skills.items():
        assert manifest(d) == before[name], f"the original {name} changed"
        assert not (d / ".model-cache").exists()


def test_a_step_cannot_reach_the_original_skill(tmp_path):
    """The original's path is in plain sight (eval_metadata.json, /proc): inside the sandbox
    it is an empty, read-only folder."""
    if bwrap_problem():
        pytest.skip(f"bubblewrap cannot run here: {bwrap_problem()}")
    mp = tmp_path / "mp"
    d = make_skill(mp, "reach-original", [])
    original = d.resolve()
    case = json.loads((d / "eval.config").read_text())
    case["evals"][0]["steps"] = [
        f"ls -A {original} > listing.txt || true",
        f"echo hacked >> {original}/SKILL.md || true",
        "python3 $SKILL_DIR/scripts/report.py > report.txt"]
    (d / "eval.config").write_text(json.dumps(case))
    before = manifest(d)
    assert main(["run", str(d), "--out", str(tmp_path / "s"), "-q"]) == 0
    assert manifest(d) == before
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    listing = rd / "reach-original" / "literal" / "report" / "outputs" / "listing.txt"
    assert listing.read_text() == ""  # the folder is there, empty
    assert os.access(original / "SKILL.md", os.R_OK)
