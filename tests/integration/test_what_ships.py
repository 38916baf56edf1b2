"""Change detection and the tested copy follow what ships: every file git tracks in a skill
counts (a shipped ``__pycache__`` pyc, vendored ``site-packages``), only what the skill's own
ignore rules leave out stays out, and file names are bytes (issue 44, item 6)."""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import subprocess
from pathlib import Path

import pytest

from aeval.adapters.git import changed_skills, left_out
from aeval.deployments.cli.main import main
from aeval.run.fingerprint import folder_digest

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

LIB = "def total(xs):\n    return sum(xs)\n"
WRONG_LIB = "def total(xs):\n    return sum(xs) + 1\n"


def sh(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(repo: Path, msg: str) -> None:
    sh(repo, "add", "-A")
    sh(repo, "commit", "-qm", msg)


def python3_cache_tag() -> str:
    """The cache tag (``cpython-311``) of the ``python3`` the skill's steps run."""
    return subprocess.run([shutil.which("python3") or "python3", "-c",
                           "import sys; print(sys.implementation.cache_tag)"],
                          check=True, capture_output=True, text=True).stdout.strip()


def ship_pyc(skill: Path, source: str) -> Path:
    """Compile ``source`` as scripts/lib.py into the skill's ``__pycache__``, unchecked-hash
    (Python runs it whatever lib.py says, as wheels and zipapps ship them)."""
    tmp = skill.parent / "lib-src" / "lib.py"
    tmp.parent.mkdir(exist_ok=True)
    tmp.write_text(source)
    pyc = skill / "scripts" / "__pycache__" / f"lib.{python3_cache_tag()}.pyc"
    pyc.parent.mkdir(exist_ok=True)
    subprocess.run([shutil.which("python3") or "python3", "-c",
                    "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2],"
                    " doraise=True, invalidation_mode=py_compile.PycInvalidationMode."
                    "UNCHECKED_HASH)", str(tmp), str(pyc)], check=True)
    shutil.rmtree(tmp.parent)
    assert py_compile  # the module the helper's child process uses
    return pyc


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A marketplace with a sum-report skill that ships its compiled lib, and a second
    skill nobody touches."""
    r = tmp_path / "market"
    r.mkdir()
    sh(r, "init", "-q", "-b", "main")
    sh(r, "config", "user.email", "t@example.com")
    sh(r, "config", "user.name", "t")
    (r / ".gitignore").write_text("build/\n*.log\n")
    for name in ("sum-report", "notes"):
        d = r / "skills" / name
        (d / "scripts").mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Sums numbers into a one-line report.\n---\n"
            "# Sum report\n\nRun:\n\n```bash\npython3 scripts/report.py 2 3 4\n```\n")
        (d / "scripts" / "lib.py").write_text(LIB)
        (d / "scripts" / "report.py").write_text(
            "import sys\nfrom lib import total\n\n"
            "print('sum:', total(int(a) for a in sys.argv[1:]))\n")
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": "sum", "prompt": "Report the sum of 2 3 4.", "expected_outcome": "sum: 9",
            "steps": ["python3 $SKILL_DIR/scripts/report.py 2 3 4 > out.txt"],
            "assertions": [{"type": "file_contains", "path": "out.txt",
                            "pattern": "^sum: 9$"}]}]}))
    ship_pyc(r / "skills" / "sum-report", LIB)
    commit(r, "two skills")
    return r


def run(args: list[str], out: Path, capsys) -> tuple[int, dict, str]:
    code = main(["run", *args, "--out", str(out)])
    printed = capsys.readouterr().out
    runs = list((out / "runs").iterdir()) if (out / "runs").exists() else []
    manifest = json.loads((runs[0] / "run.json").read_text()) if runs else {}
    return code, manifest, printed


def test_a_commit_that_changes_only_the_shipped_pyc_is_tested_as_shipped(repo, tmp_path,
                                                                         capsys):
    """On main: "no skill changed", exit 0, while the shipped skill prints sum: 10."""
    ship_pyc(repo / "skills" / "sum-report", WRONG_LIB)
    commit(repo, "rebuild the compiled lib")
    shipped = subprocess.run(["python3", "scripts/report.py", "2", "3", "4"], text=True,
                             cwd=repo / "skills" / "sum-report", capture_output=True,
                             env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert shipped.stdout.strip() == "sum: 10"  # what a user of the skill gets

    code, manifest, printed = run([str(repo), "--changed-since", "HEAD~1"], tmp_path / "s",
                                  capsys)
    assert "1 changed skill(s): skills/sum-report" in printed, printed
    assert [s["name"] for s in manifest["skills"]] == ["sum-report"]
    assert code == 1, printed  # the copy holds the shipped pyc: the case fails as it ships


def test_a_full_run_tests_the_skill_as_shipped_with_its_pyc(repo, tmp_path, capsys):
    """On main: the copy left ``__pycache__`` out, ran lib.py, and passed (exit 0)."""
    ship_pyc(repo / "skills" / "sum-report", WRONG_LIB)
    commit(repo, "rebuild the compiled lib")
    code, manifest, printed = run([str(repo / "skills")], tmp_path / "full", capsys)
    assert code == 1, printed
    by_name = {s["name"]: s for s in manifest["skills"]}
    assert set(by_name) == {"sum-report", "notes"}


def test_a_vendored_dependency_change_selects_its_skill(repo, tmp_path, capsys):
    vendored = repo / "skills" / "sum-report" / "scripts" / "_vendor" / "site-packages"
    (vendored / "tabulate").mkdir(parents=True)
    (vendored / "tabulate" / "__init__.py").write_text("VERSION = '0.9.0'\n")
    commit(repo, "vendor tabulate")
    (vendored / "tabulate" / "__init__.py").write_text("VERSION = '0.9.1'\n")
    commit(repo, "bump vendored tabulate")
    assert changed_skills(repo, "HEAD~1").skills == [repo / "skills" / "sum-report"]
    code, _, printed = run([str(repo), "--changed-since", "HEAD~1"], tmp_path / "s",
                                  capsys)
    assert "1 changed skill(s): skills/sum-report" in printed, printed
    assert code == 0, printed


def test_a_file_name_that_is_not_utf8_is_a_change_like_any_other(repo, tmp_path, capsys):
    """On main: exit 4, UnicodeDecodeError. A Latin-1 name from an old archive is a file."""
    refs = repo / "skills" / "notes" / "references"
    refs.mkdir()
    (refs / os.fsdecode(b"r\xe9sum\xe9.txt")).write_text("Latin-1 notes\n")
    commit(repo, "add a reference with a Latin-1 name")
    code, manifest, printed = run([str(repo), "--changed-since", "HEAD~1"], tmp_path / "s",
                                  capsys)
    assert "1 changed skill(s): skills/notes" in printed, printed
    assert code == 0, printed
    assert [s["name"] for s in manifest["skills"]] == ["notes"]


def test_untracked_caches_and_ignored_files_stay_out_of_the_copy(repo, tmp_path, capsys):
    """What git does not ship is not tested: a local stale pyc nobody committed, a build
    folder the repository ignores. The skill's tracked pyc is correct here: it passes."""
    notes = repo / "skills" / "notes"
    ship_pyc(notes, WRONG_LIB)  # a stale local cache, untracked
    (notes / "build").mkdir()
    (notes / "build" / "lib.py").write_text(WRONG_LIB)
    (notes / "scripts" / "debug.log").write_text("local\n")
    assert sh(repo, "status", "--porcelain", "--untracked-files=all") == \
        "?? skills/notes/scripts/__pycache__/" + f"lib.{python3_cache_tag()}.pyc"
    code, _, printed = run([str(notes)], tmp_path / "s", capsys)
    assert code == 0, printed


def test_the_reuse_fingerprint_covers_the_shipped_pyc_and_not_untracked_junk(repo):
    """On main the sweep's fingerprint skipped ``__pycache__``: a nightly after a commit that
    only rebuilt the pyc reused the old verdict ("unchanged: reused")."""
    skill = repo / "skills" / "sum-report"
    before = folder_digest(skill, left_out=left_out(skill))
    (skill / "scripts" / "run.log").write_text("local\n")  # ignored by the repository
    (skill / "node_modules" / "left-pad").mkdir(parents=True)  # installed, untracked
    (skill / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    assert folder_digest(skill, left_out=left_out(skill)) == before
    pyc = ship_pyc(skill, WRONG_LIB)
    sh(repo, "commit", "-qm", "rebuild the compiled lib", "--", str(pyc))
    assert folder_digest(skill, left_out=left_out(skill)) != before
