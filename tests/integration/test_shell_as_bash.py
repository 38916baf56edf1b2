"""The doc test reads shell as bash does (issue 45, class 3): a failure bash itself reports
about the block (it cannot parse it, a redirection from a file that is not here, an
ambiguous redirect) means the skill's script never saw its arguments, so it is never the
script's rejection of them: a placeholder, an illustration or the reader's input, never a
`fail`. Real blocks, run by `LiteralRuntime.run_doc_test` with real bash."""

from __future__ import annotations

from textwrap import dedent

import pytest

from tests.integration.test_doc_tests import build, doc_test

DIGEST = """\
    \"\"\"Summarise a week of pull requests for some teams.\"\"\"
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="digest.py")
    p.add_argument("--teams", nargs="+", required=True)
    p.add_argument("--format", choices=["md", "json"], default="md")
    p.add_argument("--since", default="7d")
    a = p.parse_args()
    if not sys.stdin.isatty() and not a.teams:
        sys.exit("digest.py: no teams")
    print(f"# Digest for {', '.join(a.teams)} since {a.since}")
    """


def skill(block: str) -> dict[str, str]:
    return {
        "SKILL.md": "---\nname: pr-digest\ndescription: Summarise a week of pull requests "
                    "for the teams you lead. Use for the Monday status mail.\n---\n"
                    "# PR digest\n\nBuild the digest:\n\n```bash\n" + dedent(block) + "```\n",
        "scripts/digest.py": DIGEST,
    }


BLOCKS = {
    # bash reads `<team slugs>` as `<team` and `slugs>`: a syntax error, exit 2
    "placeholder with a space": "python3 scripts/digest.py --teams <team slugs>\n",
    "placeholder with a choice": "python3 scripts/digest.py --teams core --format <md|json>\n",
    "placeholder with a note": "python3 scripts/digest.py --teams core --since <days (7d)>\n",
    "a redirection from the reader's file":
        "python3 scripts/digest.py --teams core --format json < teams.txt\n",
    "an ambiguous redirect": 'OUT="week 12.md"\npython3 scripts/digest.py --teams core > $OUT\n',
}


@pytest.mark.parametrize("block", BLOCKS.values(), ids=BLOCKS.keys())
def test_a_block_bash_refuses_is_never_the_scripts_rejection(tmp_path, block):
    build(tmp_path, {"pr-digest": skill(block)})
    result, _ = doc_test(tmp_path, tmp_path / "run", "pr-digest")
    assert result.status != "failed", result
    assert "with the documented arguments" not in result.final_text


def test_the_script_rejecting_a_documented_choice_still_fails(tmp_path):
    build(tmp_path, {"pr-digest": skill("python3 scripts/digest.py --teams core "
                                        "--format html\n")})
    result, _ = doc_test(tmp_path, tmp_path / "run", "pr-digest")
    assert result.status == "failed", result
    assert "argument --format: invalid choice: 'html'" in result.final_text


PUBLISHING = """\
    # Publishing a page

    Copy the template into the site, then fill it in:

    ```bash
    mkdir -p <site-root>/<slug> && cp templates/landing.html <site-root>/<slug>/index.html
    ```

    ```sh
    cp templates/landing.html <site root>/<page slug>/ || true
    ```
    """


def test_placeholders_in_a_linked_reference_file_are_not_redirections(tmp_path):
    """`<slug> && cp` is no redirection into `cp` that leaves the template to run as a
    program: the copied template is a copied file, never a script without its exec bit."""
    from aeval.skill.skill_md import load_skill
    from aeval.verdicts.static_check import static_check

    build(tmp_path, {"site-builder": {
        "SKILL.md": """\
            ---
            name: site-builder
            description: Build a landing page from the bundled template. Use when asked
              for a microsite.
            ---
            # Site builder

            Follow [the publishing guide](references/publishing.md).
            """,
        "references/publishing.md": PUBLISHING,
        "templates/landing.html": "<html><body>{{ title }}</body></html>\n",
    }})
    found = static_check(load_skill(tmp_path / "skills" / "site-builder"))
    assert [str(f) for f in found] == []


# ---- a skill's own SKILL_DIR ----------------------------------------------------------------

OWN_SKILL_DIR = {
    "in the block, through $HOME": """\
        SKILL_DIR="$HOME/.claude/skills/pr-digest/scripts"
        python3 "$SKILL_DIR/digest.py" --teams core
        """,
    "exported in a setup block, used in the next": """\
        export SKILL_DIR=~/.claude/skills/pr-digest/scripts
        ```

        Then:

        ```bash
        python3 $SKILL_DIR/digest.py --teams web --since 14d
        """,
    "through Claude Code's variable": """\
        SKILL_DIR="${CLAUDE_SKILL_DIR}/scripts"
        python3 ${SKILL_DIR}/digest.py --teams core --format json
        """,
}


@pytest.mark.parametrize("block", OWN_SKILL_DIR.values(), ids=OWN_SKILL_DIR.keys())
def test_a_skill_that_sets_its_own_skill_dir_is_read_as_it_sets_it(tmp_path, block):
    from aeval.skill.skill_md import load_skill
    from aeval.verdicts.static_check import static_check

    build(tmp_path, {"pr-digest": skill(block)})
    assert [str(f) for f in static_check(load_skill(tmp_path / "skills" / "pr-digest"))] == []
    result, _ = doc_test(tmp_path, tmp_path / "run", "pr-digest")
    assert result.status == "completed", result
    assert "without a skill defect" in result.final_text


def test_a_defect_through_the_skills_own_skill_dir_still_fails(tmp_path):
    from aeval.skill.skill_md import load_skill
    from aeval.verdicts.static_check import static_check

    block = OWN_SKILL_DIR["in the block, through $HOME"].replace("--teams core",
                                                                 "--teams core --format html")
    build(tmp_path, {"pr-digest": skill(block)})
    result, _ = doc_test(tmp_path, tmp_path / "run", "pr-digest")
    assert result.status == "failed", result
    assert "argument --format: invalid choice: 'html'" in result.final_text
    gone = tmp_path / "gone"
    build(gone, {"pr-digest": skill(block.replace("digest.py", "digests.py"))})
    (found,) = static_check(load_skill(gone / "skills" / "pr-digest"))
    assert "runs scripts/digests.py, which the skill does not have" in str(found)


# ---- only real commands are missing host tools ----------------------------------------------

PSEUDO = {
    "a fallback word": ("test -f ~/.digestrc || skip\n"
                        "python3 scripts/digest.py --teams core\n", "skip"),
    "a sentence written in the block": ("Run the digest for your own team first\n"
                                        "python3 scripts/digest.py --teams core\n", "Run"),
    "another fallback word": ("ls digests/*.md 2>/dev/null || ignore\n"
                              "python3 scripts/digest.py --teams core --since 30d\n", "ignore"),
}


@pytest.mark.parametrize(("block", "word"), PSEUDO.values(), ids=PSEUDO.keys())
def test_a_pseudo_command_is_never_a_missing_host_tool(tmp_path, block, word):
    build(tmp_path, {"pr-digest": skill(block)})
    result, _ = doc_test(tmp_path, tmp_path / "run", "pr-digest")
    assert result.status != "failed", result
    assert f"needs {word}" not in result.final_text, result
    assert all(o.tool is None for o in result.outcomes), result


def test_a_real_program_that_is_missing_is_still_needed(tmp_path):
    build(tmp_path, {"pr-digest": skill("python3 scripts/digest.py --teams core | "
                                        "glow-md-renderer -w 80\n")})
    result, _ = doc_test(tmp_path, tmp_path / "run", "pr-digest")
    assert result.status == "untested" and "needs glow-md-renderer" in result.final_text, result


WEEKLY_SH = """\
    #!/usr/bin/env bash
    # The weekly digest of one team.
    set -euo pipefail
    echo "weekly digest for ${1:?team}"
    """


@pytest.mark.parametrize("helper", ['"$(team-plugins root)', '"${CLAUDE_PLUGIN_ROOT}',
                                    "$CLAUDE_PLUGIN_ROOT"])
def test_a_marketplace_path_helper_to_the_skill_runs_the_skills_own_file(tmp_path, helper):
    from aeval.skill.skill_md import load_skill
    from aeval.verdicts.static_check import static_check

    quote = '"' if helper.startswith('"') else ""
    files = skill(f"bash {helper}/skills/pr-digest/scripts/weekly.sh{quote} core\n")
    files["scripts/weekly.sh"] = WEEKLY_SH
    build(tmp_path, {"pr-digest": files})
    assert [str(f) for f in static_check(load_skill(tmp_path / "skills" / "pr-digest"))] == []
    result, _ = doc_test(tmp_path, tmp_path / "run", "pr-digest")
    assert result.status == "completed", result
    assert "without a skill defect" in result.final_text
