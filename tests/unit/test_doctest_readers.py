"""Issue 31, classes 3-5 on the doc-test side: what a failed block of a real-looking skill
proves, from the real output of bash and Python (aeval.verdicts.diagnosis, .missing).

- class 3: a script that says "Error: rdkit is not installed. Install with: pip install
  rdkit" asks for its environment (needs rdkit); ``from datetimes import datetime`` imports a
  module that exists nowhere (a defect on the import line), while a package the reader
  installs (``pandas``, ``typer`` beside ``types``, ``ujson`` beside ``json``) stays a need;
- class 4: an argparse usage error of the skill's script, with no variable in the words
  SKILL.md wrote, is evidence whatever an earlier block exported; a script's refusal to run
  outside the reader's project ("No package.json found") needs that project; a traceback in the
  skill's code is evidence whatever ran before, unless the error names what an earlier
  block would have set;
- class 5: a block bash -e stopped says which of its lines never ran; ``python3 build.py``
  where the skill has scripts/build.py is the line's missing path; bash's and dash's syntax
  errors are the skill's, "unexpected token" no credential.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from aeval.skill.shell_blocks import plan_blocks
from aeval.verdicts.diagnosis import diagnose
from aeval.verdicts.doctest import BlockOutcome, discounted
from tests.unit.test_doctest import run_block

DESCRIPTORS = '''\
    #!/usr/bin/env python3
    """Compute molecular descriptors (MW, logP, TPSA) for SMILES strings with RDKit."""
    import argparse
    import json
    import sys

    try:
        from rdkit import Chem
        from rdkit.Chem import Descriptors
    except ImportError:
        print("Error: rdkit is not installed. Install with: {advice}", file=sys.stderr)
        sys.exit(1)


    def main():
        ap = argparse.ArgumentParser(prog="descriptors.py")
        ap.add_argument("--smiles", required=True, nargs="+")
        ap.add_argument("--format", choices=("json", "csv"), default="json")
        args = ap.parse_args()
        rows = []
        for s in args.smiles:
            m = Chem.MolFromSmiles(s)
            rows.append({{"smiles": s, "mw": Descriptors.MolWt(m)}})
        json.dump(rows, sys.stdout)


    if __name__ == "__main__":
        main()
    '''

TIMELINE = '''\
    """Build a timeline of lab events from a CSV log."""
    import csv
    {imports}
    import sys


    def main(path):
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        print(len(rows), "events")


    if __name__ == "__main__":
        main(sys.argv[1])
    '''

ANALYZE = '''\
    #!/usr/bin/env python3
    """Summarise a CSV of assay results."""
    import argparse
    import csv
    import json
    import sys

    ap = argparse.ArgumentParser(prog="analyze.py")
    ap.add_argument("--source", required=True, help="the CSV (was --input before 2.0)")
    ap.add_argument("--format", choices=("json", "table"), default="table")
    args = ap.parse_args()
    with open(args.source, newline="") as fh:
        rows = list(csv.DictReader(fh))
    json.dump({"rows": len(rows)}, sys.stdout)
    '''

BUNDLE = '''\
    #!/bin/bash
    # Bundle a React artifact into a single bundle.html
    set -e
    if [ ! -f "package.json" ]; then
      echo "❌ Error: No package.json found. Run this script from your project root."
      exit 1
    fi
    npx parcel build index.html --no-source-maps
    '''

REPORT = '''\
    """Render the weekly report from the skill's template."""
    import os
    import sys

    endpoint = os.environ["REPORT_API_URL"] if "--upload" in sys.argv else None
    sections = {"summary": 1, "assays": 2}
    print(sections[sys.argv[1]])
    '''


def skill(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    d = tmp_path / name
    for rel, text in {"SKILL.md": f"---\nname: {name}\ndescription: x\n---\n", **files}.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(dedent(text))
    return d


def diagnosed(d: Path, code: str, failed: str | None = None):
    exit_code, output = run_block(code, d)
    assert exit_code != 0, output
    return diagnose(code, exit_code, output, d, frozenset(), failed)


# ---- class 3 ------------------------------------------------------------------------------

@pytest.mark.parametrize("advice, tool", [
    ("pip install rdkit", "rdkit"),
    ("conda install -c conda-forge rdkit", "rdkit"),
    ("uv pip install 'rdkit>=2023.9'", "rdkit"),
    ("python -m pip install rdkit-pypi", "rdkit-pypi"),
])
def test_a_script_that_says_what_to_install_needs_it(tmp_path, advice, tool):
    d = skill(tmp_path, "molecule-descriptors",
              {"scripts/descriptors.py": DESCRIPTORS.replace("{advice}", advice)
               .replace("{{", "{").replace("}}", "}")})
    code = "python scripts/descriptors.py --smiles CCO c1ccccc1 --format json"
    dg = diagnosed(d, code, code)
    assert (dg.kind, dg.tool) == ("missing_tool", tool), dg
    assert dg.reason.startswith(f"needs {tool} (the script says: Error: rdkit is not "
                                "installed."), dg.reason


def test_a_script_that_asks_for_npm_install_first_is_the_readers_setup(tmp_path):
    d = skill(tmp_path, "deck-builder", {"scripts/build.sh": (
        "#!/bin/bash\n[ -d node_modules ] || { echo 'Dependencies missing. Run npm install "
        "first.' >&2; exit 1; }\n")})
    dg = diagnosed(d, "bash scripts/build.sh --theme dark", "bash scripts/build.sh --theme dark")
    assert dg.kind == "inconclusive" and "asks the reader to install its dependencies" in \
        dg.reason, dg


@pytest.mark.parametrize("imports, line, near", [
    ("from datetimes import datetime, timedelta", 3, "datetime"),
    ("import jsno\nprint(jsno.dumps({}), jsno.loads('{}'))", 3, "json"),
    ("from colections import Counter, defaultdict", 3, "collections"),
])
def test_an_import_of_a_module_that_exists_nowhere_is_a_defect_on_its_line(tmp_path, imports,
                                                                              line, near):
    d = skill(tmp_path, "lab-timeline", {"scripts/timeline.py": TIMELINE.replace(
        "{imports}", imports.replace("\n", "\n    "))})
    (d / "events.csv").write_text("when,what\n2024-01-02,assay\n")
    code = "python scripts/timeline.py events.csv"
    dg = diagnosed(d, code, code)
    assert (dg.kind, dg.file, dg.own) == ("defect", "scripts/timeline.py", "file"), dg
    assert f"the skill's scripts/timeline.py:{line} imports " in dg.reason, dg.reason
    assert f"a misspelling of the standard library's {near}" in dg.reason, dg.reason


@pytest.mark.parametrize("imports, module", [
    ("import scanpy as sc\nsc.read_h5ad('x.h5ad')", "scanpy"),  # a package the reader installs
    ("from emails import html", "emails"),  # one edit from `email`, which has no html
    ("from times import to_universal", "times"),  # one edit from `time`: not time's names
    ("import ujson\nujson.dumps({})", "ujson"),  # a drop-in: json's first letter changed
    ("from pathlib2 import Path", "pathlib2"),  # a versioned backport
    ("import timm\ntimm.create_model('resnet18')", "timm"),  # time has no create_model
])
def test_a_package_the_reader_installs_stays_a_need(tmp_path, imports, module):
    d = skill(tmp_path, "lab-timeline", {"scripts/timeline.py": TIMELINE.replace(
        "{imports}", imports.replace("\n", "\n    "))})
    code = "python scripts/timeline.py events.csv"
    dg = diagnosed(d, code, code)
    assert (dg.kind, dg.tool) == ("missing_tool", module), dg


def test_a_near_stdlib_name_the_skill_declares_is_a_need(tmp_path):
    """The author lists it: a package of that name is meant, however close to datetime."""
    d = skill(tmp_path, "lab-timeline", {
        "scripts/timeline.py": TIMELINE.replace("{imports}", "from datetimes import datetime"),
        "requirements.txt": "datetimes==0.3\n"})
    code = "python scripts/timeline.py events.csv"
    assert diagnosed(d, code, code).tool == "datetimes"


# ---- class 4 ------------------------------------------------------------------------------

ASSAY_MD = """\
    Set your LIMS key (optional):

    ```bash
    export ASSAY_LIMS_KEY=<your-lims-key>
    ```

    Summarise the plate:

    ```bash
    python scripts/analyze.py --input {arg} --format json
    ```
    """


@pytest.mark.parametrize("arg, evidence", [("assets/plate.csv", True), ("$PLATE_CSV", False)])
def test_an_argparse_usage_error_is_not_excused_by_an_earlier_export(tmp_path, arg, evidence):
    """The required flag was renamed (--input -> --source): argparse read only what SKILL.md
    wrote, which no export changes; with a variable among the words it might."""
    d = skill(tmp_path, "assay-summary", {"scripts/analyze.py": ANALYZE,
                                          "assets/plate.csv": "well,signal\nA1,0.4\n"})
    code = f"python scripts/analyze.py --input {arg} --format json"
    exit_code, output = run_block(code, d)
    assert exit_code == 2 and "the following arguments are required: --source" in output
    dg = diagnose(code, exit_code, output, d, frozenset(), code)
    assert dg.kind == "defect" and dg.file == "scripts/analyze.py", dg
    assert "rejects what SKILL.md documents: the following arguments are required: --source" \
        in dg.reason, dg.reason
    earlier, later = plan_blocks([(8, "export ASSAY_LIMS_KEY=<your-lims-key>"), (14, code)])
    assert earlier.action == "skip"
    why = discounted(later, dg, [(earlier, BlockOutcome(8, "skipped", earlier.reason or ""))],
                     frozenset({"scripts/analyze.py", "assets/plate.csv"}))
    assert (why is None) == evidence, why


def test_a_script_that_refuses_to_run_outside_the_readers_project_needs_that_project(
        tmp_path):
    """A vendor's artifact skill: the bundle step needs the project `npx create-...` made."""
    d = skill(tmp_path, "web-artifacts", {"scripts/bundle-artifact.sh": BUNDLE})
    code = "bash scripts/bundle-artifact.sh"
    dg = diagnosed(d, code, code)
    assert dg.kind == "needs_context", dg
    assert dg.tool == "the reader's package.json (scripts/bundle-artifact.sh says \"❌ Error: " \
                      "No package.json found. Run this script from your project root.\")", dg


def test_a_script_missing_its_own_template_is_still_a_defect(tmp_path):
    d = skill(tmp_path, "web-artifacts", {"scripts/render.sh": (
        "#!/bin/bash\n[ -f templates/page.html ] || { echo 'Error: templates/page.html not "
        "found' >&2; exit 1; }\n")})
    code = "bash scripts/render.sh"
    assert diagnosed(d, code, code).kind == "defect"


EARLIER = [(5, "cd <your-project>\nexport REPORT_API_URL=https://lims.example/api")]


@pytest.mark.parametrize("args, evidence", [
    ("assays-weekly", True),  # KeyError: 'assays-weekly': the skill's own table
    ("summary --upload", False),  # KeyError: 'REPORT_API_URL': the skipped export's variable
])
def test_a_crash_in_the_skills_code_is_evidence_whatever_ran_before(tmp_path, args, evidence):
    d = skill(tmp_path, "weekly-report", {"scripts/report.py": REPORT})
    code = f"python scripts/report.py {args}"
    dg = diagnosed(d, code, code)
    assert (dg.kind, dg.own) == ("defect", "crash"), dg
    (earlier, later) = plan_blocks([*EARLIER, (11, code)])
    assert earlier.action == "skip"
    why = discounted(later, dg, [(earlier, BlockOutcome(5, "skipped", earlier.reason or ""))],
                     frozenset({"scripts/report.py"}))
    assert (why is None) == evidence, why


def test_a_python_syntax_error_in_the_skill_is_evidence_after_a_cd(tmp_path):
    d = skill(tmp_path, "weekly-report", {"scripts/report.py": "def main(:\n    pass\n"})
    code = "python scripts/report.py summary"
    dg = diagnosed(d, code, code)
    assert (dg.kind, dg.own) == ("defect", "file"), dg
    earlier, later = plan_blocks([(5, "cd <your-project>"), (9, code)])
    assert discounted(later, dg, [(earlier, BlockOutcome(5, "skipped"))],
                      frozenset({"scripts/report.py"})) is None


# ---- class 5 ------------------------------------------------------------------------------

def test_a_block_stopped_by_bash_e_says_which_lines_never_ran():
    from aeval.verdicts.doctest import not_run

    code = ("# validate, then build and publish\npython scripts/validate.py deck.md\n"
            "python scripts/build.py deck.md --out dist/\n\npython scripts/publish.py dist/\n")
    assert not_run(code, 1, 20) == "SKILL.md lines 22-24 (the rest of the block) were not run"
    assert not_run(code, 1) == "lines 3-5 (the rest of the block) were not run"
    assert not_run(code, 2, 20) == "SKILL.md line 24 (the rest of the block) was not run"
    assert not_run(code, 4, 20) is None
    assert not_run(code, None, 20) is None


def test_a_bare_script_name_the_skill_keeps_in_scripts_is_the_lines_missing_path(tmp_path):
    d = skill(tmp_path, "slide-deck", {"scripts/build.py": "print('built')\n"})
    code = "mkdir -p dist\npython3 build.py deck.md --out dist/"
    dg = diagnosed(d, code, "python3 build.py deck.md --out dist/")
    assert (dg.kind, dg.at) == ("defect", 1), dg
    assert dg.reason == ("SKILL.md runs build.py from the skill folder, which has no build.py "
                         "there (the skill ships scripts/build.py): a missing path")


def test_a_bare_script_name_the_skill_does_not_ship_is_the_readers(tmp_path):
    d = skill(tmp_path, "django-helper", {"scripts/check.py": "print('ok')\n"})
    code = "python3 manage.py migrate"
    assert diagnosed(d, code, code).kind == "inconclusive"


@pytest.mark.parametrize("script, run, said", [
    # a skill script that builds a command and hands it to bash -c
    ("#!/bin/bash\nCMD='if then fi'\nbash -c \"$CMD\"\n", "bash scripts/deploy.sh --env staging",
     "the skill's scripts/deploy.sh exited 2 with the documented arguments `--env staging`"),
    # dash's own wording, `sh` being dash
    ("if [ -n \"$1\" ]; then\n  echo deploy \"$1\"\n", "sh scripts/deploy.sh staging",
     "cannot parse the skill's scripts/deploy.sh: line 3: Syntax error: end of file unexpected"),
])
def test_a_shell_syntax_error_is_no_credential_problem(tmp_path, script, run, said):
    d = skill(tmp_path, "deployer", {"scripts/deploy.sh": script})
    dg = diagnosed(d, run, run)
    assert dg.kind == "defect", dg
    assert said in dg.reason, dg.reason


def test_a_tip_to_install_something_is_no_need_when_nothing_is_missing(tmp_path):
    """A script that fails on its own bug and ends with an install tip is still the skill's
    defect: the tip says nothing is missing."""
    d = skill(tmp_path, "log-digest", {"scripts/digest.py": (
        "import sys\nprint('digest.py: 0 of 3 logs parsed', file=sys.stderr)\n"
        "print('Tip: brew install jq for prettier output', file=sys.stderr)\nsys.exit(1)\n")})
    code = "python scripts/digest.py --since 7d"
    assert diagnosed(d, code, code).kind == "defect"


def test_a_refusal_that_names_the_skills_own_file_is_a_defect(tmp_path):
    """`config.json not found` where config.json is the skill's own (at its root, present):
    the script looked somewhere else, its own bug, not the reader's project."""
    d = skill(tmp_path, "log-digest", {"config.json": "{}\n", "scripts/digest.sh": (
        "#!/bin/bash\ncd /tmp\n[ -f config.json ] || { echo 'Error: config.json not found'; "
        "exit 1; }\n")})
    code = "bash scripts/digest.sh"
    assert diagnosed(d, code, code).kind == "defect"


@pytest.mark.parametrize("code, kind", [
    # lab-notebook's "Writing scripts for this skill" section shows the shape every new
    # helper must have; S0 warns about the name, the doc test must not fail the skill on it
    ("python scripts/script_name.py --help", "inconclusive"),
    ("python3 scripts/my_script.py --input data.csv", "inconclusive"),
    ("bash scripts/example.sh", "inconclusive"),
    # a name that says what the script does is a file: its loss is a missing path
    ("python3 scripts/sample_data.py --rows 8 > plate.csv", "defect"),
    ("python3 scripts/demo_app.py --port 8080", "defect"),
    ("python3 scripts/example_data.py", "defect"),
])
def test_a_generic_example_name_the_skill_does_not_have_is_an_illustration(tmp_path, code,
                                                                            kind):
    d = skill(tmp_path, "lab-notebook", {"scripts/new_entry.py": "print('entry')\n"})
    dg = diagnosed(d, code, code)
    assert dg.kind == kind, dg
    assert ("a generic example name" in dg.reason) == (kind == "inconclusive"), dg


def test_a_generic_name_the_skill_really_ships_is_run_and_judged(tmp_path):
    d = skill(tmp_path, "lab-notebook", {"scripts/example.py": "import sys\nsys.exit(3)\n"})
    code = "python3 scripts/example.py --help"
    assert diagnosed(d, code, code).kind == "defect"


POWER = '''\
    import argparse

    def main():
        parser = argparse.ArgumentParser(prog="power_analysis.py")
        sub = parser.add_subparsers(dest="command", required=True)
        for name in ("sample-size", "power"):
            p = sub.add_parser(name)
            p.add_argument("--cohens-d", dest="effect_size", type=float, required=True)
            p.add_argument("--alpha", type=float, default=0.05)
            p.add_argument("--power", type=float, default=0.8)
        args = parser.parse_args()
        print(args.effect_size)

    main()
    '''


def test_a_renamed_flag_of_a_subcommand_names_the_flag_skill_md_passes(tmp_path):
    # --effect-size renamed --cohens-d: argparse's subcommand parser says only
    # "power_analysis.py sample-size: error: the following arguments are required: --cohens-d"
    d = skill(tmp_path, "power-analysis", {"scripts/power_analysis.py": POWER})
    code = "python3 scripts/power_analysis.py sample-size --effect-size 0.5 --alpha 0.05"
    dg = diagnosed(d, code, code)
    assert (dg.kind, dg.own) == ("defect", "usage"), dg
    assert "the following arguments are required: --cohens-d" in dg.reason
    assert "SKILL.md passes --effect-size, which its usage does not list" in dg.reason
    assert "--alpha" not in dg.reason.split("passes")[1]


def test_a_file_skill_md_says_an_earlier_step_writes_is_the_skills_word(tmp_path):
    # plate-layout: "it is written to `plate_layout.json`", then the grid step reads it; the
    # script's default output moved to layouts/: the first block runs cleanly, the second
    # does not find the file SKILL.md promised
    from aeval.skill.shell_blocks import DocBlock
    from aeval.verdicts.doctest import promised
    first = DocBlock(22, "python3 scripts/plate_map.py assets/samples.csv",
                     "1. Build the layout from the sheet; it is written to "
                     "`plate_layout.json`:")
    assert promised("plate_layout.json", [first]) is not None
    assert promised("./out/plate_layout.json", [first]) is None  # another folder's file
    reader = DocBlock(22, "python3 scripts/plate_grid.py my_plate.json",
                      "Print the grid of `my_plate.json`, your exported layout:")
    assert promised("my_plate.json", [reader]) is None


def test_a_package_named_like_the_skills_own_wrapper_of_it_is_a_need(tmp_path):
    # rss-digest ships scripts/feed_parser.py, which imports the feedparser package its
    # SKILL.md tells the reader to install: not a misspelled import of feed_parser
    d = skill(tmp_path, "rss-digest", {
        "SKILL.md": "---\nname: rss-digest\ndescription: x\n---\n"
                    "Install the parser first: `pip install feedparser`.\n",
        "scripts/feed_parser.py": "import feedparser\n\nprint(feedparser.parse('x'))\n",
        "scripts/digest.py": "import sys\nsys.path.insert(0, 'scripts')\nimport feed_parser\n"})
    code = "python3 scripts/digest.py"
    dg = diagnosed(d, code, code)
    assert (dg.kind, dg.tool) == ("missing_tool", "feedparser"), dg


@pytest.mark.parametrize("before, path", [
    # an instruction to the reader: the reader makes that file
    ("Create `config.json` in the working folder with your survey's columns, then check:",
     "config.json"),
    ("Your export is written to `data/issues.json` by the tracker:", "data/issues.json"),
    ("Save the sheet you exported as `plate.csv`:", "plate.csv"),
])
def test_what_the_reader_is_asked_to_make_is_no_promise_of_the_skill(before, path):
    from aeval.skill.shell_blocks import DocBlock
    from aeval.verdicts.doctest import promised
    assert promised(path, [DocBlock(20, "python3 scripts/check_env.py", before)]) is None


def test_a_step_that_says_it_did_nothing_promised_nothing():
    from aeval.verdicts.doctest import did_nothing
    assert did_nothing("GITHUB_TOKEN is not set; nothing fetched\n")
    assert did_nothing("dry run: would write data/issues.json\n")
    assert not did_nothing("wrote 96 wells to plate_layout.json\n")
