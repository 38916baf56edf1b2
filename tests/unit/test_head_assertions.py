"""The head of a comparison with its base reuses the base run's assertions.json (both versions
held to the same contract and writer assertions), with its own structural assertions and the
case's relative budgets against the base's attempt. Planned and written through aeval's own
examine / plan_cases / write_assertions_file, on two versions of a real-looking skill."""

from __future__ import annotations

import json
from pathlib import Path

from aeval.artifacts import AssertionsFile
from aeval.artifacts.case import Efficiency
from aeval.run.plan import RunSettings
from aeval.tasks.case.assertions import write_assertions_file
from aeval.tasks.run.cases import plan_cases
from aeval.tasks.run.examine import examine

CASE = {"id": "weekly", "prompt": "Summarize this week's standup notes into outputs/week.md.",
        "expected_outcome": "outputs/week.md lists the decisions and the owners.",
        "files": ["fixtures/notes.txt"],
        "assertions": [{"type": "file_contains", "path": "outputs/week.md",
                        "pattern": "## Decisions"}],
        "max_commands": 5, "max_vs_base": {"commands": 1.5, "wall_s": 1.2}}
# an agent's case (no steps): the base documents nothing runnable, the head documents the
# command an agent would run
BASE_MD = """---
name: standup-digest
description: Turn a week of standup notes into a digest of decisions and owners.
---
# Standup digest

Read the notes, then write the decisions and who owns each one.
"""
HEAD_MD = BASE_MD + """
```bash
python3 scripts/digest.py fixtures/notes.txt --out outputs/week.md
```
"""


def version(root: Path, skill_md: str) -> Path:
    d = root / "standup-digest"
    (d / "scripts").mkdir(parents=True)
    (d / "fixtures").mkdir()
    (d / "SKILL.md").write_text(skill_md)
    (d / "scripts" / "digest.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('notes')\n"
        "p.add_argument('--out', required=True)\np.parse_args()\n")
    (d / "fixtures" / "notes.txt").write_text("mon: ship friday (ana)\n")
    (d / "eval.config").write_text(json.dumps({"evals": [CASE]}))
    return d


def plan(root: Path, skill_md: str, **kw):
    ex = examine(version(root, skill_md))
    ex = ex.model_copy(update={"key": ex.name})
    run = RunSettings(run_id=root.name, run_dir=root / "run", workspace_root=root / "ws")
    (p,) = [p for p in plan_cases([ex], run, ["builtin"], 1, **kw) if not p.supplementary]
    return p, ex.root


def test_the_head_reuses_the_bases_assertions_with_its_own_structural_ones(tmp_path):
    base, _ = plan(tmp_path / "base", BASE_MD)
    base.case_dir.mkdir(parents=True)
    written = write_assertions_file(base)
    ids = [a.id for a in written.assertions]
    assert "S2" not in ids  # the base documents no command
    assert ids[:2] == ["A1", "B1"]

    cost = Efficiency(tool_calls=2, commands=2, wall_s=4.0)
    head_root = (tmp_path / "head" / "standup-digest").resolve()
    key = f"{head_root}/weekly#None"
    head, _ = plan(tmp_path / "head", HEAD_MD, recordings={key: str(base.case_dir)},
                   base_costs={key: cost}, from_base=True)
    assert head.assertions_from_base and head.base_cost == cost
    head.case_dir.mkdir(parents=True)
    doc = write_assertions_file(head)
    got = [(a.id, a.text) for a in doc.assertions]
    # the base's contract and absolute budget, then the relative budgets with the base's
    # figures, then the head's own structural assertions: S2 for the command it documents
    assert got[:4] == [
        ("A1", written.assertions[0].text), ("B1", "at most 5 commands"),
        ("B2", "at most 3 commands (1.5x the base version's 2 on this case)"),
        ("B3", "at most 5 s of wall time (1.2x the base version's 4 on this case)")]
    assert [i for i, _ in got[4:]] == ["S0", "S1", "S2"]
    assert doc.sha256 == AssertionsFile.digest(doc.assertions) != written.sha256
    # the base's file is untouched
    again = AssertionsFile.model_validate_json(base.files.assertions.read_text())
    assert again == written


def test_recordings_alone_are_reused_verbatim(tmp_path):
    """A regrade's recordings (not the base's) are the assertions fixed long ago: verbatim."""
    first, _ = plan(tmp_path / "first", BASE_MD)
    first.case_dir.mkdir(parents=True)
    written = write_assertions_file(first)
    again, _ = plan(tmp_path / "again", HEAD_MD,
                    recordings={"standup-digest/weekly": str(first.case_dir)})
    again.case_dir.mkdir(parents=True)
    assert not again.assertions_from_base
    assert write_assertions_file(again) == written
