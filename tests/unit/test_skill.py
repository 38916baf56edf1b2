"""SKILL.md loading: what makes a skill invalid, and what only warns."""

from __future__ import annotations

import pytest

from aeval.errors import ContractError
from aeval.skill.skill_md import find_skill_roots, load_skill, nearest_skill_root


def make(tmp_path, folder: str, text: str):
    d = tmp_path / folder
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(text)
    return d


def test_valid_skill_loads_with_no_warnings(tmp_path):
    d = make(tmp_path, "good-skill", "---\nname: good-skill\ndescription: Does a thing.\n---\nB\n")
    s = load_skill(d)
    assert (s.name, s.description, s.warnings) == ("good-skill", "Does a thing.", [])
    assert s.body == "B\n" and s.body_offset == 4


def test_spec_violations_are_warnings_not_errors(tmp_path):
    d = make(tmp_path, "folder", "---\nname: Bad_Name\ndescription: " + "x" * 1100 +
             "\nversion: 2\n---\n")
    s = load_skill(d)
    text = "\n".join(s.warnings)
    assert "name: 'Bad_Name' should be lowercase" in text
    assert "differs from the folder name 'folder'" in text
    assert "description: 1100 characters, at most 1024" in text
    assert "version: unknown frontmatter key" in text
    assert all(w.startswith(str(d / "SKILL.md")) for w in s.warnings)


@pytest.mark.parametrize("text, expected", [
    ("# no frontmatter\n", "frontmatter: missing"),
    ("---\nname: [unclosed\n---\n", "frontmatter: not valid YAML"),
    ("---\ndescription: only\n---\n", "name: required"),
    ("---\nname: x\ndescription: ''\n---\n", "description: required"),
    ("---\n- a list\n---\n", "frontmatter: must be a YAML mapping"),
])
def test_unloadable_skill_is_invalid(tmp_path, text, expected):
    d = make(tmp_path, "s", text)
    with pytest.raises(ContractError, match=expected):
        load_skill(d)


def test_broken_frontmatter_is_one_line_naming_the_file_line(tmp_path):
    """PyYAML's own message spans lines and quotes the source; the problem is one line with
    the line of SKILL.md (the frontmatter starts on line 2)."""
    d = make(tmp_path, "s", "---\nname: s\ndescription: does: things: [\n---\nBody\n")
    with pytest.raises(ContractError) as exc:
        load_skill(d)
    message = str(exc.value.problems[0])
    assert "\n" not in message, message
    assert message.startswith(f"{d / 'SKILL.md'}:frontmatter: not valid YAML: line 3, "), message


def test_missing_skill_md(tmp_path):
    with pytest.raises(ContractError, match=r"no SKILL\.md"):
        load_skill(tmp_path)


def test_discovery_skips_hidden_and_nested(tmp_path):
    make(tmp_path, "skills/a", "---\nname: a\ndescription: d\n---\n")
    make(tmp_path, "skills/a/sub", "---\nname: sub\ndescription: d\n---\n")
    make(tmp_path, ".aeval/hidden", "---\nname: h\ndescription: d\n---\n")
    make(tmp_path, "other/b", "---\nname: b\ndescription: d\n---\n")
    assert [p.name for p in find_skill_roots(tmp_path)] == ["b", "a"] or \
        sorted(p.name for p in find_skill_roots(tmp_path)) == ["a", "b"]
    assert find_skill_roots(tmp_path / "skills" / "a") == [tmp_path / "skills" / "a"]
    deep = tmp_path / "skills" / "a" / "scripts"
    deep.mkdir()
    assert nearest_skill_root(deep, tmp_path) == tmp_path / "skills" / "a"
    assert nearest_skill_root(tmp_path / "other", tmp_path) is None
