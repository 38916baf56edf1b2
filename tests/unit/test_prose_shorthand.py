"""Prose shorthand is not a command line (issue 49, class 2).

SKILL.md's fenced blocks give a script to its interpreter (``python scripts/x.py ...``); its
prose then says "use `scripts/x.py monthly`" for short. The script needs no executable bit
and S0 must not fail the skill for lacking one: the prose names the file (it must exist, and
the subcommand must be one the script accepts), it does not run it. A direct run that only
prose shows, with no block either way, is a warning on its line, never a defect; a block
that runs the file directly still fails S0 as before."""

from __future__ import annotations

from textwrap import dedent

from aeval.skill.skill_md import load_skill
from aeval.verdicts.static_check import static_check
from tests.unit.test_static_prose import build


def findings(skill) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"defect": [], "warning": []}
    for f in static_check(load_skill(skill)):
        out[f.severity].append(str(f))
    return out


MAKE_REPORT = dedent('''\
    """Build an activity report from the tracker export."""
    import argparse

    p = argparse.ArgumentParser(prog="make_report.py")
    p.add_argument("--list", action="store_true", help="list the report kinds")
    sub = p.add_subparsers(dest="kind")
    w = sub.add_parser("weekly")
    w.add_argument("-o", "--output")
    m = sub.add_parser("monthly")
    m.add_argument("--since")
    m.add_argument("-o", "--output")
    args = p.parse_args()
    if args.list:
        print("weekly\\nmonthly")
    ''')

WEEKLY = dedent("""\
    ---
    name: weekly-report
    description: Build weekly and monthly activity reports from the team's tracker export.
      Use when someone asks for a status report.
    ---
    # Weekly report

    See which report kinds exist:

    ```bash
    python scripts/make_report.py --list
    ```

    Build this week's report:

    ```bash
    python scripts/make_report.py weekly -o week.md
    ```

    Use `scripts/make_report.py monthly` for the monthly one.
    To start later, run `scripts/make_report.py monthly --since 2024-03 -o month.md`.
    The monthly report (`scripts/make_report.py monthly`) lists closed issues too.
    Ask before you call `scripts/make_report.py monthly` for a team you do not lead.
    """)


def test_prose_shorthand_of_a_script_the_blocks_give_to_python_fails_nothing(tmp_path):
    skill = build(tmp_path / "weekly-report", {"SKILL.md": WEEKLY,
                                               "scripts/make_report.py": MAKE_REPORT})
    assert findings(skill) == {"defect": [], "warning": []}


def test_the_prose_subcommand_is_still_checked_against_the_script(tmp_path):
    text = WEEKLY.replace("The monthly report (`scripts/make_report.py monthly`)",
                          "The quarterly report (`scripts/make_report.py quarterly`)")
    skill = build(tmp_path / "weekly-report", {"SKILL.md": text,
                                               "scripts/make_report.py": MAKE_REPORT})
    got = findings(skill)
    assert got["warning"] == []
    assert len(got["defect"]) == 1 and "line 22" in got["defect"][0] \
        and "documents `quarterly` for scripts/make_report.py" in got["defect"][0]


def test_prose_shorthand_naming_a_script_the_skill_lacks_is_still_a_defect(tmp_path):
    text = WEEKLY.replace("Use `scripts/make_report.py monthly`",
                          "Use `scripts/make_reports.py monthly`")
    skill = build(tmp_path / "weekly-report", {"SKILL.md": text,
                                               "scripts/make_report.py": MAKE_REPORT})
    (d,) = findings(skill)["defect"]
    assert "line 20" in d and "scripts/make_reports.py, which the skill does not have" in d


DEPLOY = dedent("""\
    #!/usr/bin/env bash
    # Deploy the static site to one environment.
    set -euo pipefail
    case "$1" in
      staging|production) echo "deploying to $1" ;;
      *) echo "usage: deploy.sh staging|production" >&2; exit 2 ;;
    esac
    """)

SITE = dedent("""\
    ---
    name: site-deploy
    description: Deploy the documentation site to staging or production with the bundled
      script. Use after a docs change is merged.
    ---
    # Deploying the site

    ```sh
    bash scripts/deploy.sh staging
    ```

    Check the preview, then `scripts/deploy.sh production` ships it to everyone.
    """)

FIT = dedent("""\
    ---
    name: curve-fit
    description: Fit a curve to a CSV of measurements with the bundled uv script and plot
      the residuals. Use for lab data.
    ---
    # Curve fitting

    ```bash
    uv run scripts/fit.py --data measurements.csv --model exp
    ```

    Tip: `scripts/fit.py --help` prints every model; pass `--model poly` for polynomials.
    """)

FIT_PY = dedent('''\
    # /// script
    # dependencies = ["numpy"]
    # ///
    """Fit a model to a CSV."""
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--model", choices=["exp", "poly", "linear"], default="linear")
    p.parse_args()
    ''')


def test_shorthand_for_a_script_given_to_bash_or_uv_in_the_blocks_fails_nothing(tmp_path):
    site = build(tmp_path / "site-deploy", {"SKILL.md": SITE, "scripts/deploy.sh": DEPLOY})
    fit = build(tmp_path / "curve-fit", {"SKILL.md": FIT, "scripts/fit.py": FIT_PY})
    assert findings(site) == {"defect": [], "warning": []}
    assert findings(fit) == {"defect": [], "warning": []}


SYNC = dedent("""\
    ---
    name: notes-sync
    description: Sync the team's meeting notes folder with the shared drive. Use when notes
      are out of date.
    ---
    # Notes sync

    Run `scripts/sync.sh --dry-run` first and read what it would change, then run
    `scripts/sync.sh` without the flag.
    """)

SYNC_SH = dedent("""\
    #!/usr/bin/env bash
    # Sync notes/ with the shared drive.
    set -euo pipefail
    if [ "${1:-}" = "--dry-run" ]; then echo "would sync notes/"; else echo "synced"; fi
    """)


def test_a_direct_run_only_prose_shows_is_a_warning_on_its_line(tmp_path):
    skill = build(tmp_path / "notes-sync", {"SKILL.md": SYNC, "scripts/sync.sh": SYNC_SH})
    got = findings(skill)
    assert got["defect"] == []
    (w,) = got["warning"]
    assert w.startswith("SKILL.md line 8: runs scripts/sync.sh directly in prose") \
        and "not executable" in w


def test_a_block_that_runs_the_script_directly_still_fails_without_the_exec_bit(tmp_path):
    text = SITE.replace("bash scripts/deploy.sh staging", "./scripts/deploy.sh staging")
    skill = build(tmp_path / "site-deploy", {"SKILL.md": text, "scripts/deploy.sh": DEPLOY})
    got = findings(skill)
    assert any("line 9: runs scripts/deploy.sh directly, but it is not executable" in d
               for d in got["defect"]), got
    # the blocks run it directly too: the prose's direct run is read the same way
    assert any("line 12: runs scripts/deploy.sh directly, but it is not executable" in d
               for d in got["defect"]), got


def test_prose_that_says_the_file_runs_as_a_program_still_needs_the_exec_bit(tmp_path):
    text = SITE.replace("then `scripts/deploy.sh production` ships it",
                        "then start it directly: `scripts/deploy.sh production`")
    skill = build(tmp_path / "site-deploy", {"SKILL.md": text, "scripts/deploy.sh": DEPLOY})
    (d,) = findings(skill)["defect"]
    assert d.startswith("SKILL.md line 12: runs scripts/deploy.sh directly, but it is not "
                        "executable")
