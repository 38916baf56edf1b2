"""The readers of a skill's text and the shell that runs it, through a real
`aeval run` and `aeval validate` (literal runtime, real bubblewrap, real Prefect):

- a doc block longer than Linux's 128 KiB limit on one argument (a heredoc embedding a
  sales table) whose script raises is the skill's `fail`, exit 1, not an environment
  `error` (the command used to be one `bash -c` argument: E2BIG);
- a script of the skill that imports a misspelled module of the skill itself (``import
  wordcountr`` beside ``wordcounter.py``) is a defect naming both names, not `needs X`;
- a SKILL.md line of 3,000 backticks is validated in seconds (the inline-code pattern
  backtracked: 800 backticks took 9 s), and a SKILL.md over the 1 MiB bound with 10,000
  blocks is `invalid` at once, with one line naming the file and the limit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from textwrap import dedent

import pytest

pytestmark = pytest.mark.e2e

REGIONS = ("north", "south", "east", "west", "centre")


def sales_table(rows: int) -> str:
    """A CSV the size of a real export; one row's units were never filled in."""
    lines = ["date,region,sku,units,unit_price"]
    for i in range(rows):
        units = "n/a" if i == rows - 7 else str(3 + i % 40)
        lines.append(f"2026-{1 + i % 12:02d}-{1 + i % 28:02d},{REGIONS[i % 5]},"
                     f"SKU-{10000 + i % 977},{units},{4.5 + i % 13:.2f}")
    return "\n".join(lines)


SUMMARIZE = dedent('''\
    """Units and revenue per region from a sales CSV on stdin."""
    import argparse
    import csv
    import sys


    def main() -> None:
        parser = argparse.ArgumentParser(description=__doc__)
        parser.add_argument("--by", choices=["region", "sku"], default="region")
        args = parser.parse_args()
        totals: dict[str, float] = {}
        for row in csv.DictReader(sys.stdin):
            units = int(row["units"])
            totals[row[args.by]] = totals.get(row[args.by], 0.0) + units * float(row["unit_price"])
        for key, revenue in sorted(totals.items()):
            print(f"{key}\\t{revenue:.2f}")


    if __name__ == "__main__":
        main()
    ''')

WORDCOUNTER = dedent('''\
    """Word counts of a text."""
    import collections
    import re


    def counts(text: str) -> collections.Counter:
        return collections.Counter(re.findall(r"[a-z']+", text.lower()))
    ''')

STATS = dedent('''\
    """The most common words of a text file."""
    import argparse

    import wordcountr


    def main() -> None:
        parser = argparse.ArgumentParser(description=__doc__)
        parser.add_argument("path")
        parser.add_argument("--top", type=int, default=10)
        args = parser.parse_args()
        with open(args.path, encoding="utf-8") as fh:
            for word, n in wordcountr.counts(fh.read()).most_common(args.top):
                print(f"{n:6d} {word}")


    if __name__ == "__main__":
        main()
    ''')


def sales_skill(root: Path) -> Path:
    d = root / "sales-summary"
    (d / "scripts").mkdir(parents=True)
    (d / "scripts" / "summarize.py").write_text(SUMMARIZE)
    table = sales_table(6000)
    assert len(table) > 200 * 1024  # well past MAX_ARG_STRLEN (128 KiB)
    (d / "SKILL.md").write_text(
        "---\nname: sales-summary\ndescription: Summarize a sales export per region.\n---\n"
        "# Sales summary\n\nPipe the export into the summarizer; this quarter's export, "
        "inline so the example is self-contained:\n\n"
        f"```bash\npython3 scripts/summarize.py --by region <<'CSV'\n{table}\nCSV\n```\n")
    return d


def word_skill(root: Path) -> Path:
    d = root / "word-stats"
    (d / "scripts").mkdir(parents=True)
    (d / "references").mkdir()
    (d / "scripts" / "wordcounter.py").write_text(WORDCOUNTER)
    (d / "scripts" / "stats.py").write_text(STATS)
    (d / "references" / "sample.txt").write_text(
        "It was the best of times, it was the worst of times.\n")
    (d / "SKILL.md").write_text(dedent("""\
        ---
        name: word-stats
        description: The most common words of a text file.
        ---
        # Word stats

        ```bash
        python3 scripts/stats.py references/sample.txt --top 5
        ```
        """))
    return d


def aeval(*args: str, tmp_path: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), COLUMNS="200",
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    exe = os.path.join(os.path.dirname(sys.executable), "aeval")
    return subprocess.run([exe, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def cases(run_dir: Path) -> dict[str, ET.Element]:
    root = ET.fromstring((run_dir / "junit.xml").read_bytes())
    return {tc.get("classname", "") + "/" + tc.get("name", ""): tc
            for tc in root.iter("testcase")}


def one_run(tmp_path: Path, skill) -> tuple[subprocess.CompletedProcess, str]:
    skills = tmp_path / "skills"
    skill(skills)
    r = aeval("run", str(skills), "--out", str(tmp_path / "store"), tmp_path=tmp_path)
    (run_dir,) = (tmp_path / "store" / "runs").iterdir()
    return r, (run_dir / "junit.xml").read_text()


def test_a_doc_block_past_128_kib_whose_script_raises_is_the_skills_fail(tmp_path):
    r, junit = one_run(tmp_path, sales_skill)
    console = r.stdout + r.stderr
    assert r.returncode == 1, console
    assert "E2BIG" not in console and "Argument list too long" not in console, console
    assert "<failure" in junit and "<error" not in junit, junit[-3000:]
    assert "ValueError: invalid literal for int() with base 10: 'n/a'" in junit, junit[-3000:]
    assert "scripts/summarize.py" in junit


def test_a_misspelled_import_of_the_skills_own_module_is_a_defect(tmp_path):
    r, junit = one_run(tmp_path, word_skill)
    console = r.stdout + r.stderr
    assert r.returncode == 1, console
    assert "needs wordcountr" not in console + junit
    assert "<failure" in junit, junit[-3000:]
    assert "wordcountr" in junit and "wordcounter" in junit and "scripts/stats.py:4" in junit


def validate_time(tmp_path: Path, name: str,
                  body: str) -> tuple[float, subprocess.CompletedProcess]:
    d = tmp_path / name / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: A skill.\n---\n{body}")
    start = time.monotonic()
    r = aeval("validate", str(d), tmp_path=tmp_path, timeout=300)
    return time.monotonic() - start, r


def test_validate_reads_a_line_of_3000_backticks_in_linear_time(tmp_path):
    # `aeval validate` itself costs about a second (imports): compare against a 300-tick line
    small, r1 = validate_time(tmp_path, "ticks-small", "# Ticks\n\n" + "`" * 300 + "\n")
    large, r2 = validate_time(tmp_path, "ticks-large", "# Ticks\n\n" + "`" * 3000 + "\n")
    assert r1.returncode == r2.returncode == 0, r2.stdout + r2.stderr
    assert large < 3 * small + 5, (small, large)


def test_a_multi_mb_skill_md_with_10000_blocks_is_invalid_at_once(tmp_path):
    block = ("Summarize one region:\n\n```bash\npython3 scripts/summarize.py --by region "
             "< data/region-{i}.csv > out/region-{i}.tsv\n```\n\n" + "Notes. " * 40 + "\n\n")
    body = "".join(block.format(i=i) for i in range(10_000))
    assert len(body) > 3_000_000
    took, r = validate_time(tmp_path, "big-skill", body)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and took < 30, (took, out)
    line = next(ln for ln in out.splitlines() if "1,048,576" in ln)
    assert "big-skill/SKILL.md" in line and "1 MiB" in line, out
