"""Which packages a skill's documented commands declare for the provisioning phase, and how
uv's word that it lacks one reads: the reader's environment (``needs X``), never a defect."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.isolation.provision import declarations, npm_declarations, script_requirements
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


REQUIREMENTS = dedent('''\
    # what report.py imports
    tabulate>=0.9            # the table
    python-dateutil==2.9.0 \\
        --hash=sha256:0123abcd
    rich[jupyter]; python_version >= "3.9"
    -r extra.txt
    -e git+https://example.com/acme/internal.git#egg=internal
    --index-url https://pypi.example.com/simple
    acme-sdk @ https://example.com/acme_sdk-1.0-py3-none-any.whl
    ./vendor/localpkg
    ''')


@pytest.fixture
def report_skill(tmp_path: Path) -> Path:
    """A CSV report skill: scripts/report.py with its requirements.txt beside it."""
    (tmp_path / "scripts" / "lib").mkdir(parents=True)
    (tmp_path / "scripts" / "report.py").write_text("import tabulate\n")
    (tmp_path / "scripts" / "lib" / "fmt.py").write_text("import dateutil\n")
    (tmp_path / "scripts" / "requirements.txt").write_text(REQUIREMENTS)
    (tmp_path / "scripts" / "extra.txt").write_text("humanize\n")
    return tmp_path


@pytest.mark.parametrize("command", [
    "python3 scripts/report.py data.csv",
    'python "$SKILL_DIR/scripts/report.py" --out report.md',
    "cd {baseDir} && uv run scripts/report.py data.csv",
    "python scripts/lib/fmt.py",  # a script below: the nearest requirements.txt above it
])
def test_the_requirements_txt_beside_a_script_the_commands_run_is_declared(report_skill,
                                                                           command):
    declared, reqs = declarations(report_skill, [command])
    assert declared == ["scripts/requirements.txt (requirements.txt)"]
    # names the registry serves; hashes, options, URLs and local paths are left out
    assert reqs == ["tabulate>=0.9", "python-dateutil==2.9.0",
                    'rich[jupyter]; python_version >= "3.9"', "humanize"]


def test_a_requirements_txt_at_the_skill_root_and_one_pip_installs_are_declared(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "report.py").write_text("import tabulate\n")
    (tmp_path / "requirements.txt").write_text("tabulate\n")
    (tmp_path / "requirements-dev.txt").write_text("pytest>=8\n")
    assert declarations(tmp_path, ["python scripts/report.py x.csv"]) == (
        ["requirements.txt (requirements.txt)"], ["tabulate"])
    for command in ("pip install -r $SKILL_DIR/requirements-dev.txt",
                    "python3 -m pip install --quiet --requirement={baseDir}/requirements-dev.txt",
                    "uv pip install -r requirements-dev.txt"):
        assert declarations(tmp_path, [command]) == (
            ["requirements-dev.txt (requirements.txt)"], ["pytest>=8"]), command


def test_the_pyproject_dependencies_above_a_script_are_declared(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "report.py").write_text("import tabulate\n")
    (tmp_path / "pyproject.toml").write_text(dedent('''\
        [project]
        name = "csv-report"
        version = "0.1.0"
        dependencies = ["tabulate>=0.9", "acme @ git+https://example.com/acme.git"]

        [project.optional-dependencies]
        dev = ["pytest"]
        '''))
    assert declarations(tmp_path, ["uv run scripts/report.py a.csv"]) == (
        ["pyproject.toml (pyproject)"], ["tabulate>=0.9"])


@pytest.mark.parametrize("command", [
    "cat scripts/requirements.txt",  # named, not installed
    "python -c 'import tabulate'",  # no script of the skill
    "python scripts/missing.py",  # not a file of the skill
    "pip install -r requirements.txt",  # the reader's own file
    "sort -r scripts/extra.txt",  # -r of another program
])
def test_nothing_is_declared_where_no_command_leads_to_a_declaration(report_skill, command):
    assert declarations(report_skill, [command]) == ([], [])


def test_a_broken_pyproject_declares_nothing(tmp_path):
    (tmp_path / "x.py").write_text("print(1)\n")
    (tmp_path / "pyproject.toml").write_text("[project\ndependencies = [\n")
    assert declarations(tmp_path, ["python x.py"]) == ([], [])


@pytest.mark.parametrize("output, name", [
    ("Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'markdown-table' imported from "
     "/ws/.agents/skills/changelog-table/scripts/table.mjs\n    at packageResolve",
     "markdown-table"),
    ("Error: Cannot find module 'yaml'\nRequire stack:\n- /ws/scripts/build.js", "yaml"),
    ("npm error code ENOTCACHED\nnpm error request to https://registry.npmjs.org/"
     "@mermaid-js%2fmermaid-cli failed: cache mode is 'only-if-cached' but no cached response "
     "is available.", "@mermaid-js/mermaid-cli"),
])
def test_a_node_package_the_attempt_lacks_is_the_environments_need(tmp_path, output, name):
    d = missing(output, tmp_path, frozenset())
    assert d is not None and d.kind == "missing_tool" and d.reason == f"needs {name}", d


PACKAGE_JSON = json.dumps({
    "name": "changelog-table", "type": "module",
    "dependencies": {"markdown-table": "^3.0.3", "local-lib": "file:../lib",
                     "forked": "github:acme/forked", "pinned": "acme/pinned#v1"},
    "devDependencies": {"tsx": "^4.19.0"}})


@pytest.mark.parametrize("command", [
    "node scripts/table.mjs data.csv",
    'npx tsx "$SKILL_DIR/scripts/table.ts"',
    "cd {baseDir} && bun scripts/lib/util.js",
])
def test_the_package_json_above_a_script_the_commands_run_is_declared(tmp_path, command):
    (tmp_path / "scripts" / "lib").mkdir(parents=True)
    for f in ("table.mjs", "table.ts", "lib/util.js"):
        (tmp_path / "scripts" / f).write_text("console.log(1)\n")
    (tmp_path / "package.json").write_text(PACKAGE_JSON)
    declared, deps, tools, folders = npm_declarations(tmp_path, [command])
    assert declared[0] == "package.json (package.json)" and folders == ["."]
    # registry specs only: file:, GitHub shorthands and the like are the reader's
    assert deps == {"markdown-table": "^3.0.3", "tsx": "^4.19.0"}
    assert tools == (["tsx"] if command.startswith("npx") else [])


@pytest.mark.parametrize("command, tools", [
    ("npx -y semver -i minor 1.4.2", ["semver"]),
    ("npx --yes @mermaid-js/mermaid-cli@11 -i diagram.mmd -o out.svg",
     ["@mermaid-js/mermaid-cli@11"]),
    ("cd app && npx -p typescript tsc --noEmit", ["typescript"]),
    ("npx --package=@biomejs/biome biome check .", ["@biomejs/biome"]),
    ("npm exec -- prettier --check .", ["prettier"]),
    ("npx <tool> --help", []),  # a placeholder
    ("echo 'npx is how you run it'", []),  # prose in an echo
])
def test_the_packages_npx_fetches_are_declared(tmp_path, command, tools):
    declared, _, found, _ = npm_declarations(tmp_path, [command])
    assert found == tools and declared == [f"npx {t} (npx)" for t in tools]
