"""SKILL.md is read only when it is the skill's own file: a SKILL.md that is a link out of
the skill folder (to a shared template of the monorepo, to /proc/self/environ) is refused by
name before a byte of it is read — aeval often runs as root, and what it reads can end in
the doc test, the prompt and the artifacts. A link to another file inside the skill is the
skill's own and loads."""

from __future__ import annotations

import os

import pytest

from aeval.deployments.cli.main import main
from aeval.errors import ContractError
from aeval.skill.skill_md import load_skill

SHARED = """---
name: release-notes
description: Draft release notes from merged pull requests.
---
# Release notes

Deploy token for the docs bucket: glpat-Zq8v3RkT9wXa1bC2dE4f (do not share).

```bash
python3 scripts/notes.py --since v1.4.0
```
"""


def _skill(tmp_path):
    skill = tmp_path / "mono" / "skills" / "release-notes"
    (skill / "scripts").mkdir(parents=True)
    (skill / "scripts" / "notes.py").write_text("print('notes')\n")
    return skill


def test_a_skill_md_linked_out_of_the_skill_is_refused_unread(tmp_path, capsys):
    skill = _skill(tmp_path)
    shared = tmp_path / "mono" / "templates" / "SKILL.md"
    shared.parent.mkdir(parents=True)
    shared.write_text(SHARED)
    (skill / "SKILL.md").symlink_to("../../templates/SKILL.md")
    with pytest.raises(ContractError) as exc:
        load_skill(skill)
    line = str(exc.value.problems[0])
    assert "SKILL.md" in line and "../../templates/SKILL.md" in line
    assert "outside the skill folder" in line
    assert main(["validate", str(skill)]) == 2  # invalid input
    out = capsys.readouterr()
    assert "outside the skill folder" in out.out + out.err
    assert "glpat-" not in out.out + out.err


def test_a_skill_md_linked_to_proc_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "glpat-Zq8v3RkT9wXa1bC2dE4f")
    skill = _skill(tmp_path)
    (skill / "SKILL.md").symlink_to("/proc/self/environ")
    with pytest.raises(ContractError) as exc:
        load_skill(skill)
    assert "/proc/self/environ" in str(exc.value.problems[0])
    assert "glpat-" not in str(exc.value.problems[0])


def test_a_skill_md_linked_inside_the_skill_loads(tmp_path):
    skill = _skill(tmp_path)
    (skill / "docs").mkdir()
    (skill / "docs" / "SKILL.md").write_text(SHARED.replace("Deploy token", "Bucket"))
    (skill / "SKILL.md").symlink_to(os.path.join("docs", "SKILL.md"))
    loaded = load_skill(skill)
    assert loaded.name == "release-notes" and "notes.py" in loaded.body
