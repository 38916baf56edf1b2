"""Issue 33: a module Python cannot find that is a near name of one the skill ships is the
skill's typo (a defect naming both and the importing line); a real package the reader
installs stays `needs X`, even beside a module of a similar name (its plural: ``charts``
beside ``chart.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval.verdicts.diagnosis import diagnose
from tests.unit.test_doctest import run_block

SKILL_MD = "---\nname: text-tools\ndescription: Count words and fetch pages.\n---\n"


@pytest.fixture
def skill(tmp_path) -> Path:
    d = tmp_path / "text-tools"
    (d / "scripts" / "textkit").mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL_MD)
    (d / "scripts" / "wordcounter.py").write_text("def counts(t):\n    return len(t.split())\n")
    (d / "scripts" / "chart.py").write_text("def bars(counts):\n    return counts\n")
    (d / "scripts" / "textkit" / "__init__.py").write_text("")
    return d


@pytest.mark.parametrize("imports, near, where", [
    ("import wordcountr", "wordcounter (scripts/wordcounter.py)", "scripts/main.py:2"),
    ("from textkt import clean", "textkit (scripts/textkit/)", "scripts/main.py:2"),
])
def test_a_near_name_of_the_skills_module_is_a_defect(skill, imports, near, where):
    (skill / "scripts" / "main.py").write_text(f"import sys\n{imports}\nprint(sys.argv)\n")
    code = "python3 scripts/main.py notes.txt"
    exit_code, output = run_block(code, skill)
    d = diagnose(code, exit_code, output, skill)
    missing = imports.split()[1]
    assert d.kind == "defect", d
    assert d.reason == (f"the skill's {where} imports {missing}, which is not installed, "
                        f"and the skill ships {near}: a misspelled import of the skill's own "
                        "module")


@pytest.mark.parametrize("imports", ["import charts", "import markitdown"])
def test_a_package_the_reader_installs_is_still_needed(skill, imports):
    (skill / "scripts" / "fetch.py").write_text(f"{imports}\nprint('fetched')\n")
    code = "python3 scripts/fetch.py https://example.org"
    exit_code, output = run_block(code, skill)
    if "No module named" not in output:
        pytest.skip(f"{imports.split()[1]} is installed here")
    d = diagnose(code, exit_code, output, skill)
    assert (d.kind, d.reason) == ("missing_tool", f"needs {imports.split()[1]}")


def test_a_broken_import_in_a_helper_names_the_script_skill_md_runs(skill):
    (skill / "scripts" / "renderlib.py").write_text(
        "import tomlib\n\ndef load():\n    return tomlib.loads('')\n")
    (skill / "scripts" / "render.py").write_text(
        "import sys\nsys.path.insert(0, sys.path[0])\nfrom renderlib import load\nload()\n")
    code = "python3 scripts/render.py --list-keys"
    exit_code, output = run_block(code, skill)
    d = diagnose(code, exit_code, output, skill)
    assert (d.kind, d.file) == ("defect", "scripts/renderlib.py"), d
    assert d.reason.startswith("running scripts/render.py: the skill's scripts/renderlib.py:1 "
                               "imports tomlib, a module that exists nowhere"), d.reason


def test_a_broken_import_in_the_script_itself_is_said_as_before(skill):
    (skill / "scripts" / "render.py").write_text("import tomlib\nprint(tomlib.loads(''))\n")
    code = "python3 scripts/render.py --list-keys"
    exit_code, output = run_block(code, skill)
    d = diagnose(code, exit_code, output, skill)
    assert d.reason.startswith("the skill's scripts/render.py:1 imports tomlib"), d.reason
