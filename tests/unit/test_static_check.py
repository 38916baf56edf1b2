"""The static skill check (S0): what SKILL.md names must exist and be usable, zero-key.

Each test builds a skill the way public ones are written (long, mostly illustrative docs,
placeholders, reference files, scripts), plants one defect, and expects exactly that finding,
on the line that names it; the unplanted skill gives none."""

from __future__ import annotations

import os
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.skill import load_skill
from aeval.static_check import static_check

SKILL_MD = dedent("""\
    ---
    name: pdf-forms
    description: Fill, flatten and inspect PDF forms. Use when asked to fill a PDF form.
    ---
    # PDF forms

    Read [the field reference](references/fields.md) before filling anything, and see
    [FORMS.md](FORMS.md) for worked examples. The output lands in `out/filled.pdf`.

    ## Setup

    ```bash
    pip install pypdf
    ```

    ## Workflow

    1. List the fields of the form:

       ```bash
       python3 scripts/fields.py list <form.pdf>
       ```

    2. Fill it (values as JSON, see `references/fields.md`):

       ```bash
       scripts/fill.py --values values.json --flatten path/to/form.pdf -o out/filled.pdf
       ```

    3. Check it renders: `./scripts/check.sh out/filled.pdf`

    Don't run the old helper:

    ```bash
    python3 scripts/legacy_fill.py form.pdf
    ```

    Work inside your project when you batch:

    ```bash
    cd ~/my-forms && ./bin/batch-fill --all
    ```

    $YOUR_TOOL and `<output_dir>/report.md` are for you to choose.
    """)

FIELDS_PY = dedent("""\
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="fields.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    ls = sub.add_parser("list")
    ls.add_argument("pdf")
    ls.add_argument("--json", action="store_true")
    args = p.parse_args()
    print(args)
    """)
FILL_PY = dedent("""\
    #!/usr/bin/env python3
    import argparse

    p = argparse.ArgumentParser(prog="fill.py")
    p.add_argument("pdf")
    p.add_argument("--values", required=True)
    p.add_argument("--flatten", action="store_true")
    p.add_argument("-o", "--output")
    print(p.parse_args())
    """)
FILES = {
    "SKILL.md": SKILL_MD,
    "FORMS.md": "# Examples\n\nSee [fields](references/fields.md).\n",
    "references/fields.md": dedent("""\
        # Fields

        Dump them as JSON with:

        ```bash
        python3 scripts/fields.py list form.pdf --json
        ```

        Images of each field type: ![types](../assets/types.png)
        """),
    "assets/types.png": "PNG",
    "scripts/fields.py": FIELDS_PY,
    "scripts/fill.py": FILL_PY,
    "scripts/check.sh": "#!/bin/sh\nexec pdfinfo \"$1\"\n",
}
EXECUTABLE = {"scripts/fill.py", "scripts/check.sh"}


def build(root: Path, files: dict[str, str] = FILES, executable=EXECUTABLE) -> Path:
    skill = root / "pdf-forms"
    for rel, text in files.items():
        p = skill / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode())
        os.chmod(p, 0o755 if rel in executable else 0o644)
    return skill


def findings(skill: Path) -> list[str]:
    return [str(f) for f in static_check(load_skill(skill))]


def test_the_unplanted_skill_has_no_finding(tmp_path):
    assert findings(build(tmp_path)) == []


def test_a_renamed_script_is_named_on_its_line(tmp_path):
    skill = build(tmp_path)
    (skill / "scripts" / "fields.py").rename(skill / "scripts" / "form_fields.py")
    assert findings(skill) == [
        "SKILL.md line 21: runs scripts/fields.py, which the skill does not have",
        "references/fields.md line 6 (linked from SKILL.md line 7): runs scripts/fields.py, "
        "which the skill does not have"]


def test_a_lost_executable_bit(tmp_path):
    skill = build(tmp_path, executable={"scripts/check.sh"})
    assert findings(skill) == [
        "SKILL.md line 27: runs scripts/fill.py directly, but it is not executable (mode 644; "
        "git update-index --chmod=+x scripts/fill.py)"]


@pytest.mark.parametrize("first_line, problem", [
    (b"#!/usr/bin/env python3\r\n", "its interpreter line ends with a carriage return"),
    (b"import argparse\n", "it has no interpreter line (#!)"),
    (b"#!python3\n", "its interpreter line names a relative program 'python3'"),
])
def test_an_unusable_interpreter_line(tmp_path, first_line, problem):
    skill = build(tmp_path)
    body = FILL_PY.split("\n", 1)[1].encode()
    (skill / "scripts" / "fill.py").write_bytes(first_line + body)
    (found,) = findings(skill)
    assert found.startswith("SKILL.md line 27: runs scripts/fill.py directly, but ")
    assert problem in found


def test_a_missing_reference_link_and_one_a_level_down(tmp_path):
    skill = build(tmp_path)
    (skill / "assets" / "types.png").unlink()
    (skill / "FORMS.md").unlink()
    assert findings(skill) == [
        "SKILL.md line 8: links to FORMS.md, which the skill does not have",
        "references/fields.md line 9 (linked from SKILL.md line 7): links to assets/types.png, "
        "which the skill does not have"]


def test_a_link_whose_case_differs_says_so(tmp_path):
    skill = build(tmp_path)
    (skill / "FORMS.md").rename(skill / "forms.md")
    (found,) = findings(skill)
    assert "links to FORMS.md" in found and "there is forms.md" in found


def test_a_renamed_subcommand_and_a_removed_flag(tmp_path):
    skill = build(tmp_path)
    (skill / "scripts" / "fields.py").write_text(FIELDS_PY.replace('"list"', '"ls"'))
    (skill / "scripts" / "fill.py").write_text(FILL_PY.replace(
        'p.add_argument("--flatten", action="store_true")\n', ""))
    assert findings(skill) == [
        "SKILL.md line 21: documents `list` for scripts/fields.py, which does not accept it "
        "(it accepts: ls)",
        "SKILL.md line 27: documents the option --flatten for scripts/fill.py, which does not "
        "accept it",
        "references/fields.md line 6 (linked from SKILL.md line 7): documents `list` for "
        "scripts/fields.py, which does not accept it (it accepts: ls)"]


def test_what_is_not_a_reference(tmp_path):
    """Placeholders, outputs a command makes, a block shown as what not to do, commands in the
    reader's project after a cd, and paths outside the skill are never findings."""
    skill = build(tmp_path)
    text = (skill / "SKILL.md").read_text() + dedent("""\

        ```bash
        mkdir -p scripts/generated
        python3 scripts/fields.py list form.pdf > scripts/generated/f.txt
        cat scripts/generated/f.txt /etc/hostname ../other-skill/SKILL.md
        python3 {script_path} --help
        ```

        See [upstream](https://example.com/docs.md), [top](#workflow), [mail](mailto:x@y.z).
        """)
    (skill / "SKILL.md").write_text(text)
    assert findings(skill) == []


def test_the_readers_files_are_not_the_skills(tmp_path):
    """Found on the recall corpus: a build output a reference runs (`node dist/index.js`), a
    file SKILL.md tells the reader to save (`save it as `templates/new.md``), and file names a
    reference file gives as examples of a layout are not missing skill files."""
    files = {
        **FILES,
        "templates/invoice.md": "# Invoice\n",
        "references/building.md": "Build with `npx tsc` and run `node dist/index.js`.\n\n"
                                  "Split long docs: `references/aws.md`, `references/gcp.md`.\n",
    }
    files["SKILL.md"] = FILES["SKILL.md"] + (
        "\nWhen no template fits, write one like `templates/invoice.md` and save it as "
        "`templates/receipt.md`; see [building](references/building.md).\n")
    assert findings(build(tmp_path, files)) == []
    # ... while a script under scripts/ stays the skill's, even with its folder gone
    files["SKILL.md"] += "\nThen run `python3 scripts/gone/renamed.py --all`.\n"
    (found,) = findings(build(tmp_path / "again", files))
    assert "runs scripts/gone/renamed.py, which the skill does not have" in found


def _missing(line, what, path, file="SKILL.md"):
    return f"{file} line {line}: {what} {path}, which the skill does not have"


EXTRA = "references/extra.md line 3 (linked from SKILL.md line 46)"
# (rule, what is appended to SKILL.md (its line 45 on), the findings)
RULES = [
    ("a console session's commands count, its output does not",
     "\n```console\n$ python3 scripts/missing.py --all\nok\n```\n",
     [_missing(47, "runs", "scripts/missing.py")]),
    ("a console fence without a prompt is output",
     "\n```terminal\npython3 scripts/missing.py\n```\n", []),
    ("a link's anchor and query are not part of its path; other schemes, absolute, home, "
     "parent and the skill itself are not references",
     "\n[a](references/nope.md#part) [b](scripts/nope.py?raw=1) [c](tel:123) [d](data:x) "
     "[e](/etc/x) [f](~/x) [g](../x.md) [h](.) [i](ftp://x/y) [j](mailto:a@b.c)\n",
     [_missing(46, "links to", "references/nope.md"),
      _missing(46, "links to", "scripts/nope.py")]),
    ("an inline path is named, an inline command is run",
     "\nSee `references/gone.md` and `scripts/run it`.\n",
     [_missing(46, "names", "references/gone.md"), _missing(46, "runs", "scripts/run")]),
    ("after `cd $SKILL_DIR` paths are still the skill's",
     "\n```bash\ncd $SKILL_DIR\npython3 scripts/after_cd.py\n```\n",
     [_missing(48, "runs", "scripts/after_cd.py")]),
    ("after a cd elsewhere they are someone else's", "\n```bash\ncd /tmp/work\n"
     "python3 scripts/after_cd.py\n```\n", []),
    ("pushd is a cd", "\n```bash\npushd build\npython3 scripts/after_cd.py\n```\n", []),
    ("a bare cd goes home", "\n```bash\ncd\npython3 scripts/after_cd.py\n```\n", []),
    ("a subshell's cd does not last",
     "\n```bash\n(cd /tmp && ls)\npython3 scripts/after_sub.py\n```\n",
     [_missing(48, "runs", "scripts/after_sub.py")]),
    ("an option's value is a path too",
     "\n```bash\npython3 scripts/fields.py list form.pdf --schema=references/schema.json\n```\n",
     [_missing(47, "names", "references/schema.json"),
      "SKILL.md line 47: documents the option --schema for scripts/fields.py, which does not "
      "accept it"]),
    ("a block's findings are on the line of their command",
     "\n```bash\necho start\npython3 scripts/second.py\n```\n",
     [_missing(48, "runs", "scripts/second.py")]),
    ("the same path on two lines is two findings",
     "\n```bash\npython3 scripts/dup.py\npython3 scripts/dup.py\n```\n",
     [_missing(47, "runs", "scripts/dup.py"), _missing(48, "runs", "scripts/dup.py")]),
    ("a shell script needs no interpreter line",
     "\n```bash\nscripts/noshebang.sh\n```\n", []),
    ("a reference file's findings name the SKILL.md line that links it",
     "\nMore in [extra](references/extra.md).\n",
     [f"{EXTRA}: runs scripts/x_missing.py, which the skill does not have",
      f"{EXTRA}: runs scripts/fields.py directly, but it is not executable (mode 644; git "
      "update-index --chmod=+x scripts/fields.py)",
      f"{EXTRA}: runs scripts/nosh.py directly, but it has no interpreter line (#!)",
      f"{EXTRA}: links to scripts/extra_missing.py, which the skill does not have"]),
]


@pytest.mark.parametrize(("snippet", "expected"), [pytest.param(*r[1:], id=r[0]) for r in RULES])
def test_each_rule_of_the_check(tmp_path, snippet, expected):
    assert len(SKILL_MD.splitlines()) == 44
    files = {**FILES, "SKILL.md": SKILL_MD + snippet, "scripts/noshebang.sh": "echo hi\n",
             "scripts/nosh.py": "print(1)\n",
             "references/extra.md": "# Extra\n\n[missing](../scripts/extra_missing.py) and "
                                    "`scripts/x_missing.py --go`, `scripts/fields.py list f` "
                                    "or `scripts/nosh.py go`.\n"}
    skill = build(tmp_path, files, EXECUTABLE | {"scripts/noshebang.sh", "scripts/nosh.py"})
    assert findings(skill) == expected


def test_findings_stop_at_fifty(tmp_path):
    block = "".join(f"python3 scripts/m{i}.py\n" for i in range(60))
    skill = build(tmp_path, {**FILES, "SKILL.md": SKILL_MD + f"\n```bash\n{block}```\n"})
    found = findings(skill)
    assert len(found) == 50 and found[-1] == _missing(96, "runs", "scripts/m49.py")


def test_each_finding_has_its_kind_file_line_and_link(tmp_path):
    files = {**FILES, "scripts/nosh.py": "print(1)\n", "scripts/crlf.py": "#!/bin/sh\r\necho\r\n",
             "references/extra.md": "# Extra\n\nRun `scripts/fields.py ls f` and "
                                    "`scripts/fill.py --values v --zap f`, see [x](gone.md).\n"}
    files["SKILL.md"] = SKILL_MD + (
        "\n```bash\npython3 scripts/gone.py\nscripts/nosh.py\nscripts/crlf.py\n"
        "python3 scripts/fields.py lst f.pdf\n```\n\nMore in [extra](references/extra.md).\n")
    skill = build(tmp_path, files, EXECUTABLE | {"scripts/nosh.py", "scripts/crlf.py"})
    got = [(f.file, f.line, f.via, f.kind, f.path) for f in static_check(load_skill(skill))]
    assert got == [
        ("SKILL.md", 47, None, "missing", "scripts/gone.py"),
        ("SKILL.md", 48, None, "not_executable", "scripts/nosh.py"),
        ("SKILL.md", 49, None, "not_executable", "scripts/crlf.py"),
        ("SKILL.md", 50, None, "rejected", "scripts/fields.py"),
        ("references/extra.md", 3, 53, "not_executable", "scripts/fields.py"),
        ("references/extra.md", 3, 53, "rejected", "scripts/fields.py"),  # `ls` is not `list`
        ("references/extra.md", 3, 53, "rejected", "scripts/fill.py"),
        ("references/extra.md", 3, 53, "missing", "references/gone.md"),
    ]
