"""Workspace preparation, the manifest, Δ and outputs: the original skill is never written."""

from __future__ import annotations

import shutil

from aeval.redact import Redactor
from aeval.workspace import collect_outputs, diff_skill, manifest, prepare_workspace
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
