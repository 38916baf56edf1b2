"""The static skill check (S0) reads prose as prose (issue 31, classes 2 and 5).

S0 fails a skill on what a block runs and on what a link or SKILL.md names; a mention in a
reference file's prose, a generic example name and a layout tree's entry are warnings: shown
to the user (as lint warnings, by `aeval validate` and `aeval run`), never a fail. The skills
here are written the way the public ones the issue was found on are: a security team's audit
plugin with prose-heavy references, a scientific skill run with `uv run` whose SKILL.md draws
its layout, a skill-writing guide with generic examples."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.deployments.cli.main import main
from aeval.skill.skill_md import load_skill
from aeval.tasks.run.examine import examine
from aeval.verdicts.static_check import static_check


def build(root: Path, files: dict[str, str], executable: set[str] = frozenset()) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        os.chmod(p, 0o755 if rel in executable else 0o644)
    return root


def _severity(finding) -> str:
    return getattr(finding, "severity", "defect")  # before issue 31 every finding failed


def defects(skill: Path) -> list[str]:
    return [str(f) for f in static_check(load_skill(skill)) if _severity(f) == "defect"]


def warnings(skill: Path) -> list[str]:
    return [str(f) for f in static_check(load_skill(skill)) if _severity(f) == "warning"]


# ---- a security audit plugin: SKILL.md, scripts, references/*.md in prose ----------------------

AUDIT_SKILL = dedent("""\
    ---
    name: sarif-audit
    description: Run semgrep and bandit over a repository and merge their SARIF reports into
      one triaged list. Use for a security review of a Python codebase.
    ---
    # SARIF audit

    Read [the workflow](references/workflow.md) before the first scan, and
    [triage](references/triage.md) when the merged report is long.

    ## Scan

    ```bash
    python3 scripts/run_scans.py --target . --out out/
    ```

    ## Merge

    ```bash
    python3 scripts/merge_sarif.py out/semgrep.sarif out/bandit.sarif -o out/merged.sarif
    ```

    To keep only the high-severity results:
    `python3 scripts/merge_sarif.py out/*.sarif --min-severity high -o out/high.sarif`.
    """)
RUN_SCANS = dedent("""\
    #!/usr/bin/env python3
    \"\"\"Run semgrep and bandit; write one SARIF file each.\"\"\"
    import argparse

    p = argparse.ArgumentParser(prog="run_scans.py")
    p.add_argument("--target", default=".")
    p.add_argument("--out", default="out")
    p.add_argument("--rules", default="p/python")
    print(p.parse_args())
    """)
MERGE_SARIF = dedent("""\
    #!/usr/bin/env python3
    \"\"\"Merge SARIF reports into one, de-duplicated by rule and location.\"\"\"
    import argparse

    p = argparse.ArgumentParser(prog="merge_sarif.py")
    p.add_argument("reports", nargs="+")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--min-severity", choices=["low", "medium", "high"], default="low")
    print(p.parse_args())
    """)
WORKFLOW_MD = dedent("""\
    # Workflow

    Scan first, then merge. The merge keeps what the team marked: older versions of this
    plugin spelled it `scripts/merge_sarif.py --important`, which the current script replaced
    with `--min-severity high`.

    If your repository has its own exporter, such as `scripts/export_jira.py --project SEC`,
    run it on the merged file afterwards; CI pipelines often call `tools/upload_sarif.sh
    out/merged.sarif` at this point.

    ```bash
    python3 scripts/merge_sarif.py out/semgrep.sarif -o out/merged.sarif --min-severity medium
    ```
    """)
TRIAGE_MD = dedent("""\
    # Triage

    Sort the merged results by rule first. Teams keep their suppressions in
    `config/suppressions.yaml` and their notes in `notes/triage.md`.
    """)
AUDIT = {"SKILL.md": AUDIT_SKILL, "scripts/run_scans.py": RUN_SCANS,
         "scripts/merge_sarif.py": MERGE_SARIF, "references/workflow.md": WORKFLOW_MD,
         "references/triage.md": TRIAGE_MD}
AUDIT_X = {"scripts/run_scans.py", "scripts/merge_sarif.py"}
WF = "references/workflow.md line {} (linked from SKILL.md line 8)"


def test_a_reference_files_prose_is_a_warning_not_a_fail(tmp_path):
    skill = build(tmp_path / "sarif-audit", AUDIT, AUDIT_X)
    assert defects(skill) == []
    assert warnings(skill) == [
        f"{WF.format(4)}: documents the option --important for scripts/merge_sarif.py, which "
        "does not accept it",
        f"{WF.format(7)}: runs scripts/export_jira.py, which the skill does not have"]


def test_what_a_reference_files_block_runs_and_what_skill_md_runs_inline_still_fail(tmp_path):
    """The teeth S0 keeps: a reference file's block, and SKILL.md's inline command that runs
    the skill's own script with a flag it rejects."""
    merge = MERGE_SARIF.replace('"--min-severity"', '"--severity"')
    skill = build(tmp_path / "sarif-audit", {**AUDIT, "scripts/merge_sarif.py": merge}, AUDIT_X)
    assert defects(skill) == [
        "SKILL.md line 24: documents the option --min-severity for scripts/merge_sarif.py, "
        "which does not accept it",
        f"{WF.format(12)}: documents the option --min-severity for scripts/merge_sarif.py, "
        "which does not accept it"]


def test_an_s0_warning_travels_as_a_lint_warning_and_does_not_fail(tmp_path):
    skill = build(tmp_path / "sarif-audit", AUDIT, AUDIT_X)
    ex = examine(skill)
    assert ex.valid and ex.static_findings == []
    root = skill.resolve()
    assert [w for w in ex.warnings if "references/workflow.md" in w] == [
        f"{root}/references/workflow.md:4: documents the option --important for "
        "scripts/merge_sarif.py, which does not accept it (linked from SKILL.md line 8)",
        f"{root}/references/workflow.md:7: runs scripts/export_jira.py, which the skill does "
        "not have (linked from SKILL.md line 8)"]


def test_aeval_validate_prints_the_warning_once_and_exits_0(tmp_path, capsys):
    skill = build(tmp_path / "mp" / "sarif-audit", AUDIT, AUDIT_X)
    assert main(["validate", str(skill)]) == 0
    out = capsys.readouterr().out
    assert out.count("warning: ") == 2 and out.count("--important") == 1, out
    assert out.startswith(f"ok      {skill.resolve()}  (sarif-audit")
    assert "0 with a static defect" in out


# ---- a closing quote is no part of a path ----------------------------------------------------

SLICE_SKILL = dedent("""\
    ---
    name: code-slicer
    description: Cut a program slice around a variable and pack it for review.
    ---
    # Code slicer

    The packer is `scripts/build_slice_packet.py"` (quote the path when your shell needs it).

    ```bash
    python "scripts/build_slice_packet.py" --root src --var user_input
    ```

    Or in one step: `python3 "scripts/build_slice_packet.py" --root . --var token`
    """)
SLICER = dedent("""\
    import argparse

    p = argparse.ArgumentParser(prog="build_slice_packet.py")
    p.add_argument("--root", required=True)
    p.add_argument("--var", required=True)
    print(p.parse_args())
    """)


def test_a_quote_around_or_after_a_path_is_not_part_of_it(tmp_path):
    skill = build(tmp_path / "code-slicer", {"SKILL.md": SLICE_SKILL,
                                              "scripts/build_slice_packet.py": SLICER})
    assert defects(skill) + warnings(skill) == []
    (skill / "scripts" / "build_slice_packet.py").rename(skill / "scripts" / "slice.py")
    assert defects(skill) == [
        "SKILL.md line 10: runs scripts/build_slice_packet.py, which the skill does not have",
        "SKILL.md line 13: runs scripts/build_slice_packet.py, which the skill does not have"]
    # line 7 only mentions the packer ("The packer is `...`"): a warning, with the same path
    assert warnings(skill) == [
        "SKILL.md line 7: names scripts/build_slice_packet.py, which the skill does not have"]


# ---- a generic example is an illustration ----------------------------------------------------

GUIDE_SKILL = dedent("""\
    ---
    name: skill-author
    description: Write and structure a new agent skill. Use when creating a skill.
    ---
    # Writing a skill

    Start from the template: `python3 scripts/init_skill.py my-skill --path skills/`.

    ## Structuring scripts

    Put each helper in `scripts/`. Every script takes `--help`, so the agent can learn it:

    ```bash
    python scripts/script_name.py --help
    ```

    A script run directly needs a shebang, e.g. `./scripts/my_script.sh --dry-run`; name it
    after what it does (`scripts/example.py` says nothing). Reference files go next to it,
    e.g. `references/example_api.md`.
    """)
INIT_SKILL = dedent("""\
    #!/usr/bin/env python3
    import argparse

    p = argparse.ArgumentParser(prog="init_skill.py")
    p.add_argument("name")
    p.add_argument("--path", default=".")
    print(p.parse_args())
    """)


def test_a_generic_example_name_is_a_warning_not_a_missing_file(tmp_path):
    skill = build(tmp_path / "skill-author", {"SKILL.md": GUIDE_SKILL,
                                               "scripts/init_skill.py": INIT_SKILL},
                  {"scripts/init_skill.py"})
    assert defects(skill) == []
    assert warnings(skill) == [
        "SKILL.md line 14: runs scripts/script_name.py, which the skill does not have (a "
        "generic example name: read as an illustration)",
        "SKILL.md line 17: runs scripts/my_script.sh, which the skill does not have (a "
        "generic example name: read as an illustration)",
        "SKILL.md line 18: names scripts/example.py, which the skill does not have (a "
        "generic example name: read as an illustration)"]


def test_a_real_script_name_stays_a_defect_and_so_does_an_example_that_is_there(tmp_path):
    """Not a word list tailored to one skill: `init_skill.py` gone is missing, and a
    `scripts/example.py` the skill ships is checked like any script."""
    md = GUIDE_SKILL.replace("python scripts/script_name.py --help",
                             "python scripts/example.py --verbose")
    skill = build(tmp_path / "skill-author", {"SKILL.md": md, "scripts/example.py": INIT_SKILL})
    assert defects(skill) == [
        "SKILL.md line 7: runs scripts/init_skill.py, which the skill does not have",
        "SKILL.md line 14: documents the option --verbose for scripts/example.py, which does "
        "not accept it"]


# ---- a fence without a language: commands and layout trees -----------------------------------

SPECTRA_SKILL = dedent("""\
    ---
    name: spectra-fit
    description: Fit peaks in a measured spectrum (Voigt, Gaussian, Lorentzian) and plot the
      fit. Use for Raman or XRD data in CSV.
    ---
    # Spectrum peak fitting

    ## Layout

    ```
    spectra-fit/
    ├── SKILL.md          ← start here
    ├── scripts/
    │   ├── fit_peaks.py        # the fit
    │   └── plot_spectrum.py - the figure
    └── references/
        └── lineshapes.md (Voigt, Gaussian)
    ```

    ## Fit

    ```
    uv run scripts/fit_peaks.py data/raman.csv --model voigt --peaks 3
    ```

    It prints:

    ```
    Fitted 3 peaks (chi2 = 1.02)
    scripts/fit_peaks.py: wrote fit.json
    python 3.12, lmfit 1.3
    ```

    Batch runs happen in your own checkout:

    ```
    cd ~/beamtime-2024
    python3 scripts/fit_all.py runs/*.csv --jobs 8
    ```

    A typical project using it:

    ```
    my-project/
    ├── data/
    │   └── raman.csv
    └── notebooks/
        └── analysis.ipynb
    ```
    """)
FIT_PEAKS = dedent("""\
    # /// script
    # dependencies = ["lmfit", "numpy"]
    # ///
    import argparse

    p = argparse.ArgumentParser(prog="fit_peaks.py")
    p.add_argument("csv")
    p.add_argument("--model", choices=["voigt", "gaussian", "lorentzian"], default="voigt")
    p.add_argument("--peaks", type=int, default=1)
    print(p.parse_args())
    """)
SPECTRA = {"SKILL.md": SPECTRA_SKILL, "scripts/fit_peaks.py": FIT_PEAKS,
           "scripts/plot_spectrum.py": "import sys\nprint(sys.argv)\n",
           "references/lineshapes.md": "# Line shapes\n\nVoigt = Gaussian * Lorentzian.\n"}


def test_a_clean_skill_with_plain_fences_has_no_finding(tmp_path):
    skill = build(tmp_path / "spectra-fit", SPECTRA)
    assert defects(skill) + warnings(skill) == []


def test_a_plain_fence_that_runs_the_skills_script_is_checked_like_a_shell_block(tmp_path):
    renamed = FIT_PEAKS.replace('"--model"', '"--lineshape"')
    skill = build(tmp_path / "spectra-fit", {**SPECTRA, "scripts/fit_peaks.py": renamed})
    assert defects(skill) == ["SKILL.md line 23: documents the option --model for "
                              "scripts/fit_peaks.py, which does not accept it"]
    (skill / "scripts" / "fit_peaks.py").rename(skill / "scripts" / "fit.py")
    assert defects(skill) == ["SKILL.md line 23: runs scripts/fit_peaks.py, which the skill "
                              "does not have"]


def test_a_layout_tree_naming_a_file_the_skill_lacks_is_a_warning(tmp_path):
    skill = build(tmp_path / "spectra-fit", SPECTRA)
    (skill / "scripts" / "plot_spectrum.py").unlink()
    (skill / "references" / "lineshapes.md").unlink()
    assert defects(skill) == []
    assert warnings(skill) == [
        "SKILL.md line 15: lists scripts/plot_spectrum.py in a layout tree, which the skill "
        "does not have",
        "SKILL.md line 17: lists references/lineshapes.md in a layout tree, which the skill "
        "does not have"]


def test_an_indented_listing_without_guides_is_a_tree_too(tmp_path):
    md = SPECTRA_SKILL.replace(dedent("""\
        spectra-fit/
        ├── SKILL.md          ← start here
        ├── scripts/
        │   ├── fit_peaks.py        # the fit
        │   └── plot_spectrum.py - the figure
        └── references/
            └── lineshapes.md (Voigt, Gaussian)
        """), dedent("""\
        spectra-fit/
            SKILL.md
            scripts/
                fit_peaks.py
                fit_baseline.py
        """))
    skill = build(tmp_path / "spectra-fit", {**SPECTRA, "SKILL.md": md})
    assert defects(skill) == []
    assert warnings(skill) == ["SKILL.md line 15: lists scripts/fit_baseline.py in a layout "
                               "tree, which the skill does not have"]


def test_a_plain_fence_after_a_cd_elsewhere_is_the_readers(tmp_path):
    """The `cd ~/beamtime-2024` block above: its `scripts/fit_all.py` is the reader's (the
    skill has a scripts/ folder, and no fit_all.py)."""
    skill = build(tmp_path / "spectra-fit", SPECTRA)
    md = skill / "SKILL.md"
    assert "python3 scripts/fit_all.py" in md.read_text()
    assert defects(skill) == []
    md.write_text(md.read_text().replace("cd ~/beamtime-2024\n", ""))
    (line,) = [i for i, ln in enumerate(md.read_text().splitlines(), 1) if "fit_all" in ln]
    assert defects(skill) == [f"SKILL.md line {line}: runs scripts/fit_all.py, which the "
                              "skill does not have"]


def test_an_inline_command_given_as_an_example_in_skill_md_is_a_warning(tmp_path):
    md = GUIDE_SKILL + ("\nA bigger skill adds an index, e.g. `python3 scripts/build_index.py "
                        "--out index.json`; see `python3 scripts/init_skill.py --help` "
                        "first.\n")
    skill = build(tmp_path / "skill-author", {"SKILL.md": md,
                                               "scripts/init_skill.py": INIT_SKILL},
                  {"scripts/init_skill.py"})
    assert defects(skill) == []
    assert warnings(skill)[-1] == ("SKILL.md line 21: runs scripts/build_index.py, which the "
                                   "skill does not have")
    (skill / "scripts" / "init_skill.py").unlink()  # not given as an example: a defect
    assert defects(skill) == [
        "SKILL.md line 7: runs scripts/init_skill.py, which the skill does not have",
        "SKILL.md line 21: runs scripts/init_skill.py, which the skill does not have"]


def _elapsed(skill: Path) -> float:
    loaded = load_skill(skill)
    gc.collect()
    start = time.perf_counter()
    static_check(loaded)
    return time.perf_counter() - start


@pytest.mark.parametrize("fence", [
    # a tree whose notes are long runs of blanks (a pattern that backtracks over them is
    # quadratic in the line)
    "```\n" + "".join(f"├── f{i}.py" + " " * 280 + "x\n" for i in range(60)) + "```\n",
    # a plain fence of command-like lines, none of them the skill's
    "```\n" + "".join(f"python3 out/r{i}.py" + " \t" * 140 + "\n" for i in range(60))
    + "```\n",
], ids=["tree", "commands"])
def test_the_plain_fence_readers_are_linear(tmp_path, fence):
    assert_linear(tmp_path, fence * 4, fence * 40)


def assert_linear(tmp_path: Path, small_body: str, large_body: str) -> None:
    """S0 on a SKILL.md body ten times larger takes well under 30 times as long."""
    head = "---\nname: big\ndescription: Big.\n---\n# Big\n\n"
    small = build(tmp_path / "small" / "big", {"SKILL.md": head + small_body,
                                               "scripts/x.py": "print(1)\n"})
    large = build(tmp_path / "large" / "big", {"SKILL.md": head + large_body,
                                               "scripts/x.py": "print(1)\n"})
    _elapsed(small)  # warm up
    t_small = max(min(_elapsed(small) for _ in range(3)), 1e-3)
    t_large = min(_elapsed(large) for _ in range(2))  # the best of two: a busy machine
    assert t_large < 30 * t_small + 0.5, (t_small, t_large)


# ---- a path mentioned in SKILL.md's prose ---------------------------------------------------

CREATOR_SKILL = dedent("""\
    ---
    name: skill-creator
    description: Guide for creating effective skills.
    ---
    # Skill creator

    - **Example**: `scripts/rotate_pdf.py` for PDF rotation tasks
    - **Examples**: `references/finance.md` for financial schemas, `references/mnda.md` for NDAs
    2. A `scripts/rotate_pdf.py` script would be helpful to store in the skill
    Place your company logo at `assets/logo.png` before running.
    See `references/workflow.md` for the steps, and read `references/api.md` first.
    """)


def test_a_path_skill_md_only_mentions_is_a_warning_one_it_sends_the_agent_to_fails(tmp_path):
    # anthropics/skills' skill-creator names example files it does not ship, as examples
    skill = build(tmp_path / "skill-creator", {
        "SKILL.md": CREATOR_SKILL, "scripts/init_skill.py": "print('init')\n",
        "references/output-patterns.md": "# Patterns\n", "assets/template.md": "# T\n"})
    assert defects(skill) == [
        "SKILL.md line 11: names references/workflow.md, which the skill does not have",
        "SKILL.md line 11: names references/api.md, which the skill does not have"]
    assert [w.split(":")[0] for w in warnings(skill)] == [
        "SKILL.md line 8", "SKILL.md line 9"]  # mnda.md after a comma; "A `x` script would"


def test_one_line_of_many_spans_is_read_in_linear_time(tmp_path):
    assert_linear(tmp_path, " ".join(f"`w{i}`" for i in range(500)) + "\n",
                  " ".join(f"`w{i}`" for i in range(5000)) + "\n")
