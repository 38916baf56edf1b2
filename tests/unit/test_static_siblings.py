"""A reference file that sends the agent to a file next to it ("the fields are listed in
`feed-fields.md` next to this file", "`checklist.md` in this folder") relies on that file:
when the skill does not ship it, S0 says so, naming the reference's line (issue 45, item
1). A bare file name without that direction is the reader's as often (`CHANGELOG.md`, the
reader's `README.md`): no finding."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_static_prose import build, defects

SKILL = """\
---
name: release-checklist
description: Prepare a release of a Python package - version, changelog, tag, upload. Use
  before publishing to PyPI.
---
# Release checklist

Follow [the release guide](guides/release.md) step by step.
"""

GUIDE = """\
# Releasing

1. Bump the version and update `CHANGELOG.md` (the reader's project keeps one).
2. Run the checks listed in `checklist.md` in this folder before you tag.
3. The upload fields are described in `pypi-fields.md`, next to this guide.
4. The reader's `README.md` must render on PyPI: `python -m readme_renderer README.md`.
"""


def skill(tmp_path: Path, **extra: str) -> Path:
    return build(tmp_path / "release-checklist", {"SKILL.md": SKILL, "guides/release.md": GUIDE,
                                                  **extra})


def test_a_sibling_the_reference_sends_the_agent_to_must_ship(tmp_path):
    found = defects(skill(tmp_path))
    assert len(found) == 2, found
    assert any("guides/release.md line 4" in f and "checklist.md, which the skill does not have"
               in f for f in found), found
    assert any("guides/release.md line 5" in f and "pypi-fields.md" in f for f in found), found
    # the reader's files, named without a direction to the folder, are no finding
    assert not any("CHANGELOG" in f or "README" in f for f in found), found


def test_shipped_siblings_are_no_finding(tmp_path):
    assert defects(skill(tmp_path, **{"guides/checklist.md": "- tests pass\n",
                                      "guides/pypi-fields.md": "- long_description\n"})) == []
