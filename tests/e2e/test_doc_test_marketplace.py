"""The doc-test tier through `aeval run`: a marketplace of skills whose SKILL.md docs are
partly illustration (placeholders, a missing host tool, a fragment needing earlier context, a
block fed by a skipped block) and none of which has an eval.config gives no `fail` and no
`error`: exit 0 on its own. Beside it, a skill that documents `segment_train` while its
runner knows only `train` fails with the runner's KeyError as evidence: exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from tests.integration.test_doc_tests import DEFECTS, SKILLS, build

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]


def statuses(store: Path) -> tuple[dict, dict]:
    (rd,) = (store / "runs").iterdir()
    run = json.loads((rd / "run.json").read_text())
    return {s["name"]: s["status"] for s in run["skills"]}, run


def test_illustrative_docs_give_no_fail_and_no_error(tmp_path):
    mp = tmp_path / "mp"
    build(mp, SKILLS)
    assert main(["run", str(mp), "--out", str(tmp_path / "s"), "-q"]) == 0
    found, run = statuses(tmp_path / "s")
    assert set(found) == set(SKILLS)
    assert not {"fail", "error", "internal"} & set(found.values()), found
    # what could not run says why, and is never counted as a pass
    untested = {s["name"]: s["cases"][0]["reason"] for s in run["skills"]
                if s["status"] == "untested"}
    assert any("needs" in why for why in untested.values()), untested
    assert "untested" in run["gate"]["reason"] or not untested
    # --require-tested makes an untested case a usage error
    if untested:
        assert main(["run", str(mp), "--out", str(tmp_path / "s2"), "-q",
                     "--require-tested"]) == 2


def test_beside_them_a_documented_action_the_runner_lacks_fails(tmp_path):
    mp = tmp_path / "mp"
    build(mp, SKILLS)
    build(mp, {"segmentation": DEFECTS["segmentation"]})
    assert main(["run", str(mp), "--out", str(tmp_path / "s"), "-q"]) == 1
    found, run = statuses(tmp_path / "s")
    assert found["segmentation"] == "fail"
    assert [n for n, st in found.items() if st == "fail"] == ["segmentation"]
    (case,) = next(s for s in run["skills"] if s["name"] == "segmentation")["cases"]
    # S0 reads the runner's action table: SKILL.md's line names what it does not accept
    assert "SKILL.md line 10: documents `segment_train` for scripts/run.py" in case["reason"]
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    g = json.loads((rd / case["dir"] / "grading.json").read_text())
    s2 = next(e for e in g["expectations"] if e["id"] == "S2")  # and the doc test ran it
    assert s2["status"] == "failed" and "KeyError: 'segment_train'" in s2["evidence"]
