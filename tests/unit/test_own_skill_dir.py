"""S0 follows a skill's own assignment to `SKILL_DIR` (issue 45, class 3): to a folder of the
skill it is that folder from there on; to a placeholder (`/path/to/skill`) it is the reader's
install of this skill, read as its root, so a script the skill lacks is still found."""

from __future__ import annotations

import pytest

from aeval.skill.skill_md import load_skill
from aeval.verdicts.static_check import static_check
from tests.unit.test_static_prose import build

HEAD = ("---\nname: csv-clean\ndescription: Clean a CSV export (dedupe, trim, normalise "
        "dates). Use before loading data.\n---\n# CSV clean\n\n```bash\n")
CLEAN = '"""Clean a CSV."""\nimport sys\nprint(sys.argv[1:])\n'


@pytest.mark.parametrize("assignment", [
    "SKILL_DIR={baseDir}/scripts",
    "export SKILL_DIR=/mnt/skills/user/csv-clean/scripts",
    "SKILL_DIR=${SKILL_DIR:-$HOME/.claude/skills/csv-clean}/scripts",
    'SKILL_DIR="/opt/agents/csv-clean/scripts"',
])
def test_an_assignment_into_the_skills_scripts_folder_is_followed(tmp_path, assignment):
    skill = build(tmp_path / "csv-clean", {
        "SKILL.md": HEAD + assignment + "\npython3 $SKILL_DIR/clean.py data.csv\n```\n",
        "scripts/clean.py": CLEAN})
    assert [str(f) for f in static_check(load_skill(skill))] == []


@pytest.mark.parametrize("assignment", ["SKILL_DIR=/path/to/skill", "SKILL_DIR=<skill-dir>",
                                        "export SKILL_DIR=~/skills/your-skill"])
def test_an_assignment_to_a_placeholder_keeps_the_root_reading(tmp_path, assignment):
    skill = build(tmp_path / "csv-clean", {
        "SKILL.md": HEAD + assignment + "\npython3 $SKILL_DIR/scripts/clean.py data.csv\n"
                                        "python3 $SKILL_DIR/scripts/dedupe.py data.csv\n```\n",
        "scripts/clean.py": CLEAN})
    (f,) = static_check(load_skill(skill))
    assert "runs scripts/dedupe.py, which the skill does not have" in str(f)


def test_a_folder_elsewhere_is_not_the_skills(tmp_path):
    skill = build(tmp_path / "csv-clean", {
        "SKILL.md": HEAD + "SKILL_DIR=/opt/etl/bin\npython3 $SKILL_DIR/normalise.py x\n```\n",
        "scripts/clean.py": CLEAN})
    assert [str(f) for f in static_check(load_skill(skill))] == []
