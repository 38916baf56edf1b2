"""Issue 31, classes 3-5, through `aeval run --runtime literal` (zero-key): what a user reads
for a scientific skill whose script asks for rdkit, a vendor's multi-step artifact skill whose
bundle step needs the project a skipped step makes, a skill whose argparse required flag was
renamed (after an optional ``export`` block the doc test skips), a broken import, and a bare
script name the skill keeps in scripts/.
"""

from __future__ import annotations

import pytest

from tests.e2e.test_ecosystem_conventions import doc_test_of, line_of, run

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

DESCRIPTORS = '''\
    #!/usr/bin/env python3
    """Compute molecular descriptors (MW, logP) for SMILES strings with RDKit."""
    import argparse
    import json
    import sys

    try:
        from rdkit import Chem
        from rdkit.Chem import Descriptors
    except ImportError:
        print("Error: rdkit is not installed. Install with: pip install rdkit", file=sys.stderr)
        sys.exit(1)

    ap = argparse.ArgumentParser(prog="descriptors.py")
    ap.add_argument("--smiles", required=True, nargs="+")
    args = ap.parse_args()
    print(json.dumps([{"smiles": s, "mw": Descriptors.MolWt(Chem.MolFromSmiles(s))}
                      for s in args.smiles]))
    '''

MOLECULES = {
    "SKILL.md": """\
        ---
        name: molecule-descriptors
        description: Compute molecular weight and logP of molecules given as SMILES, with
          RDKit. Use for quick cheminformatics checks.
        ---
        # Molecular descriptors

        Requires RDKit (`pip install rdkit`).

        ```bash
        python scripts/descriptors.py --smiles CCO c1ccccc1
        ```
        """,
    "scripts/descriptors.py": DESCRIPTORS,
}

ARTIFACTS = {
    "SKILL.md": """\
        ---
        name: web-artifacts
        description: Build an interactive single-file HTML artifact with React, Tailwind
          and shadcn/ui components, bundled for claude.ai.
        ---
        # Web artifacts

        ## Step 1: create the project

        ```bash
        bash scripts/init-artifact.sh <project-name>
        cd <project-name>
        ```

        ## Step 2: develop

        Edit `src/App.tsx`.

        ## Step 3: bundle into one HTML file

        ```bash
        bash scripts/bundle-artifact.sh
        ```

        This writes `bundle.html`, ready to share.
        """,
    "scripts/init-artifact.sh": """\
        #!/bin/bash
        # Create a Vite + React + Tailwind project for an artifact
        set -e
        npx create-vite@latest "$1" --template react-ts
        cd "$1" && npm install && npm install -D parcel html-inline
        """,
    "scripts/bundle-artifact.sh": """\
        #!/bin/bash
        # Bundle the artifact project into a single bundle.html
        set -e
        if [ ! -f "package.json" ]; then
          echo "❌ Error: No package.json found. Run this script from your project root."
          exit 1
        fi
        npx parcel build index.html --no-source-maps --dist-dir dist
        npx html-inline dist/index.html > bundle.html
        """,
}

ANALYZE = '''\
    #!/usr/bin/env python3
    """Summarise a plate reader CSV (well, signal) as JSON or a table."""
    import argparse
    import csv
    import json
    import sys

    ap = argparse.ArgumentParser(prog="analyze.py")
    ap.add_argument("--{flag}", dest="source", required=True, help="the plate CSV")
    ap.add_argument("--format", choices=("json", "table"), default="table")
    args = ap.parse_args()
    with open(args.source, newline="") as fh:
        rows = list(csv.DictReader(fh))
    mean = sum(float(r["signal"]) for r in rows) / len(rows)
    if args.format == "json":
        json.dump({{"wells": len(rows), "mean": round(mean, 4)}}, sys.stdout)
        print()
    else:
        print(f"wells {{len(rows)}}  mean {{mean:.4f}}")
    '''


def assay(flag: str = "input") -> dict[str, str]:
    return {
        "SKILL.md": """\
            ---
            name: assay-summary
            description: Summarise plate reader results (mean signal per plate) for a quick
              look before the full analysis.
            ---
            # Assay summary

            Optionally point the script at your LIMS (uploads are off without it):

            ```bash
            export ASSAY_LIMS_KEY=<your-lims-key>
            ```

            Summarise the sample plate, then the same as a table:

            ```bash
            python scripts/analyze.py --input assets/plate.csv --format json
            python scripts/analyze.py --input assets/plate.csv
            ```
            """,
        "scripts/analyze.py": ANALYZE.format(flag=flag),
        "assets/plate.csv": "well,signal\nA1,0.41\nA2,0.39\nB1,0.44\n",
    }


TIMELINE = '''\
    """Count the lab events in a CSV log per day."""
    import csv
    from {module} import datetime
    import sys

    with open(sys.argv[1], newline="") as fh:
        days = {{datetime.fromisoformat(r["when"]).date() for r in csv.DictReader(fh)}}
    print(len(days), "days")
    '''


def timeline(module: str = "datetime") -> dict[str, str]:
    return {
        "SKILL.md": """\
            ---
            name: lab-timeline
            description: Count the days with lab events in an events CSV (when,what).
            ---
            # Lab timeline

            ```bash
            python scripts/timeline.py assets/events.csv
            ```
            """,
        "scripts/timeline.py": TIMELINE.format(module=module),
        "assets/events.csv": "when,what\n2024-01-02T09:00,assay\n2024-01-03T10:00,wash\n",
    }


def deck(run_line: str = "python3 scripts/build.py assets/deck.md") -> dict[str, str]:
    return {
        "SKILL.md": f"""\
            ---
            name: slide-deck
            description: Turn a Markdown outline into a slide deck (one slide per heading).
            ---
            # Slide deck

            ```bash
            {run_line}
            ```
            """,
        "scripts/build.py": "import sys\nprint(open(sys.argv[1]).read().count('#'), 'slides')\n",
        "assets/deck.md": "# One\n# Two\n",
    }


ASSAY_LINE = line_of(assay()["SKILL.md"], "--format json")
BARE_LINE = line_of(deck()["SKILL.md"], "build.py")
TIMELINE_LINE = line_of(timeline()["SKILL.md"], "timeline.py")


def test_what_the_skills_environment_and_project_lack_is_no_defect(tmp_path):
    code, skills, _ = run(tmp_path, {"molecule-descriptors": MOLECULES,
                                     "web-artifacts": ARTIFACTS, "assay-summary": assay(),
                                     "lab-timeline": timeline(), "slide-deck": deck()})
    found = {n: s["status"] for n, s in skills.items()}
    (case,) = skills["molecule-descriptors"]["cases"]
    assert found["molecule-descriptors"] == "untested", case["reason"]
    assert "needs rdkit" in case["reason"], case["reason"]
    (case,) = skills["web-artifacts"]["cases"]
    assert found["web-artifacts"] == "untested", case["reason"]
    assert "needs the reader's package.json (scripts/bundle-artifact.sh says \"❌ Error: No " \
           "package.json found. Run this script from your project root.\")" in case["reason"], \
        case["reason"]
    for name in ("assay-summary", "lab-timeline", "slide-deck"):
        assert found[name] == "pass", (name, skills[name]["cases"][0]["reason"])
    assert code == 0, found


def test_a_renamed_flag_a_broken_import_and_a_bare_script_name_fail_on_their_line(tmp_path):
    code, skills, rd = run(tmp_path, {
        "assay-summary": assay(flag="source"), "lab-timeline": timeline("datetimes"),
        "slide-deck": deck("python3 build.py assets/deck.md")})
    found = {n: s["status"] for n, s in skills.items()}
    assert found == {"assay-summary": "fail", "lab-timeline": "fail", "slide-deck": "fail"}, {
        n: s["cases"][0]["reason"] for n, s in skills.items()}
    assert code == 1
    s2 = doc_test_of(rd, skills["assay-summary"]["cases"][0])
    assert s2["status"] == "failed", s2
    # the earlier `export` block was skipped: the usage error is evidence all the same, and
    # the block's second command, never run, is named
    assert f"SKILL.md line {ASSAY_LINE}: the skill's analyze.py rejects what SKILL.md " \
           "documents: the following arguments are required: --source (SKILL.md passes " \
           "--input, which its usage does not list); SKILL.md line " \
           f"{ASSAY_LINE + 1} (the rest of the block) was not run" in s2["evidence"], s2
    s2 = doc_test_of(rd, skills["lab-timeline"]["cases"][0])
    assert s2["status"] == "failed", s2
    assert f"SKILL.md line {TIMELINE_LINE}: the skill's scripts/timeline.py:3 imports " \
           "datetimes, a module that exists nowhere" in s2["evidence"], s2
    assert "a misspelling of the standard library's datetime" in s2["evidence"], s2
    s2 = doc_test_of(rd, skills["slide-deck"]["cases"][0])
    assert s2["status"] == "failed", s2
    assert f"SKILL.md line {BARE_LINE}: SKILL.md runs build.py from the skill folder, which " \
           "has no build.py there (the skill ships scripts/build.py): a missing path" in \
           s2["evidence"], s2
