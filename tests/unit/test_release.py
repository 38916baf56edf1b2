"""The release process (issue 46, item 5): the templates and docs pin the tag of the
version they ship in, CHANGELOG.md has that version, and `.ci/release` tags it; a pin that
names another ref, or a version without a changelog, is refused naming the file."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIED = ["README.md", "docs", "CHANGELOG.md", "pyproject.toml", "action.yml", ".ci/release",
          "deployments/gitlab", "examples/github"]


def release(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(cwd / ".ci" / "release"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def project(tmp: Path) -> Path:
    dst = tmp / "aeval"
    for rel in COPIED:
        src, to = ROOT / rel, dst / rel
        to.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, to)
    return dst


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_this_checkout_pins_the_tag_of_its_own_version():
    done = release(ROOT, "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "v0.1.0 is consistent" in done.stdout


def test_a_pin_of_another_ref_or_a_version_without_changelog_is_refused(tmp_path):
    root = project(tmp_path)
    template = root / "deployments/gitlab/aeval.gitlab-ci.yml"
    template.write_text(template.read_text().replace("aeval_ref: v0.1.0", "aeval_ref: v0.0.9"))
    done = release(root, "--check")
    assert done.returncode == 1
    assert "deployments/gitlab/aeval.gitlab-ci.yml: pins v0.0.9, not v0.1.0" in done.stdout
    shutil.copy2(ROOT / "deployments/gitlab/aeval.gitlab-ci.yml", template)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "0.1.0"', 'version = "0.2.0"',
                                                       1))
    done = release(root, "--check")
    assert done.returncode == 1 and "CHANGELOG.md: no '## 0.2.0' section" in done.stdout
    # the pins users copy from the documentation: the GitLab include, the Action's `uses:`
    assert "docs/gitlab-ci.md: pins v0.1.0, not v0.2.0" in done.stdout
    assert "docs/github.md: pins v0.1.0, not v0.2.0" in done.stdout


def test_a_release_tags_a_clean_checkout_once(tmp_path):
    root = project(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=r", "-c", "user.email=r@x", "add", "-A")
    git(root, "-c", "user.name=r", "-c", "user.email=r@x", "commit", "-q", "-m", "0.1.0")
    (root / "stray.txt").write_text("not committed\n")
    assert "not clean" in release(root).stdout
    (root / "stray.txt").unlink()
    done = subprocess.run(["bash", ".ci/release"], cwd=root, capture_output=True, text=True,
                          env={"GIT_COMMITTER_NAME": "r", "GIT_COMMITTER_EMAIL": "r@x",
                               "PATH": os.environ["PATH"], "HOME": str(tmp_path)}, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(root, "rev-parse", "v0.1.0^{commit}") == git(root, "rev-parse", "HEAD")
    assert "exists" in release(root).stdout
