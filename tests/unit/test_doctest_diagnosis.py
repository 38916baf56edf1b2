"""Which command of a failed SKILL.md block the doc test blames, and on which line
(aeval.verdicts.doctest.diagnose).

Each block runs for real (bash, python, a skill folder on disk) and its real exit code and
output go to `diagnose`, as the literal runtime hands them over; ``failed`` is the simple
command bash's ERR trap names, or None when bash named none.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aeval.skill.shellparse import effects
from aeval.verdicts.diagnosis import diagnose, diagnose_own
from tests.unit.test_doctest import run_block

FILL = """\
import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
p = argparse.ArgumentParser(prog="fill.py")
p.add_argument("action", choices=["list", "fill", "letter", "signature", "preview", "abort"])
p.add_argument("inputs", nargs="*")
p.add_argument("--mode", choices=["fast", "full"], default="fast")
p.add_argument("--input")
a = p.parse_args()
if a.action == "list":
    print("fill.py: 3 form fields")
elif a.action == "fill":
    print("fill.py: no fillable field in the form", file=sys.stderr)
    sys.exit(1)
elif a.action == "letter":
    open("templates/letter.md").read()
elif a.action == "signature":
    open(HERE / "assets" / "signature.png").read()
elif a.action == "preview":
    subprocess.run(["qpdf-aeval-absent", "--show-npages", "form.pdf"])


class Abort(Exception):
    pass


if a.action == "abort":
    raise Abort("the form has no pages")
"""


@pytest.fixture
def skill(tmp_path) -> Path:
    """A skill like Anthropic's pdf one: a SKILL.md, scripts/, templates/, a root helper."""
    d = tmp_path / "pdf-forms"
    (d / "scripts").mkdir(parents=True)
    (d / "templates").mkdir()
    (d / "SKILL.md").write_text("---\nname: pdf-forms\ndescription: Fill PDF forms\n---\n")
    (d / "scripts" / "fill.py").write_text(FILL)
    (d / "scripts" / "check.py").write_text("print('check.py: form.pdf has fields')\n")
    (d / "forms.py").write_text("FIELDS = ['name', 'date']\n")
    (d / "form.pdf").write_text("%PDF-1.4\n")
    return d


def diagnosed(skill: Path, code: str, failed: str | None = None,
              declared: frozenset[str] = frozenset(), names: tuple[str, ...] = ()):
    cwd = skill
    if names:  # run from a reader's project the skill is installed in
        cwd = skill.parent / "project"
        (cwd / ".claude" / "skills").mkdir(parents=True, exist_ok=True)
        if not (cwd / ".claude" / "skills" / skill.name).exists():
            (cwd / ".claude" / "skills" / skill.name).symlink_to(skill)
    exit_code, output = run_block(code, cwd)
    assert exit_code != 0, output
    return diagnose(code, exit_code, output, skill, declared, failed, names)


REJECTED = ("the skill's fill.py rejects what SKILL.md documents: argument --mode: invalid "
            "choice: 'turbo' (choose from 'fast', 'full')")


@pytest.mark.parametrize("code, failed, at", [
    # bash named no command: the block's only skill script stands for it, on its own line
    ("mkdir -p out\npython scripts/fill.py fill --mode turbo", None, 1),
    # bash names a pipeline's last command: any command of that pipeline may have failed,
    # and an earlier, unrelated pipeline is not suspected
    ("printf 'name\\n' | head -1\nmkdir -p out\n"
     "python scripts/fill.py fill --mode turbo | tee out/log.txt", "tee out/log.txt", 2),
    ("mkdir -p out\npython scripts/fill.py fill --mode turbo 2>&1 | tee out/log.txt",
     "tee out/log.txt", 1),
    # the skill named through the folder it is installed in
    ("mkdir -p out\npython .claude/skills/pdf-forms/scripts/fill.py fill --mode turbo",
     None, 1),
])
def test_the_skill_script_that_failed_is_named_with_its_line(skill, code, failed, at):
    d = diagnosed(skill, code, failed, names=("pdf-forms",) if ".claude" in code else ())
    assert (d.kind, d.reason, d.file, d.own, d.at) == (
        "defect", REJECTED, "scripts/fill.py", "usage", at)


def test_a_failed_command_bash_named_is_placed_on_its_line_whatever_the_rule(skill):
    code = "mkdir -p out\npdftotext-aeval-absent form.pdf out/form.txt"
    d = diagnosed(skill, code, "pdftotext-aeval-absent form.pdf out/form.txt")
    assert (d.kind, d.tool, d.at) == ("missing_tool", "pdftotext-aeval-absent", 1)
    # bash named a command the block does not hold (one of a sourced file): no line
    (skill / "scripts" / "env.sh").write_text("pdftotext-aeval-absent form.pdf\n")
    d = diagnosed(skill, "mkdir -p out\nsource scripts/env.sh", "pdftotext-aeval-absent form.pdf")
    assert (d.kind, d.tool, d.at) == ("missing_tool", "pdftotext-aeval-absent", None)


@pytest.mark.parametrize("code, failed, reason, file", [
    # several skill scripts and no command named: the output says which one rejected
    ("python scripts/check.py form.pdf\npython scripts/fill.py fill --mode turbo", None,
     REJECTED, "scripts/fill.py"),
    ("python .claude/skills/pdf-forms/scripts/check.py form.pdf\n"
     "python .claude/skills/pdf-forms/scripts/fill.py fill --mode turbo", None,
     REJECTED, "scripts/fill.py"),
    # ... or which one the skill does not have, even when a script it has spoke first
    ("python scripts/fill.py list\npython scripts/flatten.py form.pdf", None,
     "SKILL.md runs scripts/flatten.py, which the skill does not have", "scripts/flatten.py"),
    ("python scripts/fill.py list\n./scripts/convert form.pdf", None,
     "SKILL.md runs scripts/convert, which the skill does not have", "scripts/convert"),
    ("python scripts/fill.py list\npython build.py form.pdf", None,
     "SKILL.md runs build.py, which the skill does not have", "build.py"),
    ("python scripts/fill.py list\ncat templates/invoice.md", "cat templates/invoice.md",
     "SKILL.md runs templates/invoice.md, which the skill does not have",
     "templates/invoice.md"),
])
def test_with_several_skill_scripts_the_output_names_the_broken_one(skill, code, failed,
                                                                    reason, file):
    names = ("pdf-forms",) if ".claude" in code else ()
    d = diagnosed(skill, code, failed, names=names)
    at = None if failed is None else 1  # the line of the command bash named
    assert (d.kind, d.reason, d.file, d.own, d.at) == ("defect", reason, file, None, at)


def test_a_file_in_a_folder_the_skill_lacks_is_not_the_skills_unless_it_is_a_script(skill):
    d = diagnosed(skill, "python scripts/fill.py list\ncat assets/logo.txt", "cat assets/logo.txt")
    assert (d.kind, d.reason) == ("inconclusive", "exited 1; not in the skill's own code")


def test_a_command_missing_without_a_word_from_bash_is_still_a_need(skill):
    d = diagnosed(skill, "pdftotext-aeval-absent form.pdf out.txt 2>/dev/null")
    assert (d.kind, d.reason, d.tool) == (
        "missing_tool", "needs a command that is not installed (exit 127)", None)


def test_a_program_a_skill_script_starts_is_named_and_declared_ones_are_the_environment(skill):
    code = "python scripts/fill.py preview"
    d = diagnosed(skill, code)
    assert (d.kind, d.reason, d.tool) == (
        "missing_tool", "needs qpdf-aeval-absent", "qpdf-aeval-absent")
    d = diagnosed(skill, code, declared=frozenset({"qpdf-aeval-absent"}))
    assert (d.kind, d.reason, d.tool) == (
        "inconclusive", "declared host tool qpdf-aeval-absent is missing", "qpdf-aeval-absent")


def test_a_traceback_in_a_skill_script_names_the_file_and_line(skill):
    d = diagnosed(skill, "python scripts/fill.py abort")
    assert (d.kind, d.reason, d.file) == (
        "defect", "an exception raised in the skill's scripts/fill.py:31", "scripts/fill.py")


@pytest.mark.parametrize("action, kind, reason", [
    # a file the skill should ship, opened relative to the skill or through __file__
    ("letter", "defect", "FileNotFoundError: [Errno 2] No such file or directory: "
                         "'templates/letter.md' raised in the skill's scripts/fill.py:19"),
    ("signature", "defect", "FileNotFoundError: [Errno 2] No such file or directory: "
                            "'{skill}/assets/signature.png' raised in the skill's "
                            "scripts/fill.py:21"),
])
def test_a_skill_file_its_script_cannot_open_is_a_defect(skill, action, kind, reason):
    (skill / "assets").mkdir()
    d = diagnosed(skill, f"python scripts/fill.py {action}")
    assert (d.kind, d.reason) == (kind, reason.format(skill=skill.resolve()))


@pytest.mark.parametrize("path", ["../shared/letter.md", "{tmp}/inbox/letter.md"])
def test_a_file_outside_the_skill_its_script_cannot_open_is_an_input(skill, path):
    path = path.format(tmp=skill.parent)
    (skill / "scripts" / "read.py").write_text(f"open({path!r}).read()\n")
    d = diagnosed(skill, "python scripts/read.py")
    assert (d.kind, d.reason) == (
        "inconclusive", f"FileNotFoundError: [Errno 2] No such file or directory: '{path}' "
                        "(an input the block expects is missing)")


def _own(skill: Path, code: str, exit_code: int, output: str):
    cmd = effects(code)
    args = code.split("scripts/fill.py ", 1)[1].split()
    d = diagnose_own("scripts/fill.py", args, False, exit_code, output, skill, cmd, frozenset())
    return None if d is None else (d.kind, d.reason)


def test_an_input_the_reader_supplies_is_found_in_every_argument_form(skill):
    said = "fill.py: no fillable field in the form"
    for code, missing in [
        ("python scripts/fill.py fill --input=my_forms/tax.pdf", "my_forms/tax.pdf"),
        ("python scripts/fill.py fill --input my_forms/tax.pdf", "my_forms/tax.pdf"),
        ("python scripts/fill.py fill form.pdf my_forms/tax.pdf", "my_forms/tax.pdf"),
        ("python scripts/fill.py fill --input=forms/year=2024/tax.pdf",
         "forms/year=2024/tax.pdf"),
    ]:
        assert _own(skill, code, 1, said) == (
            "inconclusive", "scripts/fill.py exited 1; it needs an input the reader "
                            f"supplies: {missing}")
    # an absolute path outside what a case's sandbox shows is the reader's machine's, even
    # where the host running aeval has it (a case never sees the host's /tmp, /var or /srv)
    (skill.parent / "inbox").mkdir()
    (skill.parent / "inbox" / "tax.pdf").write_text("%PDF-1.4\n")
    for missing in [f"{skill.parent}/inbox/tax.pdf", "/var/log", "/srv/forms/tax.pdf"]:
        assert _own(skill, f"python scripts/fill.py fill {missing}", 1, said) == (
            "inconclusive", "scripts/fill.py exited 1; it needs an input the reader "
                            f"supplies: {missing}")
    # what exists, in the skill or at an absolute path every case sees, or what the block
    # makes, is no input
    for code in ["python scripts/fill.py fill --input=form.pdf",
                 "python scripts/fill.py fill /etc/hosts",
                 "mkdir -p out && python scripts/fill.py fill form.pdf out/filled.pdf"]:
        shown = code.split("fill.py ", 1)[1]
        assert _own(skill, code, 1, said) == (
            "defect", f"the skill's scripts/fill.py exited 1 with the documented arguments "
                      f"`{shown}`: {said}"), code


def test_a_pipeline_tries_the_command_bash_named_before_the_rest_of_it(skill):
    code = "python scripts/check.py form.pdf | python scripts/fill.py fill --mode turbo"
    d = diagnosed(skill, code, "python scripts/fill.py fill --mode turbo")
    assert (d.kind, d.reason, d.file, d.own, d.at) == (
        "defect", REJECTED, "scripts/fill.py", "usage", 0)


def test_a_module_of_the_skill_its_script_cannot_import_is_a_defect_not_a_need(skill):
    (skill / "scripts" / "report.py").write_text("import forms\n\nprint(forms.FIELDS)\n")
    d = diagnosed(skill, "python scripts/report.py")
    assert (d.kind, d.reason, d.file) == (
        "defect", "ModuleNotFoundError: No module named 'forms' raised in the skill's "
                  "scripts/report.py:1", "scripts/report.py")


def test_a_traceback_that_names_the_skill_file_relative_to_the_skill_counts(skill):
    output = ('Traceback (most recent call last):\n  File "scripts/fill.py", line 12, in '
              '<module>\nValueError: no form fields\n')
    d = diagnose("python scripts/fill.py list", 1, output, skill)
    assert (d.kind, d.reason) == (
        "defect", "ValueError: no form fields raised in the skill's scripts/fill.py:12")


def test_only_the_last_200_characters_of_a_rejection_are_quoted(skill):
    said = "fill.py: " + "field name too long " * 20
    d = diagnose_own("scripts/fill.py", ["fill"], False, 1, said, skill, effects("x"),
                     frozenset())
    assert d.reason == ("the skill's scripts/fill.py exited 1 with the documented arguments "
                        f"`fill`: {said.strip()[:200]}")


@pytest.mark.parametrize("args, output, named", [
    (["list", "--where=status=open"], "fill.py: unknown option --where", "--where"),
    (["fill", "-q"], "error: unknown option -q", "-q"),
    (["fill", "--mode", "turbo"], "usage: fill.py fill\nfill: --mode is not supported", "fill"),
    (["Export", "form.pdf"], "unknown command Export", "Export"),
    # the usage synopsis after the rejection repeats the accepted -r: the rejected -e is named
    (["-r", "env.required", "-e", "demo.env"],
     "check_env.sh: unknown option -e\nusage: check_env.sh -r REQUIRED -e ENVFILE [-s]", "-e"),
])
def test_a_rejection_names_the_documented_action_or_flag_it_mentions(skill, args, output,
                                                                     named):
    d = diagnose_own("scripts/fill.py", args, False, 2, output, skill, effects("x"),
                     frozenset())
    assert (d.kind, d.reason, d.own) == (
        "defect", f"the skill's scripts/fill.py rejects the documented {named!r}: "
                  f"{output.splitlines()[-1]}", "rejected")


@pytest.mark.parametrize("args, output", [
    # the skill says no to the reader's file, not to a word of its documented interface
    (["fill", "form.pdf"], "error: cannot read form.pdf: not a valid PDF"),
    (["fill", "-"], "error: invalid input - expected a PDF on stdin"),
])
def test_a_rejection_of_an_input_names_the_whole_documented_call(skill, args, output):
    d = diagnose_own("scripts/fill.py", args, False, 2, output, skill, effects("x"),
                     frozenset())
    assert d.reason == ("the skill's scripts/fill.py exited 2 with the documented arguments "
                        f"`{' '.join(args)}`: {output}")


# ---- the skill's own files ----------------------------------------------------------------


def _direct(skill: Path, name: str, exit_code: int, output: str,
            declared: frozenset[str] = frozenset()):
    d = diagnose_own(f"scripts/{name}", [], True, exit_code, output, skill,
                     effects(f"./scripts/{name}"), declared)
    return None if d is None else (d.kind, d.reason, d.tool)


@pytest.mark.parametrize("name", ["setup.sh", "setup.bash", "setup"])
def test_a_shell_script_run_directly_needs_no_interpreter_line(skill, name):
    (skill / "scripts" / name).write_text("set -e\nls forms\n")
    (skill / "scripts" / name).chmod(0o755)
    said = "ls: cannot access 'forms': No such file or directory"
    assert _direct(skill, name, 2, said) == (
        "defect", f"the skill's scripts/{name} exited 2 with the documented arguments ``: "
                  f"{said}", None)


@pytest.mark.parametrize("first, program", [
    (b"#!venv/bin/python3 -u", "'venv/bin/python3'"),
    (b"#!.venv/b\xefn/python3", "'.venv/b\ufffdn/python3'"),  # not UTF-8: still shown
])
def test_a_relative_interpreter_is_named_on_its_own(skill, first, program):
    (skill / "scripts" / "tool.py").write_bytes(first + b"\nprint(1)\n")
    (skill / "scripts" / "tool.py").chmod(0o755)
    assert _direct(skill, "tool.py", 126, "bad interpreter") == (
        "defect", "SKILL.md runs scripts/tool.py directly, but its interpreter line names a "
                  f"relative program {program}", None)


def test_an_interpreter_line_without_a_program_is_not_a_missing_tool(skill):
    (skill / "scripts" / "tool.py").write_text("#!/usr/bin/env\nprint(1)\n")
    (skill / "scripts" / "tool.py").chmod(0o755)
    assert _direct(skill, "tool.py", 127, "/usr/bin/env: 'print(1)': No such file")[0] != (
        "missing_tool")


def test_a_declared_interpreter_missing_on_the_host_names_the_tool(skill):
    (skill / "scripts" / "tool.js").write_text("#!/usr/bin/env node-aeval-absent\n")
    (skill / "scripts" / "tool.js").chmod(0o755)
    assert _direct(skill, "tool.js", 127, "env: 'node-aeval-absent': No such file",
                   frozenset({"node-aeval-absent"})) == (
        "inconclusive", "declared host tool node-aeval-absent is missing", "node-aeval-absent")


@pytest.mark.parametrize("mode", [0o666, 0o644])
def test_a_file_run_directly_is_executable_only_with_an_execute_bit(skill, mode):
    (skill / "scripts" / "fill.py").chmod(mode)
    assert _direct(skill, "fill.py", 126, "Permission denied") == (
        "defect", f"SKILL.md runs scripts/fill.py directly, but it is not executable "
                  f"(mode {mode:o})", None)
    (skill / "scripts" / "fill.py").chmod(0o701)  # executable by others only: it starts
    assert _direct(skill, "fill.py", 1, "fill.py: no form")[1].startswith("the skill's")


def test_a_link_run_directly_is_as_executable_as_its_target(skill):
    (skill / "scripts" / "fill.py").chmod(0o644)
    (skill / "scripts" / "fill").symlink_to("fill.py")
    assert _direct(skill, "fill", 126, "Permission denied") == (
        "defect", "SKILL.md runs scripts/fill directly, but it is not executable (mode 644)",
        None)


@pytest.mark.parametrize("word, expected", [
    # a URL or a flag that passes through a folder named after the skill is no file of it
    ("https://raw.githubusercontent.com/acme/skills/main/pdf-forms/scripts/fill.py", None),
    ("--template=.claude/skills/pdf-forms/templates/letter.md", None),
    ("scripts/$FORM.py", None),
    # named through $SKILL_DIR: the skill's, wherever it points
    ("$SKILL_DIR/bin/setup", "bin/setup"),
    ("${CLAUDE_SKILL_DIR}/bin/setup", "bin/setup"),
    # through a folder named after the skill, a file right under it too
    (".claude/skills/pdf-forms/fill.py", "fill.py"),
    ("scripts/lib/fields.py", "scripts/lib/fields.py"),
    ("scripts/export_XLSX.py", "scripts/export_XLSX.py"),
    ("forms.json", "forms.json"),  # a file the skill has
])
def test_which_word_names_a_file_of_the_skill(skill, word, expected):
    from aeval.verdicts.doctest import own_file

    (skill / "forms.json").write_text("{}\n")
    assert own_file(word, skill, ("pdf-forms",)) == expected


def test_a_link_in_the_skill_folder_is_not_a_folder_or_file_the_skill_keeps(skill, tmp_path):
    from aeval.verdicts.doctest import own_file

    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "util.rb").write_text("puts 1\n")
    (skill / "shared").symlink_to(tmp_path / "shared")
    (skill / "util.rb").symlink_to(tmp_path / "shared" / "util.rb")
    assert own_file("shared/new.rb", skill) is None
    assert own_file("helper.rb", skill) is None


# ---- plans ----------------------------------------------------------------------------------


def test_skipped_blocks_keep_their_line_code_and_whole_reason():
    from aeval.skill.shell_blocks import plan_blocks

    console = "$ python scripts/fill.py list\n3 form fields"
    indented = "  # the same, for a folder of forms:\n  # python scripts/fill.py list forms/"
    plans = plan_blocks([(7, console), (12, "pip install pypdf"), (20, indented)])
    assert [(p.line, p.code, p.action, p.reason) for p in plans] == [
        (7, console, "skip", "a console session ('$ ' prompts mixed with output)"),
        (12, "pip install pypdf", "skip",
         "installs host software (declare it in the case's setup)"),
        (20, indented, "skip", "no command (comments only)"),
    ]


def test_a_block_after_blank_lines_keeps_the_line_of_its_first_command():
    from aeval.skill import markdown
    from aeval.skill.shell_blocks import doc_blocks

    md = ("# Forms\n\nList the fields:\n\n"
          "```bash\n\n\npython3 scripts/fill.py list\necho done\n```\n")
    fences, _ = markdown.parse(md)
    (block,) = doc_blocks(fences, ["python3 scripts/fill.py list\necho done"])
    assert block.line == 8


def test_a_clean_block_that_moved_the_shell_does_not_excuse_an_own_file_defect():
    from aeval.skill.shell_blocks import plan_blocks
    from aeval.verdicts.doctest import BlockOutcome, Diagnosis, discounted

    earlier, later = plan_blocks([(3, "cd forms && export FORMS_DIR=$PWD"),
                                  (9, "python scripts/fill.py fill --mode turbo")])
    d = Diagnosis("defect", REJECTED, file="scripts/fill.py", own="rejected")
    ok = BlockOutcome(3, "ok")
    assert discounted(later, d, [(earlier, ok)], frozenset({"scripts/fill.py"})) is None
    failed = BlockOutcome(3, "inconclusive")
    assert discounted(later, d, [(earlier, failed)], frozenset({"scripts/fill.py"})) == (
        "may depend on line 3 (inconclusive: it exports $FORMS_DIR)")


def test_a_skill_script_run_from_a_sourced_file_is_blamed_without_a_line(skill):
    """bash names the command inside the sourced file: the block holds no such line."""
    (skill / "scripts" / "env.sh").write_text("python scripts/fill.py fill --mode turbo\n")
    d = diagnosed(skill, "mkdir -p out\nsource scripts/env.sh",
                  "python scripts/fill.py fill --mode turbo")
    assert (d.kind, d.reason, d.file, d.own, d.at) == (
        "defect", REJECTED, "scripts/fill.py", "usage", None)


def test_an_interpreter_line_that_is_not_utf8_is_still_read(skill):
    (skill / "scripts" / "tool.py").write_bytes(b"#!/opt/caf\xe9/bin/python3\nprint(1)\n")
    (skill / "scripts" / "tool.py").chmod(0o755)
    said = "tool.py: /opt/caf\ufffd/bin/python3: bad interpreter"
    assert _direct(skill, "tool.py", 126, said) == ("missing_tool", "needs python3", "python3")


@pytest.mark.parametrize("code, failed", [
    # bash: the redirect of the skill's own script into a folder the reader's workspace has
    ("python scripts/fill.py fill --values v.json > outputs/fields.txt",
     "python scripts/fill.py fill --values v.json > outputs/fields.txt"),
    # bash named no command: the block's only skill script would stand for it
    ("python scripts/check.py > outputs/check.txt", None),
    # appending, after a first command that worked
    ("python scripts/check.py\npython scripts/check.py >> reports/all.txt", None),
])
def test_a_redirect_into_a_missing_folder_is_the_workspace_not_the_skill(skill, code, failed):
    """The shell could not open the file the block redirects into: the documented command
    never ran, so nothing of the skill failed; the folder is the reader's to have."""
    d = diagnosed(skill, code, failed)
    assert d.kind == "inconclusive", d
    assert d.file is None
    assert "the block writes" in d.reason and "it writes into is not here" in d.reason


def test_dash_says_it_its_own_way(skill):
    """``sh: 1: cannot create outputs/check.txt: Directory nonexistent`` (Debian's sh)."""
    code = "python3 scripts/check.py > outputs/check.txt"
    r = subprocess.run(["sh", "-e", "-c", code], cwd=skill, capture_output=True, text=True)
    assert r.returncode != 0 and "Directory nonexistent" in r.stderr, r.stderr
    d = diagnose(code, r.returncode, r.stdout + r.stderr, skill)
    assert d.kind == "inconclusive" and "outputs/ it writes into is not here" in d.reason, d


def test_a_script_that_fails_after_the_block_redirected_fine_is_still_the_skill(skill):
    """The rule is about the shell's own message for the block's redirect target: a skill
    script that fails on its own, with its output redirected into an existing folder, is
    still the skill's defect."""
    (skill / "outputs").mkdir()
    d = diagnosed(skill, "python scripts/fill.py fill --mode turbo > outputs/fields.txt",
                  "python scripts/fill.py fill --mode turbo > outputs/fields.txt")
    assert d.kind == "defect", d


# ---- issue 31: an interpreter's script, and bash's own syntax errors -------------------------

FIT_BROKEN = """\
# /// script
# requires-python = ">=3.10"
# dependencies = []
# ///
import argparse

p = argparse.ArgumentParser(prog="fit_curve.py")
p.add_argument("csv")
a = p.parse_args()
rows = [line.split(",") for line in open(a.csv)][1:]
print(f"fitted {len(rows)} points"
"""


def test_a_script_uv_runs_that_python_cannot_parse_fails_with_its_syntax_error(tmp_path):
    """`uv run scripts/fit_curve.py` gives the file to Python: no exec bit, no interpreter
    line needed, and the real cause is what Python said. uv is not on this machine: the
    script's own interpreter gives the output uv would have relayed."""
    skill = tmp_path / "curve-fit"
    (skill / "scripts").mkdir(parents=True)
    (skill / "scripts" / "fit_curve.py").write_text(FIT_BROKEN)
    (skill / "data.csv").write_text("x,y\n0,1\n1,3\n")
    exit_code, output = run_block("python3 scripts/fit_curve.py data.csv", skill)
    assert exit_code == 1 and "SyntaxError" in output, output
    d = diagnose("uv run scripts/fit_curve.py data.csv", exit_code, output, skill,
                 failed="uv run scripts/fit_curve.py data.csv")
    assert d.kind == "defect", d
    assert d.reason.startswith("SyntaxError: '(' was never closed raised in the skill's "
                               "scripts/fit_curve.py:11"), d.reason
    assert "not executable" not in d.reason


ROTATE_BROKEN = """\
#!/usr/bin/env bash
set -euo pipefail
keep=5 dry_run=0 dir=logs
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    *) dir=$1; shift ;;
  esac
done
for f in "$dir"/*.log; do
  if [ "$dry_run" = 1 ]
    echo "would rotate $f (keep $keep)"
  fi
done
"""


@pytest.mark.parametrize("code", [
    "bash scripts/rotate.sh --keep 5 --dry-run logs",
    "./scripts/rotate.sh --keep 5 --dry-run logs",
    'bash "$SKILL_DIR/scripts/rotate.sh" --dry-run',
])
def test_a_skill_shell_script_bash_cannot_parse_is_a_defect_not_the_environment(tmp_path,
                                                                                code):
    skill = tmp_path / "log-rotate"
    (skill / "scripts").mkdir(parents=True)
    (skill / "scripts" / "rotate.sh").write_text(ROTATE_BROKEN)
    os.chmod(skill / "scripts" / "rotate.sh", 0o755)
    exit_code, output = run_block(f"SKILL_DIR={skill}\n{code}", skill)
    assert "syntax error near unexpected token `fi'" in output, output
    d = diagnose(code, exit_code, output, skill, failed=code.replace('"', ""))
    assert (d.kind, d.file) == ("defect", "scripts/rotate.sh"), d
    assert d.reason == ("bash cannot parse the skill's scripts/rotate.sh: line 14: syntax "
                        "error near unexpected token `fi'")


def test_a_token_the_environment_lacks_is_still_the_environment(tmp_path):
    skill = tmp_path / "gh-report"
    (skill / "scripts").mkdir(parents=True)
    (skill / "scripts" / "report.sh").write_text(
        '#!/usr/bin/env bash\n[ -n "${GH_TOKEN:-}" ] || { echo "error: no GitHub token '
        'configured (set GH_TOKEN)" >&2; exit 1; }\n')
    exit_code, output = run_block("bash scripts/report.sh --repo x/y", skill)
    d = diagnose("bash scripts/report.sh --repo x/y", exit_code, output, skill)
    assert d.kind == "inconclusive", d
