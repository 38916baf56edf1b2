"""The static check reads what SKILL.md and its reference files rely on, deeply (issue 45,
class 1, documentation half): a documented call that lacks an option or argument the script
now requires, a documented value outside an option's choices, a corrupt JSON/YAML/TOML
resource the skill loads or names, a reference file that sends the agent to a file the skill
does not ship, and a SKILL.md table of guides naming files that are not there. Each planted
skill fails S0 on the line that relies on the broken thing; each clean twin (a `--help` call,
arguments through `"$@"`, a placeholder value, a prose fragment, an output table, a template
or JSONC resource, a file documented as broken on purpose) gives no finding."""

from __future__ import annotations

import os
from pathlib import Path
from textwrap import dedent

from aeval.skill.skill_md import load_skill
from aeval.verdicts.static_check import static_check


def build(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text))
        if rel.startswith("scripts/") and text.lstrip().startswith("#!"):
            os.chmod(path, 0o755)
    return root


def defects(root: Path) -> list[str]:
    return [str(f) for f in static_check(load_skill(root)) if f.severity == "defect"]


def findings(root: Path) -> list[str]:
    return [f"{f.severity}: {f}" for f in static_check(load_skill(root))]


def front(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n"


# ---- a documented call that lacks what the script now requires -----------------------------

EXPORT_PY = '''\
    #!/usr/bin/env python3
    """Export a ledger to a report."""
    import argparse
    import json

    FORMATS = ("json", "csv")


    def main():
        parser = argparse.ArgumentParser(description=__doc__)
        parser.add_argument("ledger", help="the ledger file")
        parser.add_argument("--format", choices=FORMATS, default="json")
        parser.add_argument("--currency", required=True, help="ISO code, e.g. EUR")
        parser.add_argument("-q", "--quiet", action="store_true")
        args = parser.parse_args()
        print(json.dumps({"ledger": args.ledger, "format": args.format}))


    if __name__ == "__main__":
        main()
'''


def ledger_skill(root: Path, block: str) -> Path:
    return build(root, {
        "SKILL.md": front("ledger-export", "Export a ledger to JSON or CSV reports. Use when "
                                           "asked for a ledger report.") + dedent(f"""\
            # Ledger export

            Export the month's ledger:

            ```bash
            {block}
            ```

            Pass `--quiet` in CI. For the column list see `scripts/export.py --help`.
            """),
        "scripts/export.py": EXPORT_PY,
    })


def test_a_documented_call_without_a_newly_required_option_fails_s0(tmp_path):
    root = ledger_skill(tmp_path / "ledger-export",
                        "python3 scripts/export.py ledger.csv --format csv")
    (d,) = defects(root)
    assert d.startswith("SKILL.md line 10: runs scripts/export.py without --currency, "
                        "which it requires (scripts/export.py line 13: required=True)"), d


def test_a_documented_call_without_the_required_positional_fails_s0(tmp_path):
    root = ledger_skill(tmp_path / "ledger-export",
                        "./scripts/export.py --currency EUR --format json")
    (d,) = defects(root)
    assert "runs scripts/export.py with 0 of the 1 positional argument(s) it requires: " \
           "ledger is missing (scripts/export.py line 11)" in d and d.startswith("SKILL.md line 10")


def test_a_subcommand_s_required_option_and_a_click_command_s_are_read(tmp_path):
    train = build(tmp_path / "tabular-train", {
        "SKILL.md": front("tabular-train", "Train and evaluate tabular models.") + dedent("""\
            # Tabular training

            ```bash
            python scripts/ml.py train data/train.parquet
            python scripts/ml.py evaluate --checkpoint runs/last.pt
            ```
            """),
        "scripts/ml.py": '''\
            import argparse
            p = argparse.ArgumentParser()
            sub = p.add_subparsers(dest="cmd", required=True)
            t = sub.add_parser("train")
            t.add_argument("data")
            t.add_argument("--target", required=True, help="label column")
            e = sub.add_parser("evaluate")
            e.add_argument("--checkpoint", required=True)
            args = p.parse_args()
        ''',
    })
    (d,) = defects(train)
    assert d.startswith("SKILL.md line 8: runs scripts/ml.py without --target"), d
    sync = build(tmp_path / "bucket-sync", {
        "SKILL.md": front("bucket-sync", "Sync a folder to a bucket.") + dedent("""\
            # Bucket sync

            ```bash
            uv run scripts/sync.py ./site --dry-run
            ```
            """),
        "scripts/sync.py": '''\
            import click

            @click.command()
            @click.argument("folder")
            @click.option("--bucket", required=True, help="target bucket")
            @click.option("--dry-run", is_flag=True)
            def main(folder, bucket, dry_run):
                click.echo(folder)

            if __name__ == "__main__":
                main()
        ''',
    })
    (d,) = defects(sync)
    assert d.startswith("SKILL.md line 8: runs scripts/sync.py without --bucket"), d


def test_calls_whose_words_are_unknown_or_that_only_ask_for_help_are_not_judged(tmp_path):
    for i, block in enumerate([
            "python3 scripts/export.py --help",
            'python3 scripts/export.py "$@"',
            "python3 scripts/export.py $ARGS",
            "python3 scripts/export.py [options] ledger.csv",
            "python3 scripts/export.py",  # no argument at all: the reader's context
            "python3 scripts/export.py ledger.csv --currency <ISO> --format <fmt>",
            "python3 scripts/export.py data/*.csv --currency=EUR",
            "python3 scripts/export.py ledger.csv --currency EUR --format FORMAT",
            "python3 scripts/export.py ledger.csv --currency EUR --format fmt"]):
        assert defects(ledger_skill(tmp_path / str(i) / "ledger-export", block)) == [], block


def test_a_prose_fragment_of_a_call_is_not_a_whole_call(tmp_path):
    root = build(tmp_path / "ledger-export", {
        "SKILL.md": front("ledger-export", "Export ledgers.") + dedent("""\
            # Ledger export

            Run `scripts/export.py --quiet` on the month's files, then read the report.
            """),
        "scripts/export.py": EXPORT_PY,
    })
    assert findings(root) == []


# ---- a documented value outside an option's choices ----------------------------------------

def test_a_documented_value_outside_the_options_choices_fails_s0_in_each_spelling(tmp_path):
    for block, shown in [
            ("python3 scripts/export.py ledger.csv --currency EUR --format yaml",
             "--format yaml"),
            ("python3 scripts/export.py ledger.csv --currency EUR --format=xlsx",
             "--format xlsx"),
            ("python3 scripts/export.py ledger.csv --currency EUR --form tsv", "--form tsv")]:
        root = ledger_skill(tmp_path / shown.replace(" ", "_") / "ledger-export", block)
        (d,) = defects(root)
        assert d.startswith(f"SKILL.md line 10: documents {shown} for scripts/export.py, "
                            f"whose --format accepts only csv, json (scripts/export.py line 12)"), d
    prose = build(tmp_path / "palette" / "brand-palette", {
        "SKILL.md": front("brand-palette", "Render the brand palette.") + dedent("""\
            # Palette

            For print, run `python scripts/palette.py --mode cmyk` and attach the swatch.
            """),
        "scripts/palette.py": '''\
            import click

            @click.command()
            @click.option("--mode", type=click.Choice(["rgb", "hex"]), default="hex")
            def main(mode):
                click.echo(mode)
        ''',
    })
    (d,) = defects(prose)
    assert "documents --mode cmyk for scripts/palette.py, whose --mode accepts only hex, rgb" in d


def test_a_value_within_the_choices_passes(tmp_path):
    root = ledger_skill(tmp_path / "ledger-export",
                        "python3 scripts/export.py ledger.csv --currency EUR --format csv -q")
    assert findings(root) == []


# ---- a corrupt resource the skill relies on -------------------------------------------------

LINT_PY = '''\
    import json
    from pathlib import Path

    RULES = json.load(open(Path(__file__).parent.parent / "data" / "rules.json"))


    def main():
        print(len(RULES))


    main()
'''


def test_a_corrupt_json_resource_a_script_loads_fails_s0_on_the_scripts_line(tmp_path):
    root = build(tmp_path / "copy-lint", {
        "SKILL.md": front("copy-lint", "Lint marketing copy against house rules.") + dedent("""\
            # Copy lint

            ```bash
            python3 scripts/lint.py
            ```
            """),
        "scripts/lint.py": LINT_PY,
        "data/rules.json": '{\n  "passive": "avoid",\n  "jargon": "avoid"\n  "length": 80\n}\n',
    })
    (d,) = defects(root)
    assert d.startswith("scripts/lint.py line 4: relies on data/rules.json, which is not valid "
                        "JSON: line 4 column 3: Expecting ',' delimiter"), d


def test_corrupt_yaml_and_toml_that_skill_md_names_fail_s0_on_skill_md_s_line(tmp_path):
    root = build(tmp_path / "deploy-preview", {
        "SKILL.md": front("deploy-preview", "Deploy preview environments.") + dedent("""\
            # Deploy preview

            The defaults live in `assets/preview.yaml`; copy it next to the app.
            The pinned tool versions are in assets/tools.toml.
            """),
        "assets/preview.yaml": "app:\n  name: web\n  ports: [80, 443\nreplicas: 2\n",
        "assets/tools.toml": '[tools]\nnode = "20"\npython = 3.11.2\n',
    })
    got = defects(root)
    assert len(got) == 2, got
    assert got[0].startswith("SKILL.md line 7: relies on assets/preview.yaml, which is not "
                             "valid YAML: line 4 column 9"), got
    assert got[1].startswith("SKILL.md line 8: relies on assets/tools.toml, which is not valid "
                             "TOML: line 3"), got


def test_a_corrupt_resource_nothing_relies_on_is_a_warning_and_dialects_are_no_finding(
        tmp_path):
    root = build(tmp_path / "web-starter", {
        "SKILL.md": front("web-starter", "Start a web app from the bundled template.") + dedent("""\
            # Web starter

            Copy `templates/` into the project and install.
            """),
        "templates/tsconfig.json":
            '{\n  // strict mode\n  "compilerOptions": {"strict": true,},\n}\n',
        "templates/chart/values.yaml": "image: {{ .Values.image }}\nname: {{ name }\n",
        "templates/package.json": '{"name": "{{project_name}}", "version": {{version}}}\n',
        "templates/empty.json": "",
        "templates/stack.yaml": "Resources:\n  B:\n    Value: !Ref Bucket\n",
        "templates/seed.json": '{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n',
        "samples/invalid-config.json": '{"a": 1,,}\n',
        "notes/old.json": '{"a": [1, 2}\n',
    })
    assert findings(root) == ["warning: notes/old.json line 1: notes/old.json is not valid "
                              "JSON: line 1 column 12: Expecting ',' delimiter"]


def test_a_resource_skill_md_calls_broken_on_purpose_is_no_finding(tmp_path):
    root = build(tmp_path / "json-doctor", {
        "SKILL.md": front("json-doctor", "Explain JSON syntax errors.") + dedent("""\
            # JSON doctor

            Try it on `assets/sample.json`, which is deliberately malformed.
            """),
        "assets/sample.json": '{"a": 1 "b": 2}\n',
    })
    assert defects(root) == []


# ---- reference files and tables that send the agent to files not shipped -------------------

def test_a_reference_file_that_sends_the_agent_to_a_sibling_not_shipped_fails_s0(tmp_path):
    root = build(tmp_path / "pdf-forms", {
        "SKILL.md": front("pdf-forms", "Fill PDF forms.") + dedent("""\
            # PDF forms

            Start with the guide in `references/guide.md`.
            For signatures read [the signing notes](references/signing.md).
            """),
        "references/guide.md": dedent("""\
            # Guide

            For the field types see [forms](forms.md).

            Before flattening, read `advanced.md` first.
            Then load `references/fonts.md` for embedded fonts.
            Write the summary into your project's `NOTES.md`; the README.md of the repo
            is the user's. A `checklist.md` of your own helps.
            """),
        "references/signing.md": "# Signing\n\nConsult `cert-setup.md` before signing.\n",
    })
    got = defects(root)
    assert got == [
        "references/signing.md line 3 (linked from SKILL.md line 8): sends the agent to "
        "cert-setup.md, which the skill does not have (looked for references/cert-setup.md)",
        "references/guide.md line 3 (linked from SKILL.md line 7): links to "
        "references/forms.md, which the skill does not have",
        "references/guide.md line 5 (linked from SKILL.md line 7): sends the agent to "
        "advanced.md, which the skill does not have (looked for references/advanced.md)",
        "references/guide.md line 6 (linked from SKILL.md line 7): sends the agent to "
        "references/fonts.md, which the skill does not have",
    ], got


def test_a_table_of_guides_in_skill_md_naming_files_not_shipped_fails_s0(tmp_path):
    root = build(tmp_path / "code-review", {
        "SKILL.md": front("code-review", "Review code in several languages.") + dedent("""\
            # Code review

            Load the guide for your language:

            | Language | Guide |
            |----------|-------|
            | Python | `references/python.md` |
            | Go | `references/go.md` |
            | Rust | references/rust.md |

            Files the review writes:

            | Output | Path |
            |---|---|
            | Report | `references/report.md` |
            """),
        "references/python.md": "# Python\n",
    })
    got = defects(root)
    assert got == ["SKILL.md line 12: names references/go.md, which the skill does not have",
                   "SKILL.md line 13: names references/rust.md, which the skill does not have"
                   ], got


def test_a_list_after_a_load_lead_in_and_a_plain_table_cell_are_read_like_the_table(tmp_path):
    root = build(tmp_path / "api-client", {
        "SKILL.md": front("api-client", "Generate API clients.") + dedent("""\
            # API clients

            Read the notes for your stack first:

            - TypeScript: `references/typescript.md`
            - Kotlin: `references/kotlin.md`

            | Target | Notes |
            |---|---|
            | Swift | see references/swift.md for the async variant |

            What the generator writes:

            - `references/generated.md` (an index of the client)
            """),
        "references/typescript.md": "# TypeScript\n",
    })
    got = defects(root)
    assert got == ["SKILL.md line 10: names references/kotlin.md, which the skill does not have",
                   "SKILL.md line 14: names references/swift.md, which the skill does not have"
                   ], got


def test_directions_to_files_shipped_elsewhere_written_by_the_steps_or_the_readers_pass(
        tmp_path):
    root = build(tmp_path / "pdf-forms", {
        "SKILL.md": front("pdf-forms", "Fill PDF forms.") + dedent("""\
            # PDF forms

            Read [the guide](references/guide.md) first.
            """),
        "forms.md": "# Forms\n",
        "references/guide.md": dedent("""\
            # Guide

            See `forms.md` for the field types and `REFERENCE.md` is not needed.
            Then open `summary.md`, which step 2 writes.
            Follow your team's `review.md` and read the repo's `docs/style.md`.

            ```bash
            python3 -c 'print(1)' > notes.md
            ```

            Finally read `notes.md` and see `CHANGELOG.md`.
            """),
    })
    assert findings(root) == []


# ---- a script that counts its words ---------------------------------------------------------

def test_a_documented_call_with_fewer_words_than_a_counting_script_needs_fails_s0(tmp_path):
    merge = build(tmp_path / "pdf-merge", {
        "SKILL.md": front("pdf-merge", "Merge PDFs.") + dedent("""\
            # Merge

            ```bash
            python3 scripts/merge.py report.pdf
            ```
            """),
        "scripts/merge.py": '''\
            import sys


            def main():
                if len(sys.argv) != 3:
                    print("usage: merge.py <first.pdf> <second.pdf>")
                    sys.exit(1)


            if __name__ == "__main__":
                main()
        ''',
    })
    (d,) = defects(merge)
    assert d == ("SKILL.md line 8: runs scripts/merge.py with 1 argument(s), but it exits "
                 "unless given exactly 2 (scripts/merge.py line 5: len(sys.argv) != 3)"), d
    resize = build(tmp_path / "image-resize", {
        "SKILL.md": front("image-resize", "Resize images.") + dedent("""\
            # Resize

            ```bash
            bash scripts/resize.sh photo.jpg
            ./scripts/thumb.sh photo.jpg
            ```
            """),
        "scripts/resize.sh": '''\
            #!/bin/bash
            usage() {
              echo "usage: $0 <image> <width>" >&2
              exit 2
            }
            if [ "$#" -lt 2 ]; then
              usage
            fi
        ''',
        "scripts/thumb.sh": '#!/bin/sh\nIN="${1:?image}"\nSIZE="${2:?size in px}"\n',
    })
    got = defects(resize)
    assert got == [
        "SKILL.md line 8: runs scripts/resize.sh with 1 argument(s), but it exits unless "
        'given at least 2 (scripts/resize.sh line 6: if [ "$#" -lt 2 ]; then)',
        "SKILL.md line 9: runs scripts/thumb.sh with 1 argument(s), but it exits unless "
        "given at least 2 (scripts/thumb.sh line 3: ${2:?...})"], got


def test_counting_scripts_called_as_they_count_or_with_unknown_words_pass(tmp_path):
    root = build(tmp_path / "image-resize", {
        "SKILL.md": front("image-resize", "Resize images.") + dedent("""\
            # Resize

            ```bash
            bash scripts/resize.sh photo.jpg 640
            bash scripts/resize.sh "$@"
            bash scripts/resize.sh images/*.jpg
            bash scripts/resize.sh
            python3 scripts/info.py photo.jpg
            python3 scripts/only.py photo.jpg --verbose
            ```
            """),
        "scripts/resize.sh":
            '#!/bin/bash\nif [ $# -lt 2 ]; then\n  echo "usage" >&2\n  exit 1\nfi\n',
        "scripts/info.py": '''\
            import sys
            if len(sys.argv) < 2:
                print(__doc__)
                sys.exit(0)


            def merge():
                if len(sys.argv) < 4:
                    sys.exit("merge needs two files")
        ''',
        "scripts/only.py": "import sys\n\nif len(sys.argv) > 3:\n    sys.exit(2)\n",
    })
    assert findings(root) == []
