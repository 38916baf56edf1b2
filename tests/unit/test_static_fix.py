"""Fixes S0 proves without a model (`aeval.verdicts.static_fix`): a moved or renamed script,
an option the parser spells otherwise, a dropped executable bit; and none where two
candidates fit. Each skill is written as public ones are, with one planted defect."""

from __future__ import annotations

import os
from pathlib import Path
from textwrap import dedent

from aeval.deployments.cli.main import main
from aeval.skill.skill_md import load_skill
from aeval.verdicts.static_check import static_check
from aeval.verdicts.static_fix import static_fixes

FRONT = dedent("""\
    ---
    name: {name}
    description: {description}
    ---
    """)

COUNT_PY = dedent("""\
    #!/usr/bin/env python3
    \"\"\"Count words in text files.\"\"\"
    import argparse
    import json


    def main():
        ap = argparse.ArgumentParser(description="Count words")
        ap.add_argument("files", nargs="+")
        ap.add_argument("--out", help="write the counts here as JSON")
        ap.add_argument("--dry-run", action="store_true")
        ap.add_argument("--min-length", type=int, default=1)
        args = ap.parse_args()
        counts = {f: len(open(f).read().split()) for f in args.files}
        if not args.dry_run and args.out:
            json.dump(counts, open(args.out, "w"))
        print(counts)


    if __name__ == "__main__":
        main()
    """)


def make(tmp_path: Path, name: str, body: str, files: dict[str, str],
         executable: tuple[str, ...] = ()) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "SKILL.md").write_text(FRONT.format(
        name=name, description="Count words in text files. Use for word statistics.") + body)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        os.chmod(p, 0o755 if rel in executable else 0o644)
    return root


def fixes_of(root: Path):
    findings = static_check(load_skill(root))
    return findings, static_fixes(root, findings)


def line_of(root: Path, text: str, file: str = "SKILL.md") -> int:
    return next(i for i, ln in enumerate((root / file).read_text().splitlines(), 1)
                if text in ln)


def test_a_script_moved_to_another_folder_is_replaced_on_its_line(tmp_path):
    root = make(tmp_path, "word-count", dedent("""\
        # Word count

        ## Usage

        ```bash
        python3 scripts/count.py notes.txt --out counts.json
        ```

        The counts are printed too.
        """), {"tools/count.py": COUNT_PY})
    findings, fixes = fixes_of(root)
    assert [f.kind for f in findings] == ["missing"]
    (fix,) = fixes
    at = line_of(root, "scripts/count.py")
    assert (fix.file, fix.line) == ("SKILL.md", at)
    assert fix.original == "python3 scripts/count.py notes.txt --out counts.json"
    assert fix.replacement == "python3 tools/count.py notes.txt --out counts.json"
    assert fix.command is None
    assert "tools/count.py" in fix.rationale and "only file named count.py" in fix.rationale


def test_a_renamed_script_under_skill_dir_and_in_a_reference_file(tmp_path):
    """The close-match class: `count_word.py` renamed `count_words.py`; written through
    $SKILL_DIR in SKILL.md and through `../` in a reference file it links."""
    root = make(tmp_path, "word-stats", dedent("""\
        # Word stats

        Run it on the user's files:

        ```bash
        python3 "$SKILL_DIR/scripts/count_word.py" report.txt
        ```

        See [the guide](references/guide.md) for batches.
        """), {"scripts/count_words.py": COUNT_PY, "scripts/plot.py": "print('plot')\n",
               "references/guide.md": dedent("""\
                   # Batches

                   Run [the counter](../scripts/count_word.py) on each file.
                   """)})
    findings, fixes = fixes_of(root)
    assert sorted(f.file for f in findings) == ["SKILL.md", "references/guide.md"]
    by_file = {f.file: f for f in fixes}
    assert by_file["SKILL.md"].replacement == \
        'python3 "$SKILL_DIR/scripts/count_words.py" report.txt'
    assert by_file["references/guide.md"].replacement == \
        "Run [the counter](../scripts/count_words.py) on each file."
    assert by_file["references/guide.md"].line == 3


def test_two_candidates_give_no_fix(tmp_path):
    """Two files of the name elsewhere, or two close matches: ambiguous, so nothing."""
    root = make(tmp_path, "ambiguous", dedent("""\
        # Ambiguous

        ```bash
        python3 scripts/count.py notes.txt
        python3 scripts/report_v.py notes.txt
        ```
        """), {"tools/count.py": COUNT_PY, "legacy/count.py": COUNT_PY,
               "scripts/report_v1.py": COUNT_PY, "scripts/report_v2.py": COUNT_PY})
    findings, fixes = fixes_of(root)
    assert [f.kind for f in findings] == ["missing", "missing"]
    assert fixes == []


def test_a_missing_script_with_no_look_alike_gets_no_fix(tmp_path):
    root = make(tmp_path, "fetcher", dedent("""\
        # Fetcher

        ```bash
        python3 scripts/fetch_all.py --since 2024-01-01
        ```
        """), {"scripts/fetch.py": COUNT_PY, "scripts/summarize.py": COUNT_PY})
    findings, fixes = fixes_of(root)
    assert [f.kind for f in findings] == ["missing"]
    assert fixes == []


def test_an_option_the_parser_spells_otherwise(tmp_path):
    """`--output` for `--out` (close match) and `--dry_run` for `--dry-run` (separator), on
    one line of a continued command: one replacement of that line with both."""
    root = make(tmp_path, "word-count", dedent("""\
        # Word count

        ```bash
        python3 scripts/count.py notes.txt \\
            --output counts.json --dry_run
        ```

        Or in one go: `python3 scripts/count.py a.txt b.txt --min_length 3`
        """), {"scripts/count.py": COUNT_PY}, executable=("scripts/count.py",))
    findings, fixes = fixes_of(root)
    assert {f.word for f in findings} == {"--output", "--dry_run", "--min_length"}
    by_line = {f.line: f for f in fixes}
    cont = line_of(root, "--output counts.json")
    assert by_line[cont].original == "    --output counts.json --dry_run"
    assert by_line[cont].replacement == "    --out counts.json --dry-run"
    inline = line_of(root, "Or in one go")
    assert by_line[inline].replacement == \
        "Or in one go: `python3 scripts/count.py a.txt b.txt --min-length 3`"
    assert "only option of its parser" in by_line[inline].rationale


def test_an_option_close_to_two_options_gets_no_fix(tmp_path):
    script = COUNT_PY.replace('ap.add_argument("--dry-run", action="store_true")',
                              'ap.add_argument("--dry-run", action="store_true")\n'
                              '    ap.add_argument("--outdir")')
    root = make(tmp_path, "word-count", dedent("""\
        # Word count

        ```bash
        python3 scripts/count.py notes.txt --outp counts.json
        ```
        """), {"scripts/count.py": script})
    findings, fixes = fixes_of(root)
    assert [f.word for f in findings] == ["--outp"]
    assert fixes == []


def test_a_dropped_exec_bit_is_a_chmod_command(tmp_path):
    root = make(tmp_path, "deploy-notes", dedent("""\
        # Deploy notes

        ```bash
        ./scripts/collect.sh > notes.md
        scripts/render.py notes.md
        ```
        """), {"scripts/collect.sh": "#!/bin/bash\ngit log --oneline -20\n",
               "scripts/render.py": "print('no interpreter line')\n"})
    findings, fixes = fixes_of(root)
    assert sorted(f.path for f in findings if f.kind == "not_executable") == \
        ["scripts/collect.sh", "scripts/render.py"]
    # render.py lacks `#!` too: chmod alone would not make it start, so no fix for it
    (fix,) = fixes
    assert fix.command == "chmod +x scripts/collect.sh"
    assert fix.line == line_of(root, "./scripts/collect.sh")
    assert fix.original == fix.replacement == "./scripts/collect.sh > notes.md"
    assert "mode 644" in fix.rationale


def test_the_chmod_command_quotes_a_path_the_shell_would_read(tmp_path):
    """A file name is the skill's text: copied into a shell it stays one word."""
    root = make(tmp_path, "odd-names", dedent("""\
        # Odd names

        ```bash
        './scripts/tag & push.sh' --dry-run
        ```
        """), {"scripts/tag & push.sh": "#!/bin/sh\necho tagged\n"})
    findings, fixes = fixes_of(root)
    assert [f.kind for f in findings] == ["not_executable"]
    assert [f.command for f in fixes] == ["chmod +x 'scripts/tag & push.sh'"]


def test_the_fix_clears_the_finding(tmp_path):
    """Applied, the fixes leave S0 with nothing to say: each is the exact replacement."""
    root = make(tmp_path, "word-count", dedent("""\
        # Word count

        ```bash
        python3 scripts/counts.py notes.txt --output counts.json
        ./scripts/setup.sh
        ```
        """), {"scripts/count.py": COUNT_PY, "scripts/setup.sh": "#!/bin/sh\necho ok\n"})
    findings, fixes = fixes_of(root)
    assert len(findings) == 2 and len(fixes) == 2
    lines = (root / "SKILL.md").read_text().splitlines()
    for fix in fixes:
        if fix.command:
            os.chmod(root / fix.command.split()[-1], 0o755)
        else:
            lines[fix.line - 1] = fix.replacement
    (root / "SKILL.md").write_text("\n".join(lines) + "\n")
    after = static_check(load_skill(root))
    # the renamed path now reaches the script, whose parser then judges `--output`
    assert [f.word for f in after] == ["--output"]
    _, second = fixes_of(root)
    lines[second[0].line - 1] = second[0].replacement
    (root / "SKILL.md").write_text("\n".join(lines) + "\n")
    assert static_check(load_skill(root)) == []


RUNNER = dedent("""\
    #!/usr/bin/env python3
    import argparse

    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="action", required=True)
    train = sub.add_parser("train")
    train.add_argument("--data")
    evaluate = sub.add_parser("evaluate")
    evaluate.add_argument("--data")
    summary = sub.add_parser("summary")
    summary.add_argument("--data")
    args = ap.parse_args()
    print(args.action)
    """)


def test_a_subcommand_the_script_names_otherwise(tmp_path):
    """`summarize` for `summary` (the close match), `seg_train` for `train` (an accepted
    action the word holds as a part); `train_evaluate` holds two: no fix."""
    root = make(tmp_path, "runner", dedent("""\
        # Runner

        ```bash
        python3 scripts/run.py seg_train --data fixtures
        python3 scripts/run.py summarize --data fixtures
        python3 scripts/run.py train_evaluate --data fixtures
        ```
        """), {"scripts/run.py": RUNNER})
    findings, fixes = fixes_of(root)
    assert [f.word for f in findings] == ["seg_train", "summarize", "train_evaluate"]
    assert [(f.line, f.replacement) for f in fixes] == [
        (line_of(root, "seg_train"), "python3 scripts/run.py train --data fixtures"),
        (line_of(root, "summarize"), "python3 scripts/run.py summary --data fixtures")]


def test_a_reference_files_own_link_is_fixed_as_written(tmp_path):
    """A link of a reference file to its sibling is written from its own folder: the fix
    replaces the name as written (`instalation.md` -> `installation.md`)."""
    root = make(tmp_path, "word-count", dedent("""\
        # Word count

        Read [the guide](references/guide.md) first.
        """), {"references/guide.md": dedent("""\
                   # Guide

                   Install first: see [setup](instalation.md), then count.
                   """),
               "references/installation.md": "# Installation\n"})
    findings, fixes = fixes_of(root)
    assert [(f.file, f.path) for f in findings] == [("references/guide.md",
                                                     "references/instalation.md")]
    (fix,) = fixes
    assert (fix.file, fix.line) == ("references/guide.md", 3)
    assert fix.replacement == "Install first: see [setup](installation.md), then count."


def test_aeval_validate_prints_each_proven_fix_under_its_finding(tmp_path, capsys):
    root = make(tmp_path, "word-count", dedent("""\
        # Word count

        ```bash
        python3 scripts/count.py notes.txt --output counts.json
        ./scripts/setup.sh
        python3 scripts/report.py
        ```
        """), {"scripts/count.py": COUNT_PY, "scripts/setup.sh": "#!/bin/sh\necho ok\n"})
    assert main(["validate", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    at = line_of(root, "--output")
    i = next(n for n, ln in enumerate(out) if f"SKILL.md:{at}:" in ln)
    assert out[i + 1] == f"    fix: line {at} -> python3 scripts/count.py notes.txt --out " \
                         "counts.json"
    j = next(n for n, ln in enumerate(out) if "setup.sh directly" in ln)
    assert out[j + 1] == "    fix: run `chmod +x scripts/setup.sh` in the skill's folder"
    k = next(n for n, ln in enumerate(out) if "scripts/report.py" in ln)
    assert not out[k + 1].startswith("    fix:")  # nothing evident: no fix


def test_a_script_renamed_and_moved_and_one_with_two_look_alikes(tmp_path):
    """Nothing close in its own folder: the only closer match in the whole skill is the fix;
    two such matches (two folders) are none."""
    root = make(tmp_path, "word-count", dedent("""\
        # Word count

        ```bash
        python3 scripts/count_word.py notes.txt
        python3 scripts/plot_count.py counts.json
        ```
        """), {"tools/count_words.py": COUNT_PY, "scripts/report.py": COUNT_PY,
               "tools/plot_counts.py": COUNT_PY, "lib/plot_counts.py": COUNT_PY})
    findings, fixes = fixes_of(root)
    assert [f.path for f in findings] == ["scripts/count_word.py", "scripts/plot_count.py"]
    (fix,) = fixes
    assert fix.replacement == "python3 tools/count_words.py notes.txt"
    assert "the only close match among the skill's .py files" in fix.rationale
