"""A zero-key run proposes the fixes the static check proves (issue 46, item 4): `aeval run`
with the literal runtime over a marketplace with a renamed script, an option the parser
spells otherwise and a dropped executable bit writes each as an LV1 `static` suggestion with
its exact replacement; report.html shows it beside the evidence, and posting the run on a
(loopback) merge request offers it as a suggestion, the chmod as a command."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.deployments.cli.main import main
from aeval.deployments.cli.post import main as post_main
from aeval.run.layout import RunLayout
from tests.fakes import FakeGitLab, diff_from_texts

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

TOKEN = "glpat-fake-0123456789abcdef"

COUNT_PY = dedent("""\
    #!/usr/bin/env python3
    \"\"\"Count the words of text files; print them, or write them as JSON.\"\"\"
    import argparse
    import json

    ap = argparse.ArgumentParser(description="Count words")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", help="write the counts here as JSON")
    ap.add_argument("--lower", action="store_true", help="count case-insensitively")
    args = ap.parse_args()
    counts = {f: len(open(f).read().split()) for f in args.files}
    if args.out:
        json.dump(counts, open(args.out, "w"))
    print(counts)
    """)

WORD_COUNT = dedent("""\
    ---
    name: word-count
    description: Count the words of text files and save the counts as JSON. Use for word statistics.
    ---
    # Word count

    Count the words of the user's files and keep the counts:

    ```bash
    python3 scripts/count.py notes.txt todo.txt --output counts.json
    ```

    The counts are printed as well.
    """)

CSV_SUMMARY = dedent("""\
    ---
    name: csv-summary
    description: Summarize a CSV file (rows, columns, numeric ranges). Use when asked about a CSV.
    ---
    # CSV summary

    1. Summarize the file:

       ```bash
       python3 scripts/summarise.py data.csv
       ```

    2. Preview its first rows:

       ```bash
       ./scripts/preview.sh data.csv
       ```
    """)


def skill(mp: Path, name: str, doc: str, files: dict[str, tuple[str, int]]) -> Path:
    root = mp / "skills" / name
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text(doc)
    for rel, (text, mode) in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        os.chmod(root / rel, mode)
    return root


def line_no(root: Path, needle: str) -> int:
    return next(i for i, ln in enumerate((root / "SKILL.md").read_text().splitlines(), 1)
                if needle in ln)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    mp = tmp_path_factory.mktemp("market")
    wc = skill(mp, "word-count", WORD_COUNT, {"scripts/count.py": (COUNT_PY, 0o755)})
    cs = skill(mp, "csv-summary", CSV_SUMMARY, {
        "scripts/summarize.py": ("import csv, sys\nrows = list(csv.reader(open(sys.argv[1])))"
                                 "\nprint(len(rows), 'rows')\n", 0o644),
        "scripts/preview.sh": ("#!/bin/sh\nhead -5 \"$1\"\n", 0o644)})
    store = tmp_path_factory.mktemp("store")
    assert main(["run", str(mp), "--runtime", "literal", "--out", str(store), "-q"]) == 1
    (run_dir,) = (store / "runs").iterdir()
    return mp, wc, cs, run_dir


def suggestions(run_dir: Path, name: str) -> tuple[list[dict], str]:
    run = json.loads((run_dir / "run.json").read_text())
    (sk,) = [s for s in run["skills"] if s["name"] == name]
    path = RunLayout(run_dir).skill_dir(sk["key"], "literal") / "fix_suggestions.json"
    return json.loads(path.read_text())["suggestions"], sk["cases"][0]["case_id"]


def test_fix_suggestions_hold_the_static_fixes(finished):
    _, wc, cs, run_dir = finished
    (flag,), case = suggestions(run_dir, "word-count")
    at = line_no(wc, "--output counts.json")
    assert flag == {
        "level": "LV1", "grounded_in": f"{case}:S0", "path": "SKILL.md", "start_line": at,
        "end_line": at,
        "original": "python3 scripts/count.py notes.txt todo.txt --output counts.json",
        "replacement": "python3 scripts/count.py notes.txt todo.txt --out counts.json",
        "rationale": flag["rationale"], "validated": False, "source": "static",
        "command": None}
    assert "--out is the only option of its parser" in flag["rationale"]

    fixes, case = suggestions(run_dir, "csv-summary")
    by_line = {s["start_line"]: s for s in fixes}
    renamed = by_line[line_no(cs, "summarise.py")]
    assert (renamed["original"], renamed["replacement"]) == (
        "   python3 scripts/summarise.py data.csv", "   python3 scripts/summarize.py data.csv")
    chmod = by_line[line_no(cs, "preview.sh")]
    assert chmod["command"] == "chmod +x scripts/preview.sh"
    assert chmod["original"] == chmod["replacement"] == "   ./scripts/preview.sh data.csv"
    assert {s["source"] for s in fixes} == {"static"} and len(fixes) == 2
    assert all(s["grounded_in"] == f"{case}:S0" and not s["validated"] for s in fixes)


def test_summary_md_lists_the_fixes(finished):
    _, _, _, run_dir = finished
    run = json.loads((run_dir / "run.json").read_text())
    (sk,) = [s for s in run["skills"] if s["name"] == "csv-summary"]
    summary = (RunLayout(run_dir).skill_dir(sk["key"], "literal") / "summary.md").read_text()
    fixes = summary.split("<summary>Fixes (2)</summary>", 1)[1]
    assert "  chmod +x scripts/preview.sh" in fixes
    assert "  +   python3 scripts/summarize.py data.csv" in fixes


def test_report_shows_each_fix_beside_the_evidence(finished):
    _, _, _, run_dir = finished
    html = (run_dir / "report.html").read_text()
    for skill_name in ("word-count", "csv-summary"):
        section = html.split(f"<h2>{skill_name} / ", 1)[1].split("<h2>", 1)[0]
        assert "<b>S0</b>" in section and '<div class="fix">' in section
        # the fix follows the evidence it answers
        assert section.index("<b>S0</b>") < section.index('<div class="fix">')
    assert "+python3 scripts/count.py notes.txt todo.txt --out counts.json" in html
    assert "-   python3 scripts/summarise.py data.csv" in html
    assert "$ chmod +x scripts/preview.sh" in html


def test_posted_on_a_merge_request_as_suggestions_and_a_command(finished, monkeypatch):
    mp, wc, cs, run_dir = finished
    diffs = [{"old_path": f"skills/{r.name}/SKILL.md", "new_path": f"skills/{r.name}/SKILL.md",
              "new_file": True, "diff": diff_from_texts("", (r / "SKILL.md").read_text())}
             for r in (wc, cs)]
    fake = FakeGitLab(token=TOKEN, diffs=diffs)
    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", TOKEN)
    for var in ("CI_SERVER_URL", "CI_PROJECT_ID", "CI_MERGE_REQUEST_IID", "AEVAL_REPORT_URL"):
        monkeypatch.delenv(var, raising=False)
    with fake:
        assert post_main(["post", str(run_dir), "--mr", str(fake.mr_iid), "--project",
                          str(fake.project_id), "--gitlab-url", fake.url,
                          "--repo-root", str(mp)]) == 0
    inline = {(d["notes"][0]["position"]["new_path"], d["notes"][0]["position"]["new_line"]):
              d["notes"][0]["body"] for d in fake.discussions if not d["individual_note"]}
    flag = inline[("skills/word-count/SKILL.md", line_no(wc, "--output counts.json"))]
    block = re.search(r"^```suggestion:-0\+0\n(.*?)\n```$", flag, re.M | re.S)
    assert block and block.group(1) == \
        "python3 scripts/count.py notes.txt todo.txt --out counts.json"
    renamed = inline[("skills/csv-summary/SKILL.md", line_no(cs, "summarise.py"))]
    assert "python3 scripts/summarize.py data.csv" in renamed
    chmod = inline[("skills/csv-summary/SKILL.md", line_no(cs, "preview.sh"))]
    assert "```sh\nchmod +x scripts/preview.sh\n```" in chmod
    assert "`skills/csv-summary`" in chmod and "```suggestion" not in chmod
    notes = {n["body"].split("\n", 1)[0]: n["body"] for n in fake.notes}
    (summary,) = [b for k, b in notes.items() if "skill=csv-summary" in k]
    evidence = summary.split("### What failed, with evidence", 1)[1]
    assert "S0" in evidence and "Fix (LV1, static)" in evidence
    assert "chmod +x scripts/preview.sh" in evidence
    assert "+   python3 scripts/summarize.py data.csv" in evidence
