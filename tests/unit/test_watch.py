"""The watch on a skill copy (real inotify): uses (opens, reads) by any process are recorded
once per file, apart from changes; aeval's own reads inside `quiet_uses` are not uses."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from aeval.adapters.sandbox.watch import CHANGES, INotify, SkillWatch, quiet_uses
from aeval.isolation.workspace import manifest

pytestmark = pytest.mark.skipif(INotify is None, reason="inotify is not available here")


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    root = tmp_path / "csv-stats"
    (root / "scripts").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: csv-stats\ndescription: Stats.\n---\n")
    (root / "scripts" / "stats.py").write_text("print('rows: 5')\n")
    (root / "reference.md").write_text("columns\n")
    return root


def settle(watch: SkillWatch) -> list:
    time.sleep(0.3)
    return watch.stop()


def test_opens_by_other_processes_are_uses_not_changes(skill):
    watch = SkillWatch(skill).start()
    out = subprocess.run(["python3", str(skill / "scripts" / "stats.py")], capture_output=True,
                         text=True, check=True)
    for _ in range(3):
        (skill / "reference.md").read_text()
    touches = settle(watch)
    assert out.stdout == "rows: 5\n"
    seen = [(t.path, t.what) for t in touches]
    assert ("scripts/stats.py", "opened") in seen  # the interpreter opened the script
    assert seen.count(("reference.md", "opened")) == 1  # once per file, however many reads
    assert not [t for t in touches if t.what in CHANGES]
    assert not [t for t in touches if t.path in ("scripts", ".")]  # folders listed: not uses


def test_quiet_uses_hides_aevals_own_reads_but_not_changes(skill):
    watch = SkillWatch(skill).start()
    with quiet_uses(skill):
        manifest(skill)  # hashes every file
        (skill / "reference.md").write_text("changed\n")
    (skill / "SKILL.md").read_text()
    touches = settle(watch)
    assert [(t.path, t.what) for t in touches if t.what not in CHANGES] == [
        ("SKILL.md", "opened"), ("SKILL.md", "accessed")]
    assert ("reference.md", "written") in [(t.path, t.what) for t in touches]
