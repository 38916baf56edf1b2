"""The static skill check (S0): what SKILL.md names must exist and be usable, zero-key.

Each test builds a skill the way public ones are written (long, mostly illustrative docs,
placeholders, reference files, scripts), plants one defect, and expects exactly that finding,
on the line that names it; the unplanted skill gives none."""

from __future__ import annotations

import os
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.skill.skill_md import load_skill
from aeval.verdicts.static_check import MAX_REFERENCE_BYTES, MAX_SCRIPT_BYTES, static_check

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
    """The failing findings (a warning never fails the skill: see `warnings`)."""
    return [str(f) for f in static_check(load_skill(skill)) if f.severity == "defect"]


def warnings(skill: Path) -> list[str]:
    return [str(f) for f in static_check(load_skill(skill)) if f.severity == "warning"]


WARNING = " [a warning]"


def marked(skill: Path) -> list[str]:
    """Every finding, a warning marked as one (an inline span of a reference file's prose is
    a warning since issue 31: it is read on demand and often names the reader's files)."""
    return [str(f) + (WARNING if f.severity == "warning" else "")
            for f in static_check(load_skill(skill))]


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
    (found,) = static_check(load_skill(skill))
    assert str(found).startswith("SKILL.md line 27: runs scripts/fill.py directly, but ")
    assert problem in str(found) and found.kind == "not_executable"


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
     [f"{EXTRA}: runs scripts/x_missing.py, which the skill does not have{WARNING}",
      # SKILL.md's block gives fields.py to python3: the prose's `scripts/fields.py list f`
      # is shorthand that names it (issue 49); no block runs nosh.py either way
      f"{EXTRA}: runs scripts/nosh.py directly in prose (no block runs it), but it has no "
      f"interpreter line (#!){WARNING}",
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
    assert marked(skill) == expected


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
        # no exec bit finding: SKILL.md's block gives fields.py to python3 (issue 49)
        ("references/extra.md", 3, 53, "rejected", "scripts/fields.py"),  # `ls` is not `list`
        ("references/extra.md", 3, 53, "rejected", "scripts/fill.py"),
        ("references/extra.md", 3, 53, "missing", "references/gone.md"),
    ]


def _names(line, path, file="SKILL.md"):
    return _missing(line, "names", path, file)


FIELDS_AND_EXPORT_PY = FIELDS_PY.replace('ls.add_argument("--json", action="store_true")\n',
                                         'ls.add_argument("--json", action="store_true")\n'
                                         'sub.add_parser("export")\n')
# How SKILL.md's links, inline code spans and blocks are read: (rule, what is appended to
# SKILL.md (its line 45 on), files added to or replacing the skill's, the findings)
READING = [
    # ---- links ------------------------------------------------------------------------------
    ("a link's anchor starts at its first #",
     "\nThe [C# notes](references/languages.md#c#) cover .NET forms.\n",
     {"references/languages.md": "# Languages\n\n## C#\n"}, []),
    ("a link's query starts at its first ?",
     "\nPrint [the blank form](assets/blank.pdf?download=1&next=/forms?page=2).\n",
     {"assets/blank.pdf": "%PDF-1.7\n"}, []),
    ("a URL whose scheme is in capitals is not the skill's",
     "\n[Mail the team](MAILTO:forms@example.com) or read [the spec](HTTPS://example.com/a.md).\n",
     {}, []),
    ("a link after a URL on the same line is still checked",
     "\nSee [pypdf](https://pypdf.readthedocs.io) and [the layout guide](references/layout.md).\n",
     {}, [_missing(46, "links to", "references/layout.md")]),
    ("a link to the skill's own folder or above it is not a reference",
     "\nThis [skill](./), [its parent](..), [its siblings](../) and [the shared notes]"
     "(../../shared/notes.md) are not the skill's files.\n", {}, []),
    ("a target in angle brackets may hold spaces, a title is not part of it",
     "\nRead [the guide](<references/field guide.md>), [fields](references/fields.md "
     "\"Field reference\") and [the old notes](references/old-notes.md 'Before v2').\n",
     {}, [_missing(46, "links to", "references/field guide.md"),
          _missing(46, "links to", "references/old-notes.md")]),
    ("a percent-encoded target names the file with its spaces",
     "\nRead [the guide](references/field%20guide.md).\n",
     {"references/field guide.md": "# Field guide\n"}, []),
    ("a missing file in a missing folder gets no case hint",
     "\nValidate against [the schema](references/schemas/form.json).\n",
     {}, [_missing(46, "links to", "references/schemas/form.json")]),
    ("a reference file's links resolve from its own folder",
     "\nMore in [extra](references/extra.md).\n",
     {"references/extra.md": "# Extra\n\nSee [the fields](fields.md) and [gone](gone.md).\n"},
     [f"{EXTRA}: links to references/gone.md, which the skill does not have"]),
    ("SKILL.md linking to itself is not read a second time",
     "\nBack to [the top](SKILL.md#pdf-forms); then run `python3 scripts/gone.py --all`.\n",
     {}, [_missing(46, "runs", "scripts/gone.py")]),
    ("a linked script is not read as a markdown document",
     "\nThe checker is [check.sh](scripts/check.sh).\n",
     {"scripts/check.sh": "#!/bin/sh\n# like `scripts/old_check.sh --strict`, but faster\n"
                          "exec pdfinfo \"$1\"\n"}, []),
    ("a .markdown file is a reference document too",
     "\nTerms are in [the glossary](references/glossary.markdown).\n",
     {"references/glossary.markdown": "# Glossary\n\nList them: `python3 scripts/terms.py -a`.\n"},
     ["references/glossary.markdown line 3 (linked from SKILL.md line 46): runs "
      f"scripts/terms.py, which the skill does not have{WARNING}"]),
    ("a reference file linked twice is read once, and the ones after it still are",
     "\nAgain: [the fields](references/fields.md), then [extra](references/extra.md).\n",
     {"references/extra.md": "# Extra\n\nRun `python3 scripts/x_missing.py --go`.\n"},
     [f"{EXTRA}: runs scripts/x_missing.py, which the skill does not have{WARNING}"]),
    # ---- inline code spans ----------------------------------------------------------------
    ("what an inline command writes is not missing",
     "\nDump them with `python3 scripts/fields.py list form.pdf > references/form-fields.txt`"
     " and read `references/form-fields.txt`.\n", {}, []),
    ("a placeholder span is passed over, the spans after it are still checked",
     "\nPass `<form.pdf>`, then read `references/gone.md`.\n",
     {}, [_names(46, "references/gone.md")]),
    ("a path saved once on a line and named again there is made, not missing",
     "\nSave the values as `references/values.json` and pass `references/values.json` on.\n",
     {}, []),
    ("the word that makes a path may open the line",
     "\nSave the answers as `references/answers.json`.\n", {}, []),
    ("a path deeper in one of the skill's folders, named in prose, is the skill's",
     "\nThe v2 calls are in `references/api/v2.md`.\n", {}, [_names(46, "references/api/v2.md")]),
    ("a path in a folder the skill does not have, named in prose, is the reader's",
     "\nKeep your own forms in `templates/form.pdf`.\n", {}, []),
    ("a path in a markdown example block is not named by the skill",
     "\n```markdown\nSee `references/gone.md` and [x](references/gone.md).\n```\n", {}, []),
    # ---- blocks -------------------------------------------------------------------------------
    ("a file an earlier block writes is not missing in a later one",
     "\n```bash\npython3 scripts/fields.py list form.pdf --json > references/form-fields.json\n"
     "```\n\n```bash\ncat references/form-fields.json\n```\n", {}, []),
    ("a terminal session's commands count",
     "\n```terminal\n$ python3 scripts/missing.py --all\n```\n",
     {}, [_missing(47, "runs", "scripts/missing.py")]),
    ("an unlabelled fence with prompts is a session",
     "\n```\n$ python3 scripts/missing.py --all\n```\n",
     {}, [_missing(47, "runs", "scripts/missing.py")]),
    ("an unlabelled fence without a prompt is output or a listing",
     "\n```\nreferences/\n  fields.md\nscripts/report.py   (added by the setup step)\n```\n",
     {}, []),
    ("a console fence without a prompt is output",
     "\n```console\npython3 scripts/missing.py\n```\n", {}, []),
    ("a bash block written as a session: its prompts are removed, its output is not read",
     "\n```bash\n$ python3 scripts/gone.py --all\nWrote references/summary.txt\n```\n",
     {}, [_missing(47, "runs", "scripts/gone.py")]),
    ("a session's prompts are found on any line",
     "\n```bash\n# fill the form\n$ scripts/fill.py --values v.json --zap form.pdf\n```\n",
     {}, ["SKILL.md line 48: documents the option --zap for scripts/fill.py, which does not "
          "accept it"]),
    ("each command of a console session is read on its own line",
     "\n```console\n$ python3 scripts/fields.py list form.pdf\n3 fields\n$ scripts/gone.py\n```\n",
     {}, [_missing(49, "runs", "scripts/gone.py")]),
    ("a your_... name is a placeholder",
     "\n```bash\npython3 scripts/fill.py --values references/your_values.json form.pdf\n```\n",
     {}, []),
    ("a path through the skill's installed folder is the skill's",
     "\n```bash\npython3 ~/.claude/skills/pdf-forms/scripts/gone.py --all\n```\n",
     {}, [_missing(47, "runs", "scripts/gone.py")]),
    ("the first argument of a script run directly is read too",
     "\n```bash\nscripts/fill.py references/blank.pdf --values values.json\n```\n",
     {}, [_names(47, "references/blank.pdf")]),
    ("an option's value is everything after its first =",
     "\n```bash\npython3 scripts/fill.py form.pdf --values=references/defaults=v2.json\n```\n",
     {}, [_names(47, "references/defaults=v2.json")]),
    ("an inline command of a reference file names the SKILL.md line that links it",
     "\nMore in [extra](references/extra.md).\n",
     {"references/extra.md": "# Extra\n\nOr `python3 scripts/fields.py list references/a.pdf`.\n"},
     [f"{EXTRA}: names references/a.pdf, which the skill does not have{WARNING}"]),
    ("the same missing file twice on one line is one finding",
     "\n```bash\npython3 scripts/gone.py a.pdf && python3 scripts/gone.py b.pdf\n```\n",
     {}, [_missing(47, "runs", "scripts/gone.py")]),
    # ---- the script's interface and interpreter line ------------------------------------------
    ("after -- the words are operands, not options",
     "\n```bash\nscripts/fill.py --values v.json -- -draft-form.pdf\n```\n", {}, []),
    ("an option's name ends at its first =",
     "\n```bash\nscripts/fill.py --values=name=Ada.json form.pdf\n```\n", {}, []),
    ("a subcommand in capitals is checked, and every accepted one is listed",
     "\n```bash\npython3 scripts/fields.py List form.pdf\n```\n",
     {"scripts/fields.py": FIELDS_AND_EXPORT_PY},
     ["SKILL.md line 47: documents `List` for scripts/fields.py, which does not accept it "
      "(it accepts: export, list)"]),
    ("a .bash script or one without a suffix needs no interpreter line",
     "\n```bash\nscripts/setup.bash\nbin/tool --help\n```\n",
     {"scripts/setup.bash": "echo setup\n", "bin/tool": "echo tool\n"}, []),
    ("a reference file's unusable interpreter lines name the SKILL.md line that links it",
     "\nMore in [extra](references/extra.md).\n",
     {"references/extra.md": "# Extra\n\nRun `scripts/crlf.py go` or `scripts/rel.py go`.\n",
      "scripts/crlf.py": "#!/usr/bin/env python3\r\nprint(1)\r\n",
      "scripts/rel.py": "#!python3\nprint(1)\n"},
     [f"{EXTRA}: runs scripts/crlf.py directly in prose (no block runs it), but its "
      f"interpreter line ends with a carriage return (CRLF line endings){WARNING}",
      f"{EXTRA}: runs scripts/rel.py directly in prose (no block runs it), but its "
      f"interpreter line names a relative program 'python3'{WARNING}"]),
]


@pytest.mark.parametrize(("snippet", "files", "expected"),
                         [pytest.param(*r[1:], id=r[0]) for r in READING])
def test_how_links_spans_and_blocks_are_read(tmp_path, snippet, files, expected):
    assert len(SKILL_MD.splitlines()) == 44
    files = {**FILES, "SKILL.md": SKILL_MD + snippet, **files}
    skill = build(tmp_path, files, EXECUTABLE | (files.keys() & {
        "scripts/setup.bash", "bin/tool", "scripts/crlf.py", "scripts/rel.py"}))
    assert marked(skill) == expected


def test_a_world_writable_script_without_execute_bits_is_not_executable(tmp_path):
    """Unzipped with umask 0: rw for everyone, x for no one."""
    skill = build(tmp_path)
    os.chmod(skill / "scripts" / "fill.py", 0o666)
    assert findings(skill) == [
        "SKILL.md line 27: runs scripts/fill.py directly, but it is not executable (mode 666; "
        "git update-index --chmod=+x scripts/fill.py)"]


def test_the_interpreter_line_is_read_as_the_kernel_reads_it(tmp_path):
    """Linux reads the first 256 bytes for `#!`: a carriage return past them is never seen."""
    skill = build(tmp_path)
    head = b"#!/usr/bin/env -S uv run --script"
    head += b" --with pypdf" * ((256 - len(head)) // 13)
    head += b" " * (256 - len(head))
    (skill / "scripts" / "fill.py").write_bytes(head + b"\r\n" + FILL_PY.split("\n", 1)[1].encode())
    assert findings(skill) == []


def _padded(source: str, size: int) -> str:
    return source + "#" * (size - len(source.encode()) - 1) + "\n"


@pytest.mark.parametrize(("size", "expected"), [
    (MAX_SCRIPT_BYTES, ["SKILL.md line 27: documents the option --flatten for scripts/fill.py, "
                        "which does not accept it"]),
    (MAX_SCRIPT_BYTES + 1, []),
], ids=["at the limit: read", "past it: not read"])
def test_a_script_is_read_for_its_interface_up_to_a_size(tmp_path, size, expected):
    source = FILL_PY.replace('p.add_argument("--flatten", action="store_true")\n', "")
    skill = build(tmp_path, {**FILES, "scripts/fill.py": _padded(source, size)})
    assert findings(skill) == expected


@pytest.mark.parametrize(("size", "expected"), [
    (MAX_REFERENCE_BYTES, [f"{EXTRA}: runs scripts/x_missing.py, which the skill does not "
                           f"have{WARNING}"]),
    (MAX_REFERENCE_BYTES + 1, []),
], ids=["at the limit: read", "past it: passed over"])
def test_a_reference_file_is_read_up_to_a_size(tmp_path, size, expected):
    files = {**FILES, "SKILL.md": SKILL_MD + "\nMore in [extra](references/extra.md).\n",
             "references/extra.md": _padded("# Extra\n\nRun `python3 scripts/x_missing.py a`.\n",
                                            size)}
    assert marked(build(tmp_path, files)) == expected


def test_an_unreadable_reference_file_is_passed_over_and_the_next_is_read(tmp_path):
    """A reference file too big to read, and one symlinked to a file that is not there."""
    files = {**FILES, "SKILL.md": SKILL_MD + (
        "\nSee [the big one](references/big.md), [the shared one](references/shared.md) and "
        "[extra](references/extra.md).\n"),
        "references/big.md": _padded("# Big\n", MAX_REFERENCE_BYTES + 1),
        "references/extra.md": "# Extra\n\nRun `python3 scripts/x_missing.py a`.\n"}
    skill = build(tmp_path, files)
    (skill / "references" / "shared.md").symlink_to(tmp_path / "elsewhere" / "shared.md")
    assert marked(skill) == [
        f"{EXTRA}: runs scripts/x_missing.py, which the skill does not have{WARNING}"]


def test_files_in_latin_1_are_still_read(tmp_path):
    """A script and a reference file saved by an old editor: their bytes that are not UTF-8
    do not hide what they say."""
    skill = build(tmp_path, {**FILES, "SKILL.md": SKILL_MD + "\nMore in [extra](references/"
                                                            "extra.md).\n"})
    (skill / "scripts" / "fill.py").write_bytes(
        FILL_PY.replace('p.add_argument("--flatten", action="store_true")\n', "").replace(
            "import argparse", "import argparse  # Autor: J\xfcrgen").encode("latin-1"))
    (skill / "references" / "extra.md").write_bytes(
        "# Extra (\xfcbersetzt)\n\nRun `python3 scripts/x_missing.py a`.\n".encode("latin-1"))
    assert marked(skill) == [
        "SKILL.md line 27: documents the option --flatten for scripts/fill.py, which does not "
        "accept it",
        f"{EXTRA}: runs scripts/x_missing.py, which the skill does not have{WARNING}"]


def test_a_relative_interpreter_that_is_not_utf_8_is_shown(tmp_path):
    skill = build(tmp_path)
    (skill / "scripts" / "fill.py").write_bytes(b"#!pyth\xf6n\n" + FILL_PY.encode())
    assert findings(skill) == [
        "SKILL.md line 27: runs scripts/fill.py directly, but its interpreter line names a "
        "relative program 'pyth\ufffdn'"]


def test_a_skill_whose_folder_is_gone_is_checked_without_raising(tmp_path):
    """Loaded, then removed before the check: every file it names is missing, nothing raises."""
    skill_dir = build(tmp_path, {"SKILL.md": SKILL_MD.split("## Setup")[0]
                                 + "Then run `python3 scripts/fields.py list form.pdf`.\n"})
    skill = load_skill(skill_dir)
    (skill_dir / "SKILL.md").unlink()
    skill_dir.rmdir()
    assert [str(f) for f in static_check(skill)] == [
        "SKILL.md line 7: links to references/fields.md, which the skill does not have",
        "SKILL.md line 8: links to FORMS.md, which the skill does not have",
        "SKILL.md line 10: runs scripts/fields.py, which the skill does not have"]


# ---- issue 31: other ecosystems' conventions --------------------------------------------------

SCAN_PY = dedent("""\
    #!/usr/bin/env python3
    \"\"\"Scan a tree for hard-coded secrets.\"\"\"
    import argparse

    p = argparse.ArgumentParser(prog="scan_secrets.py")
    p.add_argument("--path", default=".")
    p.add_argument("--format", choices=["sarif", "json"], default="json")
    p.add_argument("--fail-on-findings", action="store_true")
    print(p.parse_args())
    """)


def _scanner(root: Path, spelling: str, script: str = SCAN_PY, mode: int = 0o755) -> Path:
    skill = root / "secret-scan"
    (skill / "scripts").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "references" / "rules.md").write_text("# Rules\n\naws-access-key-id\n")
    (skill / "SKILL.md").write_text(dedent(f"""\
        ---
        name: secret-scan
        description: Scan a repository for hard-coded secrets and report them as SARIF.
        ---
        # Secret scanning

        The rules are in `{spelling}/references/rules.md`.

        ```bash
        python3 {spelling}/scripts/scan_secrets.py --path . --format sarif
        ```

        Or run it as a program: `{spelling}/scripts/scan_secrets.py --path src --format json`
        """))
    (skill / "scripts" / "scan_secrets.py").write_text(script)
    os.chmod(skill / "scripts" / "scan_secrets.py", mode)
    return skill


SPELLINGS = ["{baseDir}", "${CLAUDE_SKILL_DIR}", "$CLAUDE_SKILL_DIR",
             "/mnt/skills/user/secret-scan", "/mnt/skills/public/secret-scan"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_script_named_through_the_skill_folders_spelling_is_checked(tmp_path, spelling):
    assert findings(_scanner(tmp_path / "clean", spelling)) == []
    renamed = SCAN_PY.replace('"--format"', '"--output-format"')
    assert findings(_scanner(tmp_path / "planted", spelling, renamed)) == [
        "SKILL.md line 10: documents the option --format for scripts/scan_secrets.py, which "
        "does not accept it",
        "SKILL.md line 13: documents the option --format for scripts/scan_secrets.py, which "
        "does not accept it"]
    gone = _scanner(tmp_path / "gone", spelling)
    (gone / "scripts" / "scan_secrets.py").rename(gone / "scripts" / "scan.py")
    (gone / "references" / "rules.md").unlink()
    assert findings(gone) == [
        "SKILL.md line 7: names references/rules.md, which the skill does not have",
        "SKILL.md line 10: runs scripts/scan_secrets.py, which the skill does not have",
        "SKILL.md line 13: runs scripts/scan_secrets.py, which the skill does not have"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_script_run_directly_through_the_spelling_still_needs_its_exec_bit(tmp_path,
                                                                             spelling):
    assert findings(_scanner(tmp_path, spelling, mode=0o644)) == [
        "SKILL.md line 13: runs scripts/scan_secrets.py directly, but it is not executable "
        "(mode 644; git update-index --chmod=+x scripts/scan_secrets.py)"]


def test_another_skills_install_path_is_not_this_skills(tmp_path):
    skill = build(tmp_path)
    md = skill / "SKILL.md"
    md.write_text(md.read_text() + "\nConvert first: `python /mnt/skills/public/docx/ooxml/"
                                   "unpack.py in.docx out/`\n")
    assert findings(skill) == []


FIT_PY = dedent("""\
    # /// script
    # requires-python = ">=3.10"
    # dependencies = ["numpy"]
    # ///
    import argparse

    p = argparse.ArgumentParser(prog="fit_curve.py")
    p.add_argument("csv")
    p.add_argument("--degree", type=int, default=1)
    print(p.parse_args())
    """)


@pytest.mark.parametrize("command", [
    "uv run scripts/fit_curve.py data.csv",
    "uv run --with numpy scripts/fit_curve.py data.csv --degree 2",
    "uv run python scripts/fit_curve.py data.csv",
    "python3 scripts/fit_curve.py data.csv",
])
def test_a_script_an_interpreter_runs_needs_no_exec_bit_nor_interpreter_line(tmp_path,
                                                                             command):
    skill = build(tmp_path, {"SKILL.md": dedent(f"""\
        ---
        name: curve-fit
        description: Fit a polynomial to measured data.
        ---
        ```bash
        {command}
        ```
        """), "scripts/fit_curve.py": FIT_PY}, executable=())
    assert findings(skill) == []
    # the interface is still read: an option the script lacks is named
    (skill / "SKILL.md").write_text((skill / "SKILL.md").read_text().replace(
        "data.csv", "data.csv --order 2"))
    assert findings(skill) == ["SKILL.md line 6: documents the option --order for "
                               "scripts/fit_curve.py, which does not accept it"]


def test_a_python_script_run_directly_still_needs_exec_bit_and_interpreter_line(tmp_path):
    skill = build(tmp_path, {"SKILL.md": "---\nname: curve-fit\ndescription: Fit.\n---\n"
                                         "```bash\n./scripts/fit_curve.py data.csv\n```\n",
                             "scripts/fit_curve.py": FIT_PY}, executable=())
    assert [f.split(", but ")[1] for f in findings(skill)] == [
        "it is not executable (mode 644; git update-index --chmod=+x scripts/fit_curve.py)"]
    os.chmod(skill / "scripts" / "fit_curve.py", 0o755)
    assert findings(skill) == ["SKILL.md line 6: runs scripts/fit_curve.py directly, but it "
                               "has no interpreter line (#!)"]


def test_a_console_sessions_continuation_lines_are_read(tmp_path):
    skill = build(tmp_path)
    md = skill / "SKILL.md"
    md.write_text(md.read_text() + dedent("""\

        A session:

        ```console
        $ python3 \\
        >   scripts/list_fields.py --json \\
        >   form.pdf
        {"fields": ["name", "date"]}
        > not a continuation: output
        $ ls out/ | \\
        > grep -c pdf
        1
        ```
        """))
    line = md.read_text().splitlines().index("$ python3 \\") + 1
    assert findings(skill) == [f"SKILL.md line {line}: runs scripts/list_fields.py, which the "
                               "skill does not have"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_link_through_the_skill_folders_spelling_is_the_skills(tmp_path, spelling):
    skill = _scanner(tmp_path, spelling)
    md = skill / "SKILL.md"
    md.write_text(md.read_text() + f"\nSee [the rules]({spelling}/references/rules.md) and "
                                   f"[the changelog]({spelling}/CHANGELOG.md).\n")
    line = len(md.read_text().splitlines())
    assert findings(skill) == [f"SKILL.md line {line}: links to CHANGELOG.md, which the skill "
                               "does not have"]


@pytest.mark.parametrize("fence, block", [
    ("console", "$ python3 /mnt/skills/public/mcp-builder/scripts/evaluation.py \\\n"
                ">     --eval-file assets/evaluation.xml \\\n>     --dry-run"),
    ("bash", "python3 scripts/evaluation.py \\\n    --eval-file assets/evaluation.xml \\\n"
             "    --dry-run"),
])
def test_a_path_on_a_continuation_line_is_named_on_its_own_line(tmp_path, fence, block):
    # mcp-builder's evaluation file is named on the second line of a continued command: the
    # finding points at that line, where the author has to look (it named the first)
    skill = build(tmp_path, {
        "SKILL.md": "---\nname: mcp-builder\ndescription: Build and evaluate MCP servers.\n"
                    f"---\n# Evaluate\n\n```{fence}\n{block}\n```\n",
        "scripts/evaluation.py": "import argparse\np = argparse.ArgumentParser()\n"
                                 "p.add_argument('--eval-file')\n"
                                 "p.add_argument('--dry-run', action='store_true')\n"
                                 "p.parse_args()\n",
        "assets/evaluation.example.xml": "<evaluation/>\n"}, executable=set())
    assert findings(skill) == ["SKILL.md line 9: names assets/evaluation.xml, which the skill "
                               "does not have"]
