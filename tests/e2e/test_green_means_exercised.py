"""A green verdict means the skill was exercised and works, through `aeval` itself:

- a skill whose only runnable block is a chain of do-nothing guards is `untested`, never
  `pass`;
- a documented script committed without its executable bit fails, on SKILL.md's line;
- a dot-folder marketplace (`skills/.curated`, `skills/.system`, `.claude/skills`) is found
  by validate, run, sweep and --changed-since alike, and "nothing found" names what was not
  searched;
- under an eval.config, SKILL.md cannot drift from the script while the contract's steps
  follow it: SKILL.md's own doc test fails.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.deployments.cli.main import main

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def write(root: Path, files: dict[str, str], executable: tuple[str, ...] = ()) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(dedent(text))
        os.chmod(p, 0o755 if rel in executable else 0o644)


def run_json(store: Path) -> dict:
    (rd,) = (store / "runs").iterdir()
    return json.loads((rd / "run.json").read_text())


def cases(run: dict) -> dict[str, dict]:
    return {f"{s['name']}/{c['case_id']}": c for s in run["skills"] for c in s["cases"]}


GUARDS = {
    "skills/frontend-checks/SKILL.md": """\
        ---
        name: frontend-checks
        description: Run the project's checks before you open a pull request.
        ---
        # Frontend checks

        Run whatever the project has:

        ```bash
        if [ -f package.json ]; then npm run lint --if-present; fi
        if [ -f pnpm-lock.yaml ]; then pnpm test; fi
        if [ -f Makefile ]; then make check; fi
        ```

        Then read the output and fix what it reports.
        """,
}


def test_do_nothing_guards_are_untested_not_pass(tmp_path, capsys):
    write(tmp_path / "mp", GUARDS)
    assert main(["run", str(tmp_path / "mp"), "--out", str(tmp_path / "s")]) == 0
    (case,) = cases(run_json(tmp_path / "s")).values()
    assert case["status"] == "untested"
    assert case["reason"].startswith("nothing of the skill ran")
    out = capsys.readouterr().out
    assert "Not tested" in out and "nothing of the skill ran" in out
    assert main(["run", str(tmp_path / "mp"), "--out", str(tmp_path / "s2"),
                 "--require-tested", "-q"]) == 2


SKILL_CREATOR = {
    "skills/skill-creator/SKILL.md": """\
        ---
        name: skill-creator
        description: Create a new skill from the bundled template.
        ---
        # Skill creator

        1. Pick a name for the skill (lowercase, hyphens).
        2. Initialize it:

           ```bash
           scripts/init_skill.py my-skill --path out/skills
           ```

        3. Edit `out/skills/my-skill/SKILL.md`, then package it with
           `scripts/package_skill.py out/skills/my-skill`.
        """,
    "skills/skill-creator/scripts/init_skill.py": """\
        #!/usr/bin/env python3
        import argparse
        from pathlib import Path

        p = argparse.ArgumentParser()
        p.add_argument("name")
        p.add_argument("--path", required=True)
        a = p.parse_args()
        d = Path(a.path) / a.name
        d.mkdir(parents=True, exist_ok=True)
        (d / "SKILL.md").write_text(f"---\\nname: {a.name}\\ndescription: TODO\\n---\\n")
        print("created", d)
        """,
    "skills/skill-creator/scripts/package_skill.py": """\
        #!/usr/bin/env python3
        import sys
        print("packaged", sys.argv[1])
        """,
}


def test_a_documented_script_without_its_executable_bit_fails(tmp_path):
    mp = tmp_path / "mp"
    write(mp, SKILL_CREATOR, executable=("skills/skill-creator/scripts/package_skill.py",
                                         "skills/skill-creator/scripts/init_skill.py"))
    assert main(["run", str(mp), "--out", str(tmp_path / "ok"), "-q"]) == 0
    assert cases(run_json(tmp_path / "ok"))["skill-creator/smoke"]["status"] == "pass"
    os.chmod(mp / "skills/skill-creator/scripts/init_skill.py", 0o644)
    assert main(["run", str(mp), "--out", str(tmp_path / "bad"), "-q"]) == 1
    case = cases(run_json(tmp_path / "bad"))["skill-creator/smoke"]
    assert case["status"] == "fail"
    assert "SKILL.md line 11: runs scripts/init_skill.py directly, but it is not executable" \
           in case["reason"]


DOT_LAYOUT = {
    "README.md": "# Team skills\n",
    "skills/.curated/gh-fix-ci/SKILL.md": """\
        ---
        name: gh-fix-ci
        description: Inspect failing CI checks of a pull request.
        ---
        Use `gh pr checks <number>` and read the failing job's log.
        """,
    "skills/.system/skill-installer/SKILL.md": """\
        ---
        name: skill-installer
        description: Install skills from a list.
        ---
        ```bash
        python3 scripts/list_skills.py
        ```
        """,
    "skills/.system/skill-installer/scripts/list_skills.py": "print('gh-fix-ci')\n",
    "skills/.experimental/notebook/SKILL.md": """\
        ---
        name: notebook
        description: Keep a lab notebook in Markdown.
        ---
        Append a dated entry to `notes/<date>.md`.
        """,
    ".claude/skills/release/SKILL.md": """\
        ---
        name: release
        description: Cut a release.
        ---
        Tag with `git tag vX.Y.Z`.
        """,
    # never searched: dependencies, virtual environments, caches, aeval's store
    "node_modules/some-pkg/skills/vendored/SKILL.md": "---\nname: vendored\ndescription: d\n---\n",
    ".venv/lib/python3.11/site-packages/pkg/SKILL.md": "---\nname: venv\ndescription: d\n---\n",
    ".aeval/evals/release.config": '{"evals": [{"id": "x", "prompt": "p", '
                                   '"expected_outcome": "o"}]}',
}
DOT_SKILLS = {"gh-fix-ci", "skill-installer", "notebook", "release"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, "GIT_AUTHOR_NAME": "t",
                                          "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                                          "GIT_COMMITTER_EMAIL": "t@x"}).stdout


def test_a_dot_folder_marketplace_is_found_by_every_way_in(tmp_path, capsys):
    mp = tmp_path / "mp"
    write(mp, DOT_LAYOUT)
    assert main(["validate", str(mp)]) == 0
    out = capsys.readouterr().out
    assert {name for name in DOT_SKILLS if f"({name}:" in out} == DOT_SKILLS
    assert "vendored" not in out and "venv:" not in out

    assert main(["run", str(mp), "--out", str(tmp_path / "run"), "-q"]) == 0
    assert {s["name"] for s in run_json(tmp_path / "run")["skills"]} == DOT_SKILLS

    assert main(["sweep", str(mp), "--out", str(tmp_path / "sweep"), "-q"]) == 0
    assert {s["name"] for s in run_json(tmp_path / "sweep")["skills"]} == DOT_SKILLS

    git(mp, "init", "-q", "-b", "main")
    git(mp, "add", "-A")
    git(mp, "commit", "-qm", "skills")
    for rel in ("skills/.curated/gh-fix-ci/SKILL.md", ".claude/skills/release/SKILL.md",
                "node_modules/some-pkg/skills/vendored/SKILL.md"):
        (mp / rel).write_text((mp / rel).read_text() + "\nMore.\n")
    git(mp, "commit", "-qam", "touch")
    capsys.readouterr()
    assert main(["run", str(mp), "--changed-since", "HEAD~1", "--out",
                 str(tmp_path / "changed"), "-q"]) == 0
    assert {s["name"] for s in run_json(tmp_path / "changed")["skills"]} == {
        "gh-fix-ci", "release"}


def test_nothing_found_names_what_was_not_searched(tmp_path, capsys):
    write(tmp_path / "mp", {"node_modules/x/SKILL.md": "---\nname: x\ndescription: d\n---\n",
                            "docs/README.md": "# docs\n"})
    assert main(["validate", str(tmp_path / "mp")]) == 2
    err = capsys.readouterr().err
    assert "no SKILL.md found (not searched: node_modules)" in err
    assert main(["run", str(tmp_path / "mp"), "--out", str(tmp_path / "s")]) == 2
    assert "not searched: node_modules" in capsys.readouterr().err


DRIFT = {
    "skills/csv-stats/SKILL.md": """\
        ---
        name: csv-stats
        description: Summary statistics of a CSV file's value column.
        ---
        # CSV stats

        ```bash
        python3 scripts/stats.py summary fixtures/data.csv
        ```
        """,
    "skills/csv-stats/eval.config": """\
        {"evals": [{
          "id": "summary",
          "prompt": "Summarize fixtures/data.csv with the skill.",
          "expected_outcome": "n and mean printed.",
          "files": ["fixtures/"],
          "steps": ["python3 $SKILL_DIR/scripts/stats.py summary fixtures/data.csv"],
          "assertions": [{"type": "transcript_regex", "pattern": "n=3 mean=2.33"}]
        }]}
        """,
    "skills/csv-stats/fixtures/data.csv": "value\n1\n2\n4\n",
    "skills/csv-stats/scripts/stats.py": """\
        import csv
        import statistics
        import sys

        action, path = sys.argv[1], sys.argv[2]
        values = [float(r["value"]) for r in csv.DictReader(open(path))]
        if action == "summary":
            print(f"n={len(values)} mean={statistics.mean(values):.2f}")
        else:
            sys.exit(f"unknown action {action}")
        """,
}


def test_skill_md_cannot_drift_from_a_contract_that_follows_the_script(tmp_path):
    mp = tmp_path / "mp"
    write(mp, DRIFT)
    assert main(["run", str(mp), "--out", str(tmp_path / "ok"), "-q"]) == 0
    found = cases(run_json(tmp_path / "ok"))
    assert found["csv-stats/summary"]["status"] == "pass"
    assert found["csv-stats/skill-md"]["status"] == "pass"
    # the script and the contract's steps rename the action; SKILL.md still says `summary`
    script = mp / "skills/csv-stats/scripts/stats.py"
    script.write_text(script.read_text().replace('"summary"', '"describe"'))
    config = mp / "skills/csv-stats/eval.config"
    config.write_text(config.read_text().replace("stats.py summary", "stats.py describe"))
    assert main(["run", str(mp), "--out", str(tmp_path / "drift"), "-q"]) == 1
    found = cases(run_json(tmp_path / "drift"))
    assert found["csv-stats/summary"]["status"] == "pass"
    assert found["csv-stats/skill-md"]["status"] == "fail"
    assert "SKILL.md line 8" in found["csv-stats/skill-md"]["reason"]
    assert "'summary'" in found["csv-stats/skill-md"]["reason"]
