"""Which packages a skill's documented commands declare for the provisioning phase, and how
uv's word that it lacks one reads: the reader's environment (``needs X``), never a defect."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from aeval.isolation.provision import declarations, script_requirements
from aeval.verdicts.missing import missing

HEADER = dedent('''\
    #!/usr/bin/env -S uv run --script
    # /// script
    # requires-python = ">=3.11"
    # dependencies = [
    #   "httpx>=0.27",
    #   "rich",
    # ]
    # ///
    """Fetch a changelog and print its newest entry."""
    ''')


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "latest.py").write_text(HEADER + "print('ok')\n")
    (tmp_path / "scripts" / "plain.py").write_text("print('no header')\n")
    return tmp_path


@pytest.mark.parametrize("command", [
    "uv run scripts/latest.py --since 2026-01-01",
    'uv run --quiet "$SKILL_DIR/scripts/latest.py" CHANGELOG.md',
    "cd /tmp && uv run -q {baseDir}/scripts/latest.py",
    "uv run ~/.claude/skills/changelog/scripts/latest.py | head -5",
    "./scripts/latest.py --since 2026-01-01",  # its #! line runs it through uv
    "$SKILL_DIR/scripts/latest.py",
])
def test_the_header_of_a_script_uv_runs_is_declared_however_its_path_is_written(skill, command):
    declared, reqs = declarations(skill, [command])
    assert declared == ["scripts/latest.py (PEP 723)"]
    assert reqs == ["httpx>=0.27", "rich"]


@pytest.mark.parametrize("command", [
    "python scripts/latest.py",  # not through uv: the header is not read by python
    "python3 $SKILL_DIR/scripts/latest.py",
    "uv run python scripts/latest.py",  # uv's project environment, not the script's
    "uv run scripts/plain.py",  # no header
    "uv run scripts/missing.py",  # not a file of the skill
    "uv pip install -r requirements.txt",
])
def test_nothing_is_declared_where_uv_would_not_read_a_header(skill, command):
    assert declarations(skill, [command]) == ([], [])


def test_packages_given_with_with_are_fetched_too(skill):
    _, reqs = declarations(skill, ["uv run --with pandas,pyarrow scripts/latest.py"])
    assert reqs == ["pandas", "pyarrow", "httpx>=0.27", "rich"]


def test_a_broken_header_declares_nothing():
    assert script_requirements("# /// script\n# dependencies = [\n# ///\n") is None
    assert script_requirements("print(1)\n") is None


@pytest.mark.parametrize("output, name", [
    ("error: No solution found when resolving script dependencies:\n  Because tablekit-zz "
     "was not found in the cache and you require tablekit-zz, we can conclude that your "
     "requirements are unsatisfiable.\n\nhint: Packages were unavailable because the network "
     "was disabled.", "tablekit-zz"),
    ("  × No solution found when resolving script dependencies:\n  ╰─▶ Because "
     "acme-internal-sdk was not found in the package registry and you require "
     "acme-internal-sdk, we can conclude that your requirements are unsatisfiable.",
     "acme-internal-sdk"),
    ("Because polars[excel] was not found in the cache and you require polars[excel], ...",
     "polars"),
])
def test_a_package_uv_cannot_get_is_the_environments_need(tmp_path, output, name):
    d = missing(output, tmp_path, frozenset())
    assert d is not None and d.kind == "missing_tool" and d.reason == f"needs {name}", d
