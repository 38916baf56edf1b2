"""The copy of a skill walks folders with its own stack, not Python's: a vendored package
tree just inside the depth bound copies whole even when the copy is started from a call stack
that is already deep (a Prefect task thread, a flow inside a flow), and a tree past the bound
is refused with one problem, not a RecursionError."""

from __future__ import annotations

import sys
from pathlib import Path

from aeval.isolation.copying import copy_entry
from aeval.isolation.tree import MAX_DEPTH


def _vendored(skill: Path, levels: int) -> Path:
    """A skill with its own vendored dependency nested ``levels`` folders below lib/."""
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: geo-tiles\ndescription: Tile GeoJSON.\n---\n"
                                    "Run `python3 scripts/tile.py in.geojson`.\n")
    (skill / "scripts" / "tile.py").write_text("import sys\nprint(sys.argv[1])\n")
    deep = skill.joinpath("lib", *["pkg"] * (levels - 1))
    deep.mkdir(parents=True)
    (deep / "helper.py").write_text("def tile(z):\n    return 2 ** z\n")
    deep.chmod(0o750)
    return deep


def _with_frames_used(spare: int, fn):
    """Call ``fn`` with all but ``spare`` frames of the recursion limit already in use."""
    def down(n):
        return fn() if n <= 0 else down(n - 1)
    here = len(_frames())
    return down(sys.getrecursionlimit() - spare - here)


def _frames():
    f, out = sys._getframe(), []
    while f:
        out.append(f)
        f = f.f_back
    return out


def test_a_tree_at_the_depth_bound_copies_whole_from_a_deep_call_stack(tmp_path):
    skill, dest = tmp_path / "geo-tiles", tmp_path / "attempt" / "skill"
    deep = _vendored(skill, MAX_DEPTH - 2)  # lib/pkg/... just inside the bound
    dest.parent.mkdir()
    problems = _with_frames_used(60, lambda: copy_entry(skill, ".", dest, tmp_path / "attempt"))
    assert problems == []
    copied = dest / deep.relative_to(skill)
    assert (copied / "helper.py").read_text().startswith("def tile")
    assert copied.stat().st_mode & 0o777 == 0o750  # a folder's mode is set after its entries
    assert (dest / "scripts" / "tile.py").is_file()


def test_a_tree_past_the_bound_is_one_problem_from_a_deep_call_stack(tmp_path):
    skill = tmp_path / "geo-tiles"
    _vendored(skill, MAX_DEPTH + 5)
    problems = _with_frames_used(60, lambda: copy_entry(skill, "."))
    assert len(problems) == 1, problems
    where, what = problems[0]
    assert where.startswith("lib/pkg/pkg/") and f"is {MAX_DEPTH} folders deep" in what
