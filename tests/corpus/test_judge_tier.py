"""The recall figures tell how a plant was caught: by the static skill check (its S0
finding names the line and the cause) or by running the skill (a doc test's or a step's
failure does); a missed plant has no tier."""

from __future__ import annotations

import json

from tests.corpus.loader import CaseView, SkillView, judge, load_plants, read_run

PLANT = next(p for p in load_plants() if p.id == "P64")   # dependency-bump, --strategy


def _skills(case: CaseView, status: str = "fail") -> dict[str, SkillView]:
    return {PLANT.skill: SkillView(PLANT.skill, status, [case])}


def test_a_plant_the_static_finding_names_is_caught_by_s0():
    said = f"SKILL.md line {PLANT.expect.line}: invalid choice: 'compatible'"
    r = judge(PLANT, _skills(CaseView("smoke", "fail", said, static=said)))
    assert r.caught and r.tier == "static"


def test_a_plant_only_the_doc_test_names_is_caught_by_running():
    said = f"doc test: SKILL.md line {PLANT.expect.line} exited 2: invalid choice: 'compatible'"
    r = judge(PLANT, _skills(CaseView("smoke", "fail", said, static="a missing path elsewhere")))
    assert r.caught and r.tier == "running"


def test_a_missed_plant_has_no_tier():
    r = judge(PLANT, _skills(CaseView("smoke", "untested", "needs uv"), "untested"))
    assert not r.caught and r.tier == ""


def test_read_run_keeps_the_s0_evidence_apart(tmp_path):
    root, out = tmp_path / "mp", tmp_path / "out"
    (root / PLANT.skill).mkdir(parents=True)
    case = out / "runs" / "r1" / "c1"
    case.mkdir(parents=True)
    (case.parent / "run.json").write_text(json.dumps({"skills": [{
        "path": str(root / PLANT.skill), "status": "fail",
        "cases": [{"case_id": "smoke", "status": "fail", "dir": "c1", "reason": "S0 failed"}]}]}))
    (case / "grading.json").write_text(json.dumps({"expectations": [
        {"id": "S0", "passed": False, "evidence": "SKILL.md line 29: scripts/x.py missing"},
        {"id": "S2", "passed": False, "evidence": "exited 2"},
        {"id": "A1", "passed": True, "evidence": "fine"}]}))
    skills, problem = read_run(root, out)
    view = skills[PLANT.skill].cases[0]
    assert problem == "" and view.static == "SKILL.md line 29: scripts/x.py missing"
    assert "exited 2" in view.evidence and "fine" not in view.evidence
