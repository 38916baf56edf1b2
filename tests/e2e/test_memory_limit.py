"""A case stopped at its memory limit says so (issue 44, item 4): eval.config's
``max_memory_mb`` is the case's memory budget; a command the kernel's OOM killer ended at
the attempt's memory cgroup, or whose allocation RLIMIT_DATA refused, fails the case with
"killed at the case's memory limit of N MiB" (not a skill's generic "step exited", not an
environment error from outside), and a later sweep of the same store runs it again instead
of reusing that verdict. Real sweeps, real allocations inside bubblewrap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeval.adapters.sandbox._limits import make_cgroup, remove_cgroup
from aeval.adapters.sandbox.bwrap import bwrap_problem
from tests.e2e.test_reuse_inputs import sweep, write_skill

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness"),
              pytest.mark.skipif(bwrap_problem() is not None, reason="needs bubblewrap")]

# a tile renderer that renders its tiles in parallel worker processes, each holding its tile
RENDER_PARALLEL = '''#!/usr/bin/env python3
"""Render the map's tiles, one worker process per tile, and write outputs/tiles.txt."""
import multiprocessing, pathlib, sys, time

def render(i):
    tile = b"x" * (40 << 20)  # one 40 MiB raster per tile, held while the others render
    time.sleep(1.5)

if __name__ == "__main__":
    workers = [multiprocessing.Process(target=render, args=(i,)) for i in range(int(sys.argv[1]))]
    for w in workers:
        w.start()
    for i, w in enumerate(workers):
        w.join()
        if w.exitcode != 0:
            sys.exit(f"tile {i}: worker ended with {w.exitcode}")
    pathlib.Path("outputs").mkdir(exist_ok=True)
    pathlib.Path("outputs/tiles.txt").write_text(f"{len(workers)} tiles\\n")
'''

# a report builder that loads the whole dataset into one buffer
LOAD_ALL = '''#!/usr/bin/env python3
"""Load the whole dataset into memory, then write the row count to outputs/rows.txt."""
import pathlib, sys

buffer = bytearray(int(sys.argv[1]) << 20)  # the dataset, as one buffer
pathlib.Path("outputs").mkdir(exist_ok=True)
pathlib.Path("outputs/rows.txt").write_text(f"{len(buffer)}\\n")
'''


def memory_cgroup_here() -> bool:
    cg = make_cgroup("memory", 64 << 20)
    if cg is None:
        return False
    remove_cgroup(cg)
    return True


def skill_with(mp: Path, name: str, script: str, source: str, step: str, output: str,
               memory_mb: int) -> Path:
    skill = write_skill(
        mp, name, f"Run {script} and write outputs/{output}.",
        f"Run `python3 $SKILL_DIR/scripts/{script}`.",
        {"id": "render", "prompt": f"Run the skill's {script}.",
         "expected_outcome": f"outputs/{output} is written.",
         "steps": [step], "max_memory_mb": memory_mb,
         "assertions": [{"type": "file_exists", "path": f"outputs/{output}"}]})
    (skill / "scripts").mkdir()
    (skill / "scripts" / script).write_text(source)
    return skill


def only_attempts(store: Path) -> list[dict]:
    runs = sorted((store / "runs").iterdir(), key=lambda p: p.stat().st_mtime)
    return [json.loads(a.read_text()) for a in sorted(runs[-1].rglob("attempts/*/attempt.json"))]


@pytest.mark.skipif(not memory_cgroup_here(), reason="no memory cgroup can be made here")
def test_a_case_whose_processes_together_pass_its_memory_limit_fails_saying_so(
        tmp_path, monkeypatch):
    """Three workers of 40 MiB each stay under the per-process limit of 96 MiB but not under
    the attempt's 96 MiB together: the cgroup's OOM killer ends one (a SIGKILL, which alone
    would read as a kill from outside)."""
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")
    mp, store = tmp_path / "mp", tmp_path / "store"
    skill_with(mp, "map-tiles", "render.py", RENDER_PARALLEL,
               "python3 $SKILL_DIR/scripts/render.py 3", "tiles.txt", 96)
    code, first = sweep(mp, store)
    assert first["status"] == "fail" and code == 1, first
    assert "killed at the case's memory limit of 96 MiB" in first["reason"], first["reason"]
    assert "OOM killer" in first["reason"], first["reason"]
    assert first["attempts"] == 1  # the skill's own budget: not retried as the environment's
    code, second = sweep(mp, store)
    assert second["reused_from"] is None, "a memory-limit verdict was reused"
    assert "killed at the case's memory limit of 96 MiB" in second["reason"]


def test_a_process_refused_memory_at_the_case_limit_fails_saying_so_and_is_not_reused(
        tmp_path):
    """One process asks for more than the case's 64 MiB: RLIMIT_DATA refuses it
    (``MemoryError``); the case names the limit and the refused allocation, not "exited 1"."""
    mp, store = tmp_path / "mp", tmp_path / "store"
    skill = skill_with(mp, "rows-report", "load.py", LOAD_ALL,
                       "python3 $SKILL_DIR/scripts/load.py 200", "rows.txt", 64)
    code, first = sweep(mp, store)
    assert first["status"] == "fail" and code == 1, first
    assert "killed at the case's memory limit of 64 MiB" in first["reason"], first["reason"]
    assert "MemoryError" in first["reason"], first["reason"]
    code, second = sweep(mp, store)
    assert second["reused_from"] is None, "a memory-limit verdict was reused"

    # within its budget the same skill passes: the limit, not the code, stopped it
    config = json.loads((skill / "eval.config").read_text())
    config["evals"][0]["steps"] = ["python3 $SKILL_DIR/scripts/load.py 8"]
    (skill / "eval.config").write_text(json.dumps(config))
    code, third = sweep(mp, store)
    assert code == 0 and third["status"] == "pass", third


def test_a_skill_that_fails_on_its_own_is_not_said_to_hit_the_memory_limit(tmp_path):
    """A script that exits 1 with an ordinary error keeps its own reason: the memory wording
    needs evidence (a refused allocation, an OOM kill), not just a failure."""
    mp, store = tmp_path / "mp", tmp_path / "store"
    skill_with(mp, "rows-check", "load.py",
               "#!/usr/bin/env python3\nimport sys\nsys.exit('rows.csv: no such file "
               "(memory: 12 MiB free)')\n",
               "python3 $SKILL_DIR/scripts/load.py", "rows.txt", 64)
    code, first = sweep(mp, store)
    assert first["status"] == "fail" and code == 1, first
    assert "memory limit" not in first["reason"], first["reason"]
