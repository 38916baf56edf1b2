"""Workspace preparation, the manifest, Δ and outputs: the original skill is never written."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from aeval.errors import ContractError
from aeval.isolation.copying import copy_entry
from aeval.isolation.redact import Redactor
from aeval.isolation.workspace import collect_outputs, diff_skill, manifest, prepare_workspace
from aeval.skill.contract import load_contract
from aeval.skill.skill_md import load_skill
from tests.conftest import EXAMPLES


def test_copy_manifest_and_delta(tmp_path):
    src = tmp_path / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", src)
    before_original = manifest(src)
    ws = prepare_workspace(tmp_path / "attempt", src, "segmentation", ".agents/skills",
                           ["fixtures/"])
    assert ws.skill_dir == ws.path / ".agents/skills/segmentation"
    assert (ws.path / "fixtures/images/a.txt").is_file()
    assert ws.skill_manifest == before_original
    assert diff_skill(src, ws.skill_dir, ws.skill_manifest) == []

    md = ws.skill_dir / "SKILL.md"
    md.write_text(md.read_text().replace("segment_train", "train"))
    (ws.skill_dir / "scripts" / "new.py").write_text("x = 1\n")
    (ws.skill_dir / "scripts" / "run.py").unlink()
    changes = {c.path: c for c in diff_skill(src, ws.skill_dir, ws.skill_manifest)}
    assert set(changes) == {"SKILL.md", "scripts/new.py", "scripts/run.py"}
    assert changes["SKILL.md"].change == "modified"
    assert "-| `segment_train` |" in changes["SKILL.md"].diff
    assert "+| `train` |" in changes["SKILL.md"].diff
    assert changes["scripts/new.py"].change == "added"
    assert changes["scripts/run.py"].change == "deleted"
    assert manifest(src) == before_original  # the original is untouched


def test_outputs_exclude_skill_copy_and_unchanged_files_and_are_redacted(tmp_path):
    src = EXAMPLES / "skills" / "csv-stats"
    ws = prepare_workspace(tmp_path / "a", src, "csv-stats", ".agents/skills",
                           ["fixtures/data.csv"])
    before = ws.snapshot()
    (ws.path / "outputs").mkdir()
    (ws.path / "outputs" / "stats.json").write_text('{"token": "s3cret-value"}')
    (ws.skill_dir / "SKILL.md").write_text("edited")  # a skill edit is Δ, not an output
    out = collect_outputs(ws, before, tmp_path / "collected", Redactor({"TOK": "s3cret-value"}))
    assert [o.path for o in out] == ["outputs/stats.json"]
    text = (tmp_path / "collected" / "outputs" / "stats.json").read_text()
    assert "s3cret-value" not in text and "[REDACTED:TOK]" in text


def test_outputs_over_cap_are_listed_not_copied(tmp_path):
    ws = prepare_workspace(tmp_path / "a", EXAMPLES / "skills" / "hello-docs", "hello-docs",
                           None, [])
    before = ws.snapshot()
    (ws.path / "big.bin").write_bytes(b"\0" * 2000)
    out = collect_outputs(ws, before, tmp_path / "c", max_file_bytes=1000)
    assert out[0].path == "big.bin" and out[0].copied is False and out[0].size == 2000
    assert not (tmp_path / "c" / "big.bin").exists()


# ---- aeval's copies never follow a link out of the skill (issue 33) -----------------------

def _skill(root: Path, name: str = "csv-stats") -> Path:
    src = root / name
    shutil.copytree(EXAMPLES / "skills" / "csv-stats", src)
    return src


def test_links_inside_the_skill_are_kept_as_links_and_a_linked_case_file_is_content(tmp_path):
    src = _skill(tmp_path)
    (src / "references").mkdir()
    (src / "references" / "v2.md").write_text("# Columns (v2)\n\nname, population\n")
    (src / "references" / "latest.md").symlink_to("v2.md")
    (src / "references" / "gone.md").symlink_to("v3.md")  # dangling: resolves nowhere
    (src / "data.csv").symlink_to("fixtures/data.csv")
    ws = prepare_workspace(tmp_path / "a", src, "csv-stats", ".agents/skills",
                           ["data.csv", "references/"])
    latest = ws.skill_dir / "references" / "latest.md"
    assert latest.is_symlink() and os.readlink(latest) == "v2.md"
    assert os.readlink(ws.skill_dir / "references" / "gone.md") == "v3.md"
    copied = ws.path / "data.csv"  # a case file is content: what the link resolves to
    assert not copied.is_symlink()
    assert copied.read_text() == (src / "fixtures" / "data.csv").read_text()
    assert os.readlink(ws.path / "references" / "latest.md") == "v2.md"
    assert ws.skill_manifest == manifest(src)  # the copy is the skill, link for link


def test_the_install_refuses_what_examine_would_have(tmp_path):
    # the skill changed after it was examined: the copy itself still refuses, naming it
    secret = tmp_path / "prefect-home" / "auth.toml"
    secret.parent.mkdir()
    secret.write_text('api_key = "pnu_FAKE"\n')
    src = _skill(tmp_path)
    (src / "fixtures" / "auth.toml").symlink_to(secret)
    with pytest.raises(ContractError, match=r"files \(fixtures/\): 'fixtures/auth.toml' is a "
                                            r"symlink to /.*auth.toml, an absolute path"):
        prepare_workspace(tmp_path / "a", src, "csv-stats", ".agents/skills", ["fixtures/"])
    for f in (tmp_path / "a").rglob("*"):
        assert not (f.is_file() and b"pnu_FAKE" in f.read_bytes()), f


def test_a_relative_link_that_climbs_out_through_another_link_is_refused(tmp_path):
    src = _skill(tmp_path)
    (src / "lib").mkdir()
    (src / "lib" / "up").symlink_to("..")  # inside: the skill folder itself
    (src / "scripts" / "host").symlink_to("../lib/up/../hostname")  # lib/up/.. leaves
    assert copy_entry(src, ".") == [(
        "scripts/host", "is a symlink to ../lib/up/../hostname, which leads out of the skill "
                        "folder: not copied, and never followed (a skill is copied alone)")]
    with pytest.raises(ContractError, match="'scripts/host' is a symlink"):
        prepare_workspace(tmp_path / "a", src, "csv-stats", ".agents/skills", [])


def test_special_files_are_refused_by_name_and_never_opened(tmp_path):
    src = _skill(tmp_path)
    os.mkfifo(src / "fixtures" / "feed")  # opened for reading, a FIFO would hang the copy
    with pytest.raises(ContractError) as exc:
        prepare_workspace(tmp_path / "a", src, "csv-stats", ".agents/skills", ["fixtures/"])
    assert str(exc.value) == (f"{src}:files (fixtures/): 'fixtures/feed' is a FIFO: only "
                              "files, folders and links inside the skill folder are copied")


def test_examine_names_the_contract_the_field_and_the_path(tmp_path):
    src = _skill(tmp_path)
    (src / "fixtures" / "run").symlink_to("/run")
    (src / "eval.config").write_text(
        '{"evals": [{"id": "stats", "prompt": "Column stats of fixtures/data.csv.", '
        '"expected_outcome": "Stats printed.", "files": ["fixtures/data.csv", "fixtures/run"],'
        ' "steps": ["python3 $SKILL_DIR/scripts/stats.py fixtures/data.csv"]}]}')
    with pytest.raises(ContractError) as exc:
        load_contract(load_skill(src), None)
    assert [str(p) for p in exc.value.problems] == [
        f"{src}: 'fixtures/run' is a symlink to /run, an absolute path (never inside a copy "
        "of the skill): not copied, and never followed (a skill is copied alone)",
        f"{src}/eval.config:evals[0].files[1]: 'fixtures/run' resolves through a symlink, an "
        "absolute path (never inside a copy of the skill): not copied, and never followed"]


def test_the_entry_bound_refuses_the_copy_instead_of_cutting_it(tmp_path):
    src = _skill(tmp_path)
    (src / "bulk").mkdir()
    for i in range(30):
        (src / "bulk" / f"part-{i:03}.csv").write_text("a\n")
    (tmp_path / "a").mkdir()
    problems = copy_entry(src, ".", tmp_path / "a" / "copy", tmp_path / "a", limit=20)
    assert len(problems) == 1 and "has more than 20 entries" in problems[0][1], problems


def test_the_contract_reaches_no_part_of_the_workspace(tmp_path):
    """Neither the skill copy nor the case's files hold the contract, however the case names
    its files (the whole skill folder, the evals folder): the agent would read the expected
    outcome there. Everything else of the skill is where it was."""
    from aeval.skill.contract import CONTRACT_FILES

    src = tmp_path / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", src)
    (src / "evals" / "files").mkdir(parents=True)
    (src / "evals" / "evals.json").write_text('{"evals": [{"id": 1, "prompt": "p", '
                                              '"expected_output": "mIoU 0.71"}]}')
    (src / "evals" / "files" / "tile.txt").write_text("tile 7\n")
    ws = prepare_workspace(tmp_path / "attempt", src, "segmentation", ".agents/skills",
                           [".", "evals/"], withheld=CONTRACT_FILES)
    found = sorted(p.relative_to(ws.path).as_posix() for p in ws.path.rglob("*")
                   if p.name in ("eval.config", "evals.json"))
    assert found == []
    assert (ws.skill_dir / "scripts" / "run.py").is_file()
    assert (ws.skill_dir / "evals" / "files" / "tile.txt").is_file()
    assert (ws.path / "evals" / "files" / "tile.txt").is_file()
    assert (ws.path / "scripts" / "run.py").is_file()  # `files: ["."]` copied the rest
    assert (src / "eval.config").is_file()  # the original is never written
