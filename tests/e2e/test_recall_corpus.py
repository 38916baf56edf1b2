"""The recall corpus through `aeval run`, zero-key as CI runs it (no model: the literal
runtime): the six marketplaces of tests/corpus/ (written the way public ones are: mostly
illustrative blocks, placeholders, host tools the reader installs, reference files, scripts
called from references, dot-folder layouts; and issue 31's: Claude Code plugins calling
`{baseDir}` and `${CLAUDE_SKILL_DIR}` scripts, `uv run` scripts with a heavy dependency the
reader installs, multi-step vendor skills under `/mnt/skills/public/<name>/`) give no
`fail`, no `error`, no `internal`, and every skill folder is found; `aeval validate` exits 0
on each of them as committed; every planted defect (tests/corpus/plants.json) makes its skill
`fail` with the expected line and cause in the evidence, while the other skills keep their
verdicts.

Only the marketplaces of loader.RECALL_ASSERTED are asserted: issues 45 and 49's
(loader.STYLES_45) are checked by tests/corpus/ and measured by benchmarks/recall.py until
aeval catches their classes; then RECALL_ASSERTED takes them in.

To keep CI time down, plants of one marketplace that target different skills are applied
together (BATCH per run); the unplanted skills of each run must keep the verdicts of the
unplanted run. `benchmarks/recall.py` runs every plant alone and prints the figures.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from tests.corpus.loader import (
    RECALL_ASSERTED,
    Plant,
    SkillView,
    build_marketplace,
    changed_verdicts,
    judge,
    load_plants,
    marketplace_names,
    one_line,
    read_run,
    skill_folders,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

BATCH = 4
NAMES = [n for n in marketplace_names() if n in RECALL_ASSERTED]
PLANTS = [p for p in load_plants() if p.marketplace in RECALL_ASSERTED]


def batches(plants: list[Plant], size: int = BATCH) -> list[list[Plant]]:
    """Plants grouped per marketplace, at most ``size`` per group, no two on one skill."""
    out: list[list[Plant]] = []
    for name in NAMES:
        todo = [p for p in plants if p.marketplace == name]
        while todo:
            group: list[Plant] = []
            for p in list(todo):
                if len(group) < size and p.skill not in {g.skill for g in group}:
                    group.append(p)
                    todo.remove(p)
            out.append(group)
    return out


def run_marketplace(name: str, dest: Path, plants: list[Plant]) -> dict[str, SkillView]:
    """The skills of `aeval run` on marketplace ``name`` built at ``dest`` with ``plants``
    (none found when the run left no run.json: discovery found nothing)."""
    root = build_marketplace(name, dest / name, plants)
    out = dest / "out"
    main(["run", str(root), "--out", str(out), "-q"])
    return read_run(root, out)[0]


@pytest.fixture(scope="module")
def unplanted(tmp_path_factory) -> Callable[[str], dict[str, SkillView]]:
    """The unplanted run of a marketplace, made once, when first asked for."""
    cache: dict[str, dict[str, SkillView]] = {}

    def get(name: str) -> dict[str, SkillView]:
        if name not in cache:
            cache[name] = run_marketplace(name, tmp_path_factory.mktemp(name), [])
        return cache[name]

    return get


@pytest.mark.parametrize("name", NAMES)
def test_validate_exits_0_on_the_clean_marketplace(name, tmp_path, capsys):
    root = build_marketplace(name, tmp_path / name)
    code = main(["validate", str(root)])
    out = capsys.readouterr().out
    assert code == 0, "\n".join(ln for ln in out.splitlines() if not ln.startswith("ok "))


@pytest.mark.parametrize("name", NAMES)
def test_unplanted_marketplace_finds_every_skill_and_raises_no_alarm(name, unplanted):
    skills = unplanted(name)
    assert sorted(skills) == skill_folders(name), "skills not found: " + ", ".join(
        sorted(set(skill_folders(name)) - set(skills)))
    alarms = {f: f"{v.status}: {one_line(v.cases[0].evidence if v.cases else '')}"
              for f, v in skills.items() if v.status in ("fail", "error", "internal")}
    assert not alarms, alarms


def test_batches_cover_every_plant_once():
    flat = [p.id for b in batches(PLANTS) for p in b]
    assert sorted(flat) == sorted(p.id for p in PLANTS)
    for b in batches(PLANTS):
        assert len({p.marketplace for p in b}) == 1
        assert len({p.skill for p in b}) == len(b)


@pytest.mark.parametrize("batch", batches(PLANTS), ids=lambda b: "+".join(p.id for p in b))
def test_planted_skills_fail_with_line_and_cause_and_the_others_keep_their_verdicts(
        batch, unplanted, tmp_path):
    name = batch[0].marketplace
    skills = run_marketplace(name, tmp_path, batch)
    missed = []
    for plant in batch:
        r = judge(plant, skills)
        if not r.caught:
            e = plant.expect
            missed.append(f"{plant.id} {plant.kind} {plant.skill}: wants fail naming "
                          f"{e.file} line {e.line} and {e.cause!r}; got {r.status} "
                          f"(line {'yes' if r.line_ok else 'no'} {r.named}, cause "
                          f"{'yes' if r.cause_ok else 'no'}): {r.said}")
    changed = changed_verdicts(skills, unplanted(name), {p.skill for p in batch})
    assert not missed and not changed, "\n".join(
        [*missed, *(f"verdict changed: {c}" for c in changed)])
