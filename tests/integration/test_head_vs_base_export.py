"""The base version of a change's skills, as `--compare-base` runs it: each changed skill's
folder as it was at the merge base, with the head's cases (its per-skill contract, or the
marketplace's per-name config as the head has it); a skill new in the change has none."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from aeval.tasks.studies.head_vs_base import export_base_skills

pytestmark = pytest.mark.integration


def sh(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def skill(root: Path, name: str, script: str, config: dict | None = None) -> Path:
    d = root / "skills" / name
    (d / "scripts").mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Convert {name} files. Use "
                                f"when asked to convert.\n---\n# {name}\n\n```bash\npython3 "
                                f"scripts/run.py in.txt\n```\n")
    (d / "scripts" / "run.py").write_text(script)
    if config is not None:
        (d / "eval.config").write_text(json.dumps(config))
    return d


def case(case_id: str, step: str) -> dict:
    return {"id": case_id, "prompt": "Convert in.txt.", "expected_outcome": "out.txt exists.",
            "steps": [step], "assertions": [{"type": "file_exists", "path": "out.txt"}]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    sh(r, "init", "-q", "-b", "main")
    sh(r, "config", "user.email", "dev@example.com")
    sh(r, "config", "user.name", "dev")
    skill(r, "csv-clean", "print('v1')\n", {"evals": [case("one", "python3 x.py")]})
    skill(r, "md-tables", "print('tables v1')\n")
    (r / ".aeval" / "evals").mkdir(parents=True)
    (r / ".aeval" / "evals" / "md-tables.config").write_text(
        json.dumps({"evals": [case("old", "echo old")]}))
    sh(r, "add", "-A")
    sh(r, "commit", "-qm", "base")
    sh(r, "checkout", "-qb", "mr")
    return r


def test_the_base_is_the_skill_at_the_merge_base_with_the_heads_cases(repo, tmp_path):
    skill(repo, "csv-clean", "print('v2')\n",
          {"evals": [case("one", "python3 x.py"), case("two", "python3 y.py")]})
    (repo / "skills" / "md-tables" / "scripts" / "run.py").write_text("print('tables v2')\n")
    (repo / ".aeval" / "evals" / "md-tables.config").write_text(
        json.dumps({"evals": [case("new", "echo new")]}))
    skill(repo, "yaml-lint", "print('new')\n")
    sh(repo, "add", "-A")
    sh(repo, "commit", "-qm", "mr")
    # main moves on after the branch: the base is the merge base, not main's tip
    sh(repo, "checkout", "-q", "main")
    (repo / "skills" / "csv-clean" / "scripts" / "run.py").write_text("print('main later')\n")
    sh(repo, "commit", "-qam", "later on main")
    sh(repo, "checkout", "-q", "mr")

    heads = [str(repo / "skills" / n) for n in ("csv-clean", "md-tables", "yaml-lint")]
    tree = export_base_skills(heads, "main", "mr", tmp_path / "tree")
    assert tree.commit == sh(repo, "merge-base", "main", "mr")
    base = {Path(h).name: b for h, b in tree.skills.items()}
    assert base["yaml-lint"] is None  # new in the change
    clean, tables = Path(base["csv-clean"]), Path(base["md-tables"])
    assert (clean / "scripts" / "run.py").read_text() == "print('v1')\n"
    assert (tables / "scripts" / "run.py").read_text() == "print('tables v1')\n"
    # the head's cases: its eval.config, and its per-name config for the marketplace
    assert [c["id"] for c in json.loads((clean / "eval.config").read_text())["evals"]] == \
        ["one", "two"]
    per_name = tmp_path / "tree" / ".aeval" / "evals" / "md-tables.config"
    assert json.loads(per_name.read_text())["evals"][0]["id"] == "new"
    assert sorted(tree.roots()) == sorted([str(clean), str(tables)])
    # the repository is left as it was
    assert sh(repo, "status", "--porcelain") == ""
