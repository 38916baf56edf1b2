"""A makefile the skill ships is its interface, and a goal SKILL.md runs is its subcommand:
make's "No rule to make target 'bundle'" for the skill's own makefile (``make -f
scripts/release.mk bundle``, ``make -C $SKILL_DIR bundle``, ``make bundle`` from the skill
folder) is a defect naming the goal (aeval.verdicts.diagnosis._make_goal); a prerequisite
without a rule, a makefile of the reader's project, or a goal of a make that is not
installed stay what they were.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aeval.verdicts.diagnosis import diagnose
from tests.unit.test_doctest import run_block

pytestmark = pytest.mark.skipif(
    shutil.which("make") is None,
    reason="make is not installed (apt-get install make; .ci/run installs it)")

RELEASE = """\
.PHONY: package clean
package: dist/MANIFEST
\t@echo packaged
dist/MANIFEST: ship.list
\t@mkdir -p dist && cp ship.list $@
clean:
\t@rm -rf dist
"""


@pytest.fixture
def skill(tmp_path) -> Path:
    d = tmp_path / "release-bundle"
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: release-bundle\ndescription: Bundle\n---\n")
    (d / "scripts" / "release.mk").write_text(RELEASE)
    (d / "Makefile").write_text(RELEASE)
    (d / "ship.list").write_text("SKILL.md\n")
    return d


def diagnosed(skill: Path, code: str, failed: str | None = None):
    exit_code, output = run_block(code, skill)
    assert exit_code != 0, output
    return diagnose(code, exit_code, output, skill, failed=failed or code.splitlines()[-1],
                    names=("release-bundle",))


@pytest.mark.parametrize("code, rel", [
    ("make -f scripts/release.mk bundle VERSION=1.4.0", "scripts/release.mk"),
    ("make --file=scripts/release.mk bundle", "scripts/release.mk"),
    ("make -C . bundle", "Makefile"),
    ("make bundle NAME=demo", "Makefile"),
])
def test_a_goal_the_skills_makefile_lacks_is_a_defect_naming_it(skill, code, rel):
    d = diagnosed(skill, code)
    assert (d.kind, d.own, d.file) == ("defect", "usage", rel), d
    assert f"the skill's {rel} has no target 'bundle', which SKILL.md runs" in d.reason


def test_the_goal_is_placed_on_its_line(skill):
    d = diagnosed(skill, "make -f scripts/release.mk clean\nmake -f scripts/release.mk bundle",
                  "make -f scripts/release.mk bundle")
    assert (d.kind, d.at) == ("defect", 1), d


def test_a_prerequisite_without_a_rule_is_no_goal_of_skill_md(skill):
    (skill / "ship.list").unlink()
    d = diagnosed(skill, "make -f scripts/release.mk package")
    assert d.kind != "defect", d


def test_a_makefile_of_the_readers_project_is_not_the_skills(skill, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "Makefile").write_text("all:\n\t@true\n")
    d = diagnosed(skill, f"cd {project}\nmake bundle")
    assert d.kind != "defect", d
