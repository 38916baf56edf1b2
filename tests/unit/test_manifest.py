"""Δ cannot be evaded: every way an agent could change the skill copy without changing a
file's text (chmod, planted bytecode or .git, symlinks, hardlinks, type swaps) is a change."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from aeval.isolation.workspace import diff_skill, manifest, prepare_workspace, render_diff
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
    from aeval.isolation.workspace import restored_changes

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
    from aeval.isolation.workspace import restored_changes

    final = {**BASELINE, "scripts/lib/io.py": "file 0644 dd44", "scripts/new.py": "file 0644 e"}
    touches = [("scripts", "written", 1.0), ("scripts/lib", "created", 1.5),
               ("scripts/new.py", "created", 1.5), ("scripts/lib/io.py", "written", 2.0),
               (".", "moved", 3.0)]
    assert restored_changes(BASELINE, final, touches) == []
    (link,) = restored_changes(BASELINE, final, [("bin/tool", "deleted", 0.5)])
    assert (link.path, link.kind) == ("bin/tool", "symlink")


# ---- Δ from manifest values alone: each kind of change says what it was -------------------

@pytest.mark.parametrize(("before", "after", "change", "kind", "detail"), [
    (None, "file 0644 aa", "added", "file", "added file"),
    (None, "symlink ../x", "added", "symlink", "added symlink -> ../x"),
    ("dir 0755", None, "deleted", "dir", "deleted dir"),
    ("file 0644 aa", "dir 0755", "modified", "dir", "file -> dir"),
    ("file 0644 aa", "symlink /etc/passwd", "modified", "symlink",
     "file -> symlink (/etc/passwd)"),
    ("symlink a", "symlink b", "modified", "symlink", "symlink -> b (was a)"),
    ("file 0644 aa", "file 0755 bb", "modified", "file", "content, mode 0644 -> 0755"),
    ("dir 0755", "dir 0700", "modified", "dir", "mode 0755 -> 0700"),
    ("other 0644", "other 0600", "modified", "other", "mode 0644 -> 0600"),
    ("aa", "file 0644 bb", "modified", "file", "content"),  # an old-style bare hash
    ("file 0644 unhashed 10", "file 0644 unhashed 12", "modified", "file", "content"),
])
def test_each_kind_of_change_is_named(tmp_path, before, after, change, kind, detail):
    b = {} if before is None else {"x": before}
    a = {} if after is None else {"x": after}
    (c,) = diff_skill(tmp_path, tmp_path, b, a)
    assert (c.path, c.change, c.kind, c.detail) == ("x", change, kind, detail)


def test_the_diff_shows_modes_and_symlink_targets_git_style(tmp_path):
    (c,) = diff_skill(tmp_path, tmp_path, {"run.sh": "file 0644 aa"}, {"run.sh": "file 0755 aa"})
    assert c.diff == "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    (c,) = diff_skill(tmp_path, tmp_path, {}, {"l": "symlink /etc"})
    assert c.diff == "diff --git a/l b/l\n--- a/l\n+++ b/l\n-(absent)\n+symlink -> /etc\n"
    (c,) = diff_skill(tmp_path, tmp_path, {"l": "symlink a"}, {"l": "file 0644 aa"})
    assert c.diff.endswith("-symlink -> a\n+file\n")
    assert c.after is None  # the new file's text could not be read here


def test_a_text_edit_has_its_unified_diff_and_the_text_after(tmp_path):
    original, copy = tmp_path / "orig", tmp_path / "copy"
    for d, text in ((original, "a\nb\n"), (copy, "a\nc\n")):
        d.mkdir()
        (d / "SKILL.md").write_text(text)
    (copy / "new.md").write_text("new\n")
    (copy / "blob.bin").write_bytes(b"\0\1\2")
    (original / "blob.bin").write_bytes(b"\0\1")
    changes = diff_skill(original, copy, {"SKILL.md": "file 0644 h1", "blob.bin": "file 0644 x"},
                         {"SKILL.md": "file 0644 h2", "new.md": "file 0644 h3",
                          "blob.bin": "file 0644 y"}, trusted=tmp_path)
    by = {c.path: c for c in changes}
    assert by["SKILL.md"].diff == ("--- a/SKILL.md\n+++ b/SKILL.md\n@@ -1,2 +1,2 @@\n a\n-b\n"
                                   "+c\n")
    assert by["SKILL.md"].after == "a\nc\n"
    assert by["new.md"].diff == "--- a/new.md\n+++ b/new.md\n@@ -0,0 +1 @@\n+new\n"
    assert by["blob.bin"].diff == "" and by["blob.bin"].after is None
    assert render_diff([by["blob.bin"], by["new.md"]]) == (
        "file modified: blob.bin (content)\n--- a/new.md\n+++ b/new.md\n@@ -0,0 +1 @@\n+new\n")
    assert diff_skill(original, copy, {"a": "file 0644 h"}, {"a": "file 0644 h"}) == []


def test_a_path_that_is_not_utf8_is_shown_with_escapes():
    from aeval.isolation.workspace import shown_path

    raw = os.fsdecode(b"scripts/r\xffn.py")
    assert shown_path(raw) == "scripts/r\\xffn.py"
    assert shown_path("scripts/run.py") == "scripts/run.py"


def test_the_skill_folder_moved_while_the_runtime_ran_is_one_change_at_the_first():
    from aeval.isolation.workspace import path_changes

    (c,) = path_changes([("scripts/x", "written", 0.5), (".", "moved", 1.23456),
                         (".", "deleted", 2.0)])
    assert (c.path, c.kind, c.at_s) == (".", "dir", 1.235)
    assert c.detail == ("the skill folder or a folder above it was moved while the runtime "
                        "ran (Δ is taken at its path)")
    assert path_changes([("scripts/x", "written", 0.5)]) == []


def test_an_entry_put_back_with_a_new_identity_is_a_change():
    from aeval.isolation.tree import Tree
    from aeval.isolation.workspace import rewritten_changes

    before = Tree(entries={"run.py": "file 0755 aa", "lib": "dir 0755", "new.py": "file 0644 b",
                           "same.py": "file 0644 c"},
                  ids={"run.py": (1, 10**9, 10**9), "lib": (2, 10**9, 10**9),
                       "new.py": (3, 10**9, 10**9), "same.py": (4, 10**9, 10**9)},
                  root_id=(9, 10**9, 10**9))
    after = Tree(entries={**before.entries, "new.py": "file 0644 changed"},
                 ids={"run.py": (1, 5 * 10**9, 10**9), "lib": (2, 6 * 10**9, 6 * 10**9),
                      "new.py": (3, 7 * 10**9, 10**9), "same.py": (44, 8 * 10**9, 10**9)},
                 root_id=(9, 3 * 10**9, 10**9))
    out = {c.path: c for c in rewritten_changes(before, after, wall_start=2.0)}
    assert set(out) == {".", "run.py", "same.py"}  # lib: its entries changed; new.py: in Δ
    assert out["run.py"].detail == ("rewritten, re-linked or its attributes changed, and put "
                                    "back while the runtime ran")
    assert out["run.py"].at_s == 3.0 and out["run.py"].kind == "file"
    assert out["."].detail == ("renamed, moved or its attributes changed, and put back while "
                               "the runtime ran")
    assert out["same.py"].detail == ("replaced by an equal copy (a new inode in its place) "
                                     "while the runtime ran")
    assert out["same.py"].at_s == 6.0
    early = rewritten_changes(before, after, wall_start=100.0)
    assert {c.at_s for c in early} == {0.0}
    assert rewritten_changes(Tree(entries=before.entries, ids=before.ids), Tree(
        entries=after.entries, ids=after.ids), 0.0)[0].path != "."
