"""The doc test's recall on realistic skills, with real processes: a failure is discounted
only when the block depends on one that did not run cleanly (a file it would have made, a
variable it sets or exports, a folder it moved to), and the skill's own file that is
missing, not executable or rejecting its documented arguments fails whatever came before."""

from __future__ import annotations

import os
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.events import MessageEvent
from tests.integration.test_doc_tests import build, doc_test

STATS_PY = dedent("""\
    import csv
    import statistics
    import sys

    def column(path):
        with open(path) as fh:
            return [float(r["value"]) for r in csv.DictReader(fh)]

    action, path = sys.argv[1], sys.argv[2]
    if action == "summary":
        values = column(path)
        print(f"n={len(values)} mean={statistics.mean(values):.2f}")
    elif action == "median":
        print(statistics.median(column(path)))
    else:
        sys.exit(f"unknown action {action}")
    """)

SKILLS: dict[str, dict[str, str]] = {
    # The README-style skill: install (skipped), a placeholder block, a tool the reader
    # installs (missing here), then the planted block, which depends on none of them.
    "csv-stats": {
        "SKILL.md": """\
            ---
            name: csv-stats
            description: Summary statistics for a CSV column named value.
            ---
            # CSV stats

            ```bash
            pip install csvkit
            ```

            Inspect your file first:

            ```bash
            csvlook <your-file.csv> | head
            ```

            ```bash
            xsv-aeval-absent headers data.csv
            ```

            Then summarize the bundled sample:

            ```bash
            python3 scripts/stats.py summary data.csv
            ```
            """,
        "data.csv": "value\n1\n2\n4\n",
        "scripts/stats.py": STATS_PY,
    },
}


@pytest.fixture
def market(tmp_path) -> Path:
    root = tmp_path / "market"
    build(root, SKILLS)
    return root


def skill_md(market: Path, name: str = "csv-stats") -> Path:
    return market / "skills" / name / "SKILL.md"


def notes(events) -> list[str]:
    return [e.text for e in events if isinstance(e, MessageEvent) and e.role == "system"]


def test_the_unplanted_skill_has_no_defect(market, tmp_path):
    result, _ = doc_test(market, tmp_path, "csv-stats")
    assert result.status == "untested" and result.final_text == "needs xsv-aeval-absent"


def test_a_renamed_script_after_skipped_and_missing_tool_blocks_fails(market, tmp_path):
    scripts = market / "skills" / "csv-stats" / "scripts"
    (scripts / "stats.py").rename(scripts / "csv_stats.py")
    result, _ = doc_test(market, tmp_path, "csv-stats")
    assert result.status == "failed"
    assert result.final_text.splitlines()[0] == (
        "SKILL.md line 24: SKILL.md runs scripts/stats.py, which the skill does not have")


def test_a_plain_rejection_of_the_documented_action_fails(market, tmp_path):
    md = skill_md(market)
    md.write_text(md.read_text().replace("stats.py summary data.csv", "stats.py mean data.csv"))
    result, _ = doc_test(market, tmp_path, "csv-stats")
    assert result.status == "failed"
    assert "SKILL.md line 24: the skill's scripts/stats.py rejects the documented 'mean': " \
           "unknown action mean" in result.final_text


def test_a_rejection_that_names_the_action_fails_even_without_the_readers_input(market,
                                                                                tmp_path):
    md = skill_md(market)
    md.write_text(md.read_text().replace("stats.py summary data.csv",
                                         "stats.py mean survey.csv"))
    result, _ = doc_test(market, tmp_path, "csv-stats")
    assert result.status == "failed" and "rejects the documented 'mean'" in result.final_text


def test_a_script_failing_on_the_readers_missing_input_is_not_a_defect(market, tmp_path):
    md = skill_md(market)
    md.write_text(md.read_text().replace("stats.py summary data.csv",
                                         "stats.py median survey.csv"))
    result, events = doc_test(market, tmp_path, "csv-stats")
    assert result.status == "untested"
    assert any("FileNotFoundError" in n and "inconclusive" in n for n in notes(events))


def test_a_non_executable_documented_script_fails(tmp_path):
    root = tmp_path / "market"
    build(root, {"skill-creator": {
        "SKILL.md": """\
            ---
            name: skill-creator
            description: Create a new skill folder from the template.
            ---
            Run the initializer with the name of the new skill:

            ```bash
            scripts/init_skill.py my-skill --path out/skills
            ```
            """,
        "scripts/init_skill.py": "#!/usr/bin/env python3\nimport sys\nprint(sys.argv)\n",
    }})
    os.chmod(root / "skills" / "skill-creator" / "scripts" / "init_skill.py", 0o644)
    result, _ = doc_test(root, tmp_path, "skill-creator")
    assert result.status == "failed"
    assert result.final_text.splitlines()[0] == (
        "SKILL.md line 8: SKILL.md runs scripts/init_skill.py directly, but it is not "
        "executable (mode 644)")


ETL = {
    "SKILL.md": """\
        ---
        name: etl
        description: Load a CSV export into a report.
        ---
        1. Download your export (needs credentials):

           ```bash
           curl -fsS -o export.csv "https://reports.example.com/export?token=$REPORTS_TOKEN"
           ```

        2. Set where reports go:

           ```bash
           export REPORT_DIR={output_dir}
           ```

        3. Move into your project:

           ```bash
           cd <project>
           ```

        4. Build the report:

           ```bash
           python3 scripts/report.py export.csv
           ```
        """,
    "scripts/report.py": dedent("""\
        import csv
        import os
        import sys

        path = sys.argv[1]
        rows = list(csv.DictReader(open(path))) if os.path.exists(path) else [{}]
        print(sum(float(r["value"]) for r in rows))
        """),
}


def test_a_failure_that_depends_on_a_block_that_did_not_run_is_not_evidence(tmp_path):
    root = tmp_path / "market"
    build(root, {"etl": ETL})
    result, events = doc_test(root, tmp_path, "etl")
    assert result.status == "untested"
    (discounted,) = [n for n in notes(events) if "not_evidence" in n]
    assert "may depend on line 8 (inconclusive: it would have made export.csv)" in discounted


def test_the_skills_own_missing_file_fails_whatever_came_before(tmp_path):
    root = tmp_path / "market"
    build(root, {"etl": ETL})
    (root / "skills" / "etl" / "scripts" / "report.py").rename(
        root / "skills" / "etl" / "scripts" / "build_report.py")
    result, _ = doc_test(root, tmp_path, "etl")
    assert result.status == "failed"
    assert result.final_text.splitlines()[0] == (
        "SKILL.md line 26: SKILL.md runs scripts/report.py, which the skill does not have")


def test_reasons_that_are_true(tmp_path):
    """`No module named X` is `needs X`; a block inside a list item is read; two identical
    blocks are reported at their own lines; a tool shown only as what not to do is no need."""
    root = tmp_path / "market"
    build(root, {"docx": {
        "SKILL.md": """\
            ---
            name: docx
            description: Convert Word files to Markdown.
            ---
            1. Convert with markitdown:

                ```bash
                python3 -m markitdown_aeval_absent reference/sample.docx
                ```

            2. Check the result the same way:

                ```bash
                python3 -m markitdown_aeval_absent reference/sample.docx
                ```

            Don't use pandoc for this, it drops the tables:

            ```bash
            pandoc-aeval-absent reference/sample.docx -o out.md
            ```
            """,
        "reference/sample.docx": "PK",
    }})
    result, events = doc_test(root, tmp_path, "docx")
    assert result.status == "untested" and result.final_text == "needs markitdown_aeval_absent"
    lines = [n.split(":")[0] for n in notes(events) if "missing_tool" in n]
    assert lines == ["SKILL.md line 8", "SKILL.md line 14"]
    assert any("line 20: block skipped, an example of what not to do" in n
               for n in notes(events))


def test_a_skills_script_refused_for_want_of_network_needs_the_network(tmp_path):
    root = tmp_path / "market"
    build(root, {"weather": {
        "SKILL.md": """\
            ---
            name: weather
            description: Current weather for a city.
            ---
            ```bash
            python3 scripts/weather.py Berlin
            ```
            """,
        "scripts/weather.py": "import sys\nsys.exit('error: connection refused by "
                              "api.weather.example')\n",
    }})
    result, _events = doc_test(root, tmp_path, "weather")
    assert result.status == "untested"
    assert result.final_text == "needs the network (scripts/weather.py says \"error: " \
                                "connection refused by api.weather.example\")", result.final_text
