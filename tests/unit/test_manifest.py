"""Δ cannot be evaded: every way an agent could change the skill copy without changing a
file's text (chmod, planted bytecode or .git, symlinks, hardlinks, type swaps) is a change."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from aeval.workspace import diff_skill, manifest, prepare_workspace, render_diff
from tests.conftest import EXAMPLES


@pytest.fixture
def ws(tmp_path):
    src = tmp_path / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", src)
    return prepare_workspace(tmp_path / "attempt", src, "segmentation", ".agents/skills",
                             ["fixtures/"])


def delta(ws):
    return {c.path: c for c in diff_skill(ws.original_skill, ws.skill_dir, ws.skill_manifest)}


def test_untouched_copy_has_no_change_and_matches_the_original(ws):
    assert delta(ws) == {}
    assert manifest(ws.original_skill) == ws.skill_manifest
    kinds = {v.split()[0] for v in ws.skill_manifest.values()}
    assert kinds == {"file", "dir"}  # folders are entries too


def test_chmod_is_a_change(ws):
    run = ws.skill_dir / "scripts" / "run.py"
    old = run.stat().st_mode & 0o7777
    run.chmod(old | 0o111)
    c = delta(ws)["scripts/run.py"]
    assert c.change == "modified" and c.kind == "file"
    assert c.detail == f"mode {old:04o} -> {old | 0o111:04o}"
    assert f"new mode 10{old | 0o111:04o}" in c.diff and "@@" not in c.diff


@pytest.mark.parametrize("planted", ["scripts/__pycache__/run.cpython-311.pyc", ".git/config",
                                     ".DS_Store"])
def test_planted_ignored_names_count(ws, planted):
    target = ws.skill_dir / planted
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\x00\x01 planted")
    changes = delta(ws)
    assert changes[planted].change == "added" and changes[planted].kind == "file"


def test_added_and_repointed_symlinks_are_changes_and_never_followed(ws, tmp_path):
    outside = tmp_path / "host-secret.txt"
    outside.write_text("HOST-SECRET-CONTENT\n")
    (ws.skill_dir / "scripts" / "helper.py").symlink_to(outside)
    changes = delta(ws)
    c = changes["scripts/helper.py"]
    assert c.change == "added" and c.kind == "symlink" and str(outside) in c.detail
    assert "HOST-SECRET-CONTENT" not in (c.diff + (c.after or "") + render_diff([c]))

    # re-point after the manifest: the baseline holds a symlink, the agent re-aims it
    (ws.skill_dir / "scripts" / "helper.py").unlink()
    (ws.skill_dir / "scripts" / "helper.py").symlink_to("run.py")
    ws.skill_manifest = manifest(ws.skill_dir)
    (ws.skill_dir / "scripts" / "helper.py").unlink()
    (ws.skill_dir / "scripts" / "helper.py").symlink_to(outside)
    c = delta(ws)["scripts/helper.py"]
    assert c.change == "modified" and c.detail == f"symlink -> {outside} (was run.py)"
    assert f"+symlink -> {outside}" in c.diff and "-symlink -> run.py" in c.diff


def test_file_replaced_by_symlink_to_itself_outside(ws, tmp_path):
    md = ws.skill_dir / "SKILL.md"
    saved = tmp_path / "SKILL.md"
    shutil.copy2(md, saved)
    md.unlink()
    md.symlink_to(saved)  # same text, but now a symlink the agent controls
    c = delta(ws)["SKILL.md"]
    assert c.change == "modified" and c.kind == "symlink" and c.detail.startswith("file -> symlink")


def test_write_through_a_hardlink_is_a_content_change(ws, tmp_path):
    run = ws.skill_dir / "scripts" / "run.py"
    alias = ws.path / "notes.py"  # looks like an ordinary output file
    subprocess.run(["ln", str(run), str(alias)], check=True)
    with alias.open("a") as fh:
        fh.write("\nACTIONS['segment_train'] = ACTIONS['train']\n")
    c = delta(ws)["scripts/run.py"]
    assert c.change == "modified" and c.detail == "content"
    assert "+ACTIONS['segment_train'] = ACTIONS['train']" in c.diff


def test_deleted_folder_and_added_folder(ws):
    shutil.rmtree(ws.skill_dir / "fixtures")
    (ws.skill_dir / "cache").mkdir()
    changes = delta(ws)
    assert changes["fixtures"].change == "deleted" and changes["fixtures"].kind == "dir"
    assert changes["cache"].change == "added" and changes["cache"].detail == "added dir"
    assert any(p.startswith("fixtures/") and c.change == "deleted" for p, c in changes.items())


def test_a_planted_fifo_does_not_hang_the_manifest(ws):
    os.mkfifo(ws.skill_dir / "scripts" / "pipe")
    c = delta(ws)["scripts/pipe"]
    assert c.change == "added" and c.kind == "other"


def test_content_edit_still_has_a_unified_diff(ws):
    md = ws.skill_dir / "SKILL.md"
    md.write_text(md.read_text().replace("segment_train", "train"))
    c = delta(ws)["SKILL.md"]
    assert c.change == "modified" and c.detail == "content"
    assert "-| `segment_train` |" in c.diff and c.after and "segment_train" not in c.after


# ---- edits put back while the runtime ran (restored_changes) -----------------------------

BASELINE = {"SKILL.md": "file 0644 aa11", "scripts": "dir 0755",
            "scripts/run.py": "file 0755 bb22", "scripts/lib": "dir 0755",
            "scripts/lib/io.py": "file 0644 cc33", "bin/tool": "symlink ../scripts/run.py"}


def test_a_file_edited_and_put_back_is_a_change_with_what_the_watch_saw():
    from aeval.workspace import restored_changes

    touches = [("scripts/run.py", "written", 4.25), ("SKILL.md", "attributes", 2.0),
               ("scripts/run.py", "attributes", 5.0), ("scripts/run.py", "written", 6.0)]
    out = restored_changes(BASELINE, dict(BASELINE), touches)
    assert [(c.path, c.kind, c.at_s) for c in out] == [("SKILL.md", "file", 2.0),
                                                       ("scripts/run.py", "file", 4.25)]
    assert out[1].change == "modified"
    assert out[1].detail == ("modified and restored: written, attributes while the runtime "
                             "ran")


def test_touched_folders_new_files_and_what_delta_shows_are_not_restored_changes():
    """A folder's entries changing touches the folder (a file added to scripts/): that is
    not an edit of the folder put back; a file that is not in the shipped copy, or one
    still changed at the end (Δ shows it), is not one either."""
    from aeval.workspace import restored_changes

    final = {**BASELINE, "scripts/lib/io.py": "file 0644 dd44", "scripts/new.py": "file 0644 e"}
    touches = [("scripts", "written", 1.0), ("scripts/lib", "created", 1.5),
               ("scripts/new.py", "created", 1.5), ("scripts/lib/io.py", "written", 2.0),
               (".", "moved", 3.0)]
    assert restored_changes(BASELINE, final, touches) == []
    (link,) = restored_changes(BASELINE, final, [("bin/tool", "deleted", 0.5)])
    assert (link.path, link.kind) == ("bin/tool", "symlink")
