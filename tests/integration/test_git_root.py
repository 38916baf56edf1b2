"""`--changed-since` at a repository's first commit, on real git repositories: a base before
the root commit compares with the empty tree instead of failing; everything else about refs
stays strict."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aeval.adapters.git import GitError, changed_skills, empty_tree
from tests.integration.test_changes import commit, init_repo, sh, skill

pytestmark = pytest.mark.integration


@pytest.fixture
def first_commit(tmp_path: Path) -> Path:
    """A marketplace whose only commit adds two skills and a README."""
    r = init_repo(tmp_path / "repo")
    skill(r, "alpha")
    skill(r, "beta")
    (r / "README.md").write_text("marketplace\n")
    commit(r, "first commit")
    return r


def test_parent_of_the_root_commit_is_the_empty_tree(first_commit):
    """HEAD~1 at the first commit: the CI default `--changed-since HEAD~1` on a new repo."""
    cs = changed_skills(first_commit, "HEAD~1")
    assert cs.skills == [first_commit / "skills" / "alpha", first_commit / "skills" / "beta"]
    assert cs.ignored == ["README.md"] and cs.deleted == []
    assert cs.base == empty_tree(first_commit)
    assert cs.base == sh(first_commit, "hash-object", "-t", "tree", "/dev/null")
    assert cs.head == sh(first_commit, "rev-parse", "HEAD")
    assert any("empty tree" in n for n in cs.notes())


def test_caret_and_deeper_steps_past_the_root_also_mean_the_empty_tree(first_commit):
    skill(first_commit, "gamma")
    commit(first_commit, "second")
    # HEAD~2 is before the root of a two-commit history; HEAD^^ likewise
    for ref in ("HEAD~2", "HEAD^^", "main~5"):
        cs = changed_skills(first_commit, ref)
        assert [p.name for p in cs.skills] == ["alpha", "beta", "gamma"], ref
        assert cs.base == empty_tree(first_commit)


def test_the_root_commit_itself_as_base_compares_normally(first_commit):
    root = sh(first_commit, "rev-parse", "HEAD")
    (first_commit / "skills" / "beta" / "scripts" / "run.sh").write_text("echo changed\n")
    commit(first_commit, "touch beta")
    for ref in (root, "HEAD~1", "HEAD^"):
        cs = changed_skills(first_commit, ref)
        assert cs.skills == [first_commit / "skills" / "beta"], ref
        assert cs.base == root and cs.notes() == []
    # base == head == the root: nothing changed
    sh(first_commit, "checkout", "-q", root)
    assert changed_skills(first_commit, root).skills == []


def test_a_skill_deleted_after_the_root_is_still_reported_from_the_empty_tree(first_commit):
    sh(first_commit, "rm", "-rq", "skills/alpha")
    commit(first_commit, "drop alpha")
    # From the empty tree alpha never existed: it is neither changed nor deleted.
    cs = changed_skills(first_commit, "HEAD~2")
    assert cs.skills == [first_commit / "skills" / "beta"] and cs.deleted == []


@pytest.mark.parametrize("ref", ["nope", "nope~1", "HEAD~1x", "HEAD^2"])
def test_refs_that_name_nothing_still_fail_clearly(first_commit, ref):
    """Only first-parent steps past the root become the empty tree: a typo or a second
    parent that does not exist is still git's own error."""
    with pytest.raises(GitError, match="git rev-parse"):
        changed_skills(first_commit, ref)


def test_cli_run_changed_since_at_the_first_commit_evaluates_every_skill(first_commit,
                                                                          tmp_path):
    """The command line as CI calls it, in a real subprocess: no git error, both skills."""
    out = subprocess.run(
        ["aeval", "run", str(first_commit), "--changed-since", "HEAD~1", "--out",
         str(tmp_path / "s"), "-q"], capture_output=True, text=True, timeout=300,
        env={**_env(), "AEVAL_HOME": str(tmp_path / "s")})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 changed skill(s): skills/alpha, skills/beta" in out.stdout
    assert "empty tree" in out.stdout
    assert "Traceback" not in out.stderr


def _env() -> dict[str, str]:
    import os
    import sys

    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def test_a_shallow_clone_is_not_mistaken_for_a_first_commit(first_commit, tmp_path):
    """CI clones shallowly: there HEAD~1 is missing because the history is cut, and the
    empty tree would select every skill. That stays an error, saying what to do."""
    (first_commit / "skills" / "beta" / "scripts" / "run.sh").write_text("echo changed\n")
    commit(first_commit, "touch beta")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{first_commit}",
                    str(clone)], check=True, capture_output=True)
    with pytest.raises(GitError, match=r"shallow.*GIT_DEPTH: 0"):
        changed_skills(clone, "HEAD~1")
