"""The doc test at the runtime level on a block that names the skill through Claude Code's
``{baseDir}`` and claude.ai's ``/mnt/skills/user/<name>/``: the block runs the copy's files,
and a failure is diagnosed on the words that ran, so it is placed on the line of the command
that failed (not the block's first line) and the skill's own shipped input is no input the
reader supplies."""

from __future__ import annotations

from tests.integration.test_doc_tests import build, doc_test

FILL = """\
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="fill.py")
    p.add_argument("--config", required=True)
    p.add_argument("--mode", choices=["fast", "full"], default="fast")
    a = p.parse_args()
    fields = [ln.split(":")[0] for ln in open(a.config) if ":" in ln]
    if "signature" not in fields:
        sys.exit(f"fill.py: {a.config} has no signature field")
    print("filled", len(fields), "fields")
    """


def skill(mode: str, fields: str) -> dict[str, str]:
    return {
        "SKILL.md": f"""\
            ---
            name: form-fill
            description: Fill the standard intake form from its field table.
            ---
            # Form fill

            ```bash
            mkdir -p out
            python3 {{baseDir}}/scripts/fill.py \\
              --config /mnt/skills/user/form-fill/assets/fields.yaml --mode {mode}
            ```
            """,
        "scripts/fill.py": FILL,
        "assets/fields.yaml": fields,
    }


FIELDS = "name: text\ndate: date\nsignature: image\n"
BLOCK = 8  # SKILL.md's line of `mkdir -p out`


def test_a_clean_block_through_the_spellings_runs_the_copy(tmp_path):
    build(tmp_path, {"form-fill": skill("full", FIELDS)})
    result, _ = doc_test(tmp_path, tmp_path / "run", "form-fill")
    assert (result.status, result.final_text) == (
        "completed", "1 of 1 documented block(s) ran without a skill defect")


def test_a_rejected_option_is_placed_on_its_command_line(tmp_path):
    build(tmp_path, {"form-fill": skill("turbo", FIELDS)})
    result, _ = doc_test(tmp_path, tmp_path / "run", "form-fill")
    assert result.status == "failed", result
    assert result.final_text.startswith(
        f"SKILL.md line {BLOCK + 1}: the skill's fill.py rejects what SKILL.md documents: "
        "argument --mode: invalid choice: 'turbo'"), result.final_text


def test_the_skills_own_input_through_the_install_path_is_no_readers_input(tmp_path):
    build(tmp_path, {"form-fill": skill("fast", "name: text\ndate: date\n")})
    result, _ = doc_test(tmp_path, tmp_path / "run", "form-fill")
    assert result.status == "failed", result
    assert result.final_text.startswith(
        f"SKILL.md line {BLOCK + 1}: the skill's scripts/fill.py exited 1 with the "
        "documented arguments"), result.final_text
    assert "has no signature field" in result.final_text
