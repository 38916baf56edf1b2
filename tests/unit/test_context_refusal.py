"""Issue 49, class 1: a skill script's own refusal of the reader's context (their git
repository, their files, their login or token, the network) is no rejection of its
arguments: the doc test says `needs <context>` and quotes the script, where it said the
script "exited 1 with the documented arguments" (a fail). The planted counterparts, a
renamed flag, a module that lost a function, a shipped template that is gone, still fail
whatever their message says.

Real processes: each script runs with bash or python in a skill folder built here, and its
real output goes through `diagnose`, as the doc test's does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.verdicts.diagnosis import diagnose


def skill(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    d = tmp_path / "ws" / ".agents" / "skills" / name
    for rel, text in {"SKILL.md": f"---\nname: {name}\ndescription: x\n---\n", **files}.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(dedent(text))
    return d


def ran(d: Path, code: str, env: dict[str, str] | None = None):
    """The block's exit code, its output (stdout and stderr as the doc test joins them) and
    its diagnosis; run outside any git repository, with no token in the environment."""
    base = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(d.parent),
            "GIT_CEILING_DIRECTORIES": str(d.parents[3]), "SKILL_DIR": str(d), **(env or {})}
    r = subprocess.run(["bash", "-e", "-c", code], cwd=d, env=base, capture_output=True,
                       text=True, timeout=60)
    return diagnose(code, r.returncode, r.stdout + r.stderr, d)


CHECK_RELEASE = """\
    #!/usr/bin/env bash
    set -euo pipefail
    git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
      { echo "error: not inside a git repository" >&2; exit 1; }
    echo "branch: $(git rev-parse --abbrev-ref HEAD)"
    """


@pytest.mark.parametrize("script, needed, said", [
    (CHECK_RELEASE, "a git repository", "error: not inside a git repository"),
    # git's own words, under set -e
    ("set -e\ngit log --oneline -5\n", "a git repository",
     "fatal: not a git repository (or any of the parent directories): .git"),
    ('git status >/dev/null 2>&1 || { echo "This tool must be run from within a Git work '
     'tree." >&2; exit 2; }\n', "a git repository",
     "This tool must be run from within a Git work tree."),
])
def test_a_release_script_outside_a_repository_needs_a_git_repository(tmp_path, script,
                                                                       needed, said):
    d = skill(tmp_path, "release-notes", {"scripts/check_release.sh": script})
    dg = ran(d, "bash scripts/check_release.sh")
    assert dg.kind == "needs_context", dg
    assert dg.tool == f'{needed} (scripts/check_release.sh says "{said}")', dg.tool


def test_a_script_that_wants_the_readers_tags_needs_the_readers_history(tmp_path):
    d = skill(tmp_path, "changelog", {"scripts/since_tag.sh": """\
        set -euo pipefail
        git init -q . 2>/dev/null; git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x
        last=$(git describe --tags --abbrev=0)
        git log --oneline "$last"..HEAD
        """})
    dg = ran(d, "bash scripts/since_tag.sh")
    assert (dg.kind, dg.tool) == ("needs_context", "the reader's git history (scripts/"
                                  "since_tag.sh says \"fatal: No names found, cannot describe "
                                  "anything.\")"), dg


@pytest.mark.parametrize("script, code, needed", [
    ('[ -f package.json ] || { echo "✖ package.json not found. cd into your React app '
     'first." >&2; exit 1; }\n', "bash scripts/add_component.sh Button",
     "the reader's package.json"),
    ("import sys, pathlib\nif not pathlib.Path('pyproject.toml').is_file():\n"
     "    sys.exit('Could not find pyproject.toml in the current directory')\n",
     "python3 scripts/bump.py minor", "the reader's pyproject.toml"),
    ("import sys, os\np = sys.argv[1]\nif not os.path.exists(p):\n"
     "    sys.exit(f'error: {p} does not exist - export it from your CRM first')\n",
     "python3 scripts/profile.py exports/sales.csv --top 5", "the reader's exports/sales.csv"),
])
def test_a_script_that_wants_the_readers_project_or_data_needs_that_file(tmp_path, script,
                                                                          code, needed):
    rel = code.split()[1]
    d = skill(tmp_path, "frontend-kit", {rel: script})
    dg = ran(d, code)
    assert dg.kind == "needs_context", dg
    assert dg.tool.startswith(f"{needed} ({rel} says \""), dg.tool


@pytest.mark.parametrize("script, needed", [
    ("import os, sys\nif not os.environ.get('GITHUB_TOKEN'):\n"
     "    sys.exit('error: GITHUB_TOKEN is not set (create one at github.com/settings/tokens)')\n",
     "GITHUB_TOKEN"),
    ("import sys, pathlib\nif not (pathlib.Path.home() / '.config/linear/auth.json').exists():\n"
     "    print('Not logged in. Run `linear-lite login` first.', file=sys.stderr)\n"
     "    sys.exit(1)\n", "a login or credential"),
    ("import os\nprint(os.environ['NOTION_API_KEY'][:4])\n", "NOTION_API_KEY"),
    ("import urllib.request\nurllib.request.urlopen('https://api.github.invalid/repos', "
     "timeout=5)\n", "the network"),
])
def test_a_script_that_wants_a_login_token_or_the_network_needs_it(tmp_path, script, needed):
    d = skill(tmp_path, "pr-digest", {"scripts/pr_digest.py": script})
    dg = ran(d, "python3 scripts/pr_digest.py --repo acme/web --state open")
    assert dg.kind == "needs_context", dg
    assert dg.tool.startswith(f"{needed} (scripts/pr_digest.py"), dg.tool


def test_the_quote_is_bounded_and_inert(tmp_path):
    d = skill(tmp_path, "release-notes", {"scripts/check.sh": (
        "printf 'error: not inside a git repository \\033[31m%s\\n' \"$(printf 'x%.0s' "
        "$(seq 400))\" >&2; exit 1\n")})
    dg = ran(d, "bash scripts/check.sh")
    assert dg.kind == "needs_context"
    assert "\x1b" not in dg.reason and "\\x1b[31m" in dg.reason
    assert len(dg.tool) < 320 and "…" in dg.tool


# ---- the planted counterparts: still the skill's defect ------------------------------------

def test_a_renamed_flag_fails_even_when_its_usage_talks_of_the_repository(tmp_path):
    d = skill(tmp_path, "release-notes", {"scripts/check_release.sh": """\
        case "${1:-}" in
          --upstream) shift ;;
          "") ;;
          *) echo "usage: check_release.sh [--upstream NAME]  (run inside a git repository)" >&2
             echo "error: unknown option: $1" >&2; exit 2 ;;
        esac
        """})
    dg = ran(d, "bash scripts/check_release.sh --remote origin")
    assert dg.kind == "defect", dg
    assert "--remote" in dg.reason


def test_a_module_that_lost_a_function_fails_even_when_its_name_says_token(tmp_path):
    d = skill(tmp_path, "pr-digest", {
        "scripts/ghlib.py": "import os\n\ndef token_from_env():\n"
                            "    return os.environ.get('GITHUB_TOKEN')\n",
        "scripts/pr_digest.py": "from ghlib import auth_token\nprint(auth_token())\n"})
    dg = ran(d, "python3 scripts/pr_digest.py --repo acme/web")
    assert dg.kind == "defect", dg
    assert "cannot import name 'auth_token'" in dg.reason


def test_an_attribute_error_about_the_repository_helper_is_the_codes(tmp_path):
    d = skill(tmp_path, "release-notes", {
        "scripts/gitutil.py": "def branch_name():\n    return 'main'\n",
        "scripts/notes.py": "import gitutil\nprint(gitutil.current_branch())\n"})
    dg = ran(d, "python3 scripts/notes.py")
    assert dg.kind == "defect", dg
    assert "has no attribute 'current_branch'" in dg.reason


@pytest.mark.parametrize("said", [
    'echo "error: template $SKILL_DIR/templates/Component.tsx not found" >&2; exit 1',
    'echo "Cannot find templates/Component.tsx. Run this script from your project root." '
    '>&2; exit 1',
])
def test_a_shipped_template_that_is_gone_fails_whatever_the_message(tmp_path, said):
    d = skill(tmp_path, "frontend-kit", {"scripts/add_component.sh": said + "\n",
                                         "templates/Page.tsx": "export {}\n"})
    dg = ran(d, "bash scripts/add_component.sh Button")
    assert dg.kind == "defect", dg


def test_a_script_given_no_argument_that_prints_its_usage_is_documented_wrong(tmp_path):
    d = skill(tmp_path, "release-notes", {"scripts/tag.sh": (
        '[ $# -ge 1 ] || { echo "usage: tag.sh VERSION (inside your repository)" >&2; '
        'exit 64; }\n')})
    dg = ran(d, "bash scripts/tag.sh")
    assert dg.kind == "defect", dg


def test_a_missing_argument_is_no_missing_file(tmp_path):
    d = skill(tmp_path, "sales-profile", {"scripts/profile.py": (
        "import sys\nsys.exit('error: missing required option --input data.csv')\n")})
    dg = ran(d, "python3 scripts/profile.py --top 5")
    assert dg.kind == "defect", dg


def test_gits_own_refusal_under_a_python_scripts_check_call_needs_a_git_repository(tmp_path):
    d = skill(tmp_path, "release-notes", {"scripts/version.py": (
        "import subprocess\n"
        "root = subprocess.run(['git', 'rev-parse', '--show-toplevel'], check=True,\n"
        "                      capture_output=False, text=True)\n")})
    dg = ran(d, "python3 scripts/version.py --next minor")
    assert dg.kind == "needs_context", dg
    assert dg.tool.startswith("a git repository (scripts/version.py:2 says \"fatal: not a git "
                              "repository"), dg.tool


def test_a_release_refused_for_an_earlier_blocks_output_needs_a_clean_work_tree(tmp_path):
    d = skill(tmp_path, "release-notes", {"scripts/tag.sh": (
        'echo "Refusing to tag: working tree is dirty (commit or stash first)" >&2; exit 1\n')})
    dg = ran(d, "bash scripts/tag.sh v1.4.0")
    assert (dg.kind, dg.tool) == ("needs_context", "a clean git working tree (scripts/tag.sh "
                                  "says \"Refusing to tag: working tree is dirty (commit or "
                                  "stash first)\")"), dg


def test_a_key_error_on_the_codes_own_name_is_the_codes(tmp_path):
    d = skill(tmp_path, "sales-profile", {"scripts/dedupe.py": (
        "row = {'id': 1}\nprint(row['PRIMARY_KEY'])\n")})
    dg = ran(d, "python3 scripts/dedupe.py")
    assert dg.kind == "defect", dg


def test_a_shipped_file_named_by_claude_ais_install_path_is_the_skills(tmp_path):
    d = skill(tmp_path, "form-fill", {"scripts/fill.sh": (
        'echo "error: /mnt/skills/user/form-fill/assets/fields.yaml not found" >&2; exit 1\n')})
    dg = ran(d, "bash scripts/fill.sh --mode fast")
    assert dg.kind == "defect", dg


def test_a_path_that_looks_like_an_http_status_or_a_login_is_still_a_path(tmp_path):
    """A CI runner's build folder (``/builds/503/auth-service/...``) in a script's message is
    no HTTP 503 and no login: the shipped template that is gone still fails the skill (this
    test failed whenever pytest's own temp folder was numbered 500-599)."""
    d = skill(tmp_path / "builds" / "503" / "auth-service", "frontend-kit", {
        "scripts/add_component.sh":
            'echo "error: template $SKILL_DIR/templates/Component.tsx not found" >&2; exit 1\n',
        "templates/Page.tsx": "export {}\n"})
    dg = ran(d, "bash scripts/add_component.sh Button")
    assert dg.kind == "defect", dg
