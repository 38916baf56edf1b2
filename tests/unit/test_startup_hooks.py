"""The attempt's Python user site as Δ sees it (`aeval.isolation.startup_hooks`): hooks compared by
content and identity, a folder on the way swapped for a symlink, and never followed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aeval.isolation.startup_hooks import hook_changes, hook_state, shown, user_site


def _attempt(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "attempt-1"
    home = root / "home"
    user_site(home).mkdir(parents=True)
    return root, home


def test_a_pth_rewritten_with_an_import_line_is_a_change_with_its_text(tmp_path):
    root, home = _attempt(tmp_path)
    site = user_site(home)
    (site / "requests").mkdir()  # a package setup installed: not a hook
    (site / "distutils-precedence.pth").write_text("import os\n")
    before = hook_state(home, root)
    (site / "requests" / "__init__.py").write_text("x = 1\n")
    (site / "distutils-precedence.pth").write_text(
        "import os\nimport sys; sys.modules.setdefault('stats', None)\n")
    after = hook_state(home, root)
    changes = hook_changes(before, after, [], shown(home, site), home, root)
    assert [(c.path, c.change) for c in changes] == [
        (f"{shown(home, site)}/distutils-precedence.pth", "modified")]
    assert "+import sys; sys.modules.setdefault('stats', None)" in changes[0].diff


def test_the_user_site_swapped_for_a_symlink_is_a_change_and_not_followed(tmp_path):
    root, home = _attempt(tmp_path)
    before = hook_state(home, root)
    elsewhere = tmp_path / "elsewhere" / "lib" / "python3.11" / "site-packages"
    elsewhere.mkdir(parents=True)
    (elsewhere / "usercustomize.py").write_text("print('hooked')\n")
    os.rename(home / ".local", tmp_path / "aside")
    (home / ".local").symlink_to(tmp_path / "elsewhere")
    after = hook_state(home, root)
    assert list(after) == ["~/.local"] and after["~/.local"].startswith("symlink ")
    (change,) = hook_changes(before, after, [], shown(home, user_site(home)))
    assert change.path == "~/.local" and "replaced" in change.detail


def test_a_hook_written_and_removed_shows_from_the_watch(tmp_path):
    root, home = _attempt(tmp_path)
    site = shown(home, user_site(home))
    state = hook_state(home, root)
    changes = hook_changes(state, state, [("usercustomize.py", "created", 1.5),
                                          ("usercustomize.py", "deleted", 2.0),
                                          ("six.py", "created", 1.0)], site)
    assert [(c.path, c.at_s) for c in changes] == [(f"{site}/usercustomize.py", 1.5)]


def test_the_user_site_is_where_python_reads_its_hooks(tmp_path):
    home = tmp_path / "home"
    out = subprocess.run([sys.executable, "-c", "import site; print(site.getusersitepackages())"],
                         env={"HOME": str(home), "PATH": os.environ["PATH"],
                              "PYTHONUSERBASE": str(home / ".local")},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out) == user_site(home)


def test_home_swapped_for_a_symlink_is_a_change(tmp_path):
    root, home = _attempt(tmp_path)
    before = hook_state(home, root)
    os.rename(home, root / "old-home")
    home.symlink_to(root / "old-home")
    (change,) = hook_changes(before, hook_state(home, root), [], shown(home, user_site(home)))
    assert change.path == "~" and change.change == "added"
