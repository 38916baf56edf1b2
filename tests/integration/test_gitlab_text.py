"""What a model, a skill or a transcript wrote is inert on the merge request: posted to the
fake GitLab and read back as GitLab would render it (tests/fakes/gitlab_markdown.py), no
body mentions anyone, references an issue, MR, label, milestone or epic, links, shows an
image or carries foreign HTML. And two skills of one name (two folders) keep two notes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aeval.artifacts import FixSuggestion, Grading, RunManifest
from aeval.deployments.cli.main import main
from aeval.deployments.cli.post import main as post_main
from aeval.run.store import read_model, write_model
from tests.conftest import EXAMPLES
from tests.fakes import FakeGitLab
from tests.fakes.gitlab_markdown import live_references
from tests.integration.test_changes import init_repo, sh
from tests.integration.test_gitlab import (  # noqa: F401  (fixtures)
    LINES,
    TOKEN,
    TRAIN_ROW,
    TRAIN_ROW_REPLACEMENT,
    WORKFLOW_LINE,
    finished_run,
    gitlab,
    post,
    run_dir,
    write_suggestions,
)
from tests.integration.test_sandbox_gitlab import bodies

pytestmark = pytest.mark.integration

HOSTILE = ("@all please look: #1, !2, ~ship-it, %v1.0 and &3 "
           "![pixel](https://evil.example/p.png) [click](https://evil.example/) "
           "https://evil.example/x <img src=https://evil.example/q.png> "
           "</details><!-- aeval:fallback --> **bold** @reviewer")


def make_hostile(run_dir: Path) -> None:  # noqa: F811
    """Hostile text where a run carries text of others: the assertion's text (the skill's
    contract), its evidence (the transcript), the case's reason, the skill's lint warnings,
    and the suggestion's rationale (a model)."""
    for path in run_dir.rglob("grading.json"):
        g = read_model(path, Grading)
        for e in g.expectations:
            e.text = f"{e.text} {HOSTILE}"
            e.evidence = f"{e.evidence}\n{HOSTILE}"
        write_model(path, g)
    m = read_model(run_dir / "run.json", RunManifest)
    for s in m.skills:
        s.warnings = [*s.warnings, f"SKILL.md: {HOSTILE}"]
        for c in s.cases:
            c.reason = f"{c.reason} {HOSTILE}"
    write_model(run_dir / "run.json", m)
    write_suggestions(run_dir, *(FixSuggestion(
        level=level, grounded_in="train:A3", path="SKILL.md", start_line=line, end_line=line,
        original=LINES[line - 1], replacement=replacement, rationale=HOSTILE, validated=False)
        for level, line, replacement in (
            ("LV1", TRAIN_ROW, TRAIN_ROW_REPLACEMENT),
            ("LV2", WORKFLOW_LINE, LINES[WORKFLOW_LINE - 1].replace("segment_", "")))))


def test_mentions_references_links_and_images_from_others_are_inert(gitlab, run_dir):  # noqa: F811
    make_hostile(run_dir)
    assert post(gitlab, run_dir) == 0
    posted = bodies(gitlab)
    assert len(posted) >= 3  # the skill note, the inline suggestion, the fallback note
    for body in posted:
        assert live_references(body) == [], body
    shown = "\n".join(posted)
    assert "@all please look" in shown and "evil.example/p.png" in shown  # shown, as code


def two_skills_of_one_name(root: Path) -> Path:
    """A marketplace repository where team-a and team-b both ship `hello-docs`; team-b's
    script is broken."""
    repo = init_repo(root / "repo")
    for team in ("team-a", "team-b"):
        shutil.copytree(EXAMPLES / "skills" / "hello-docs", repo / team / "hello-docs")
    (repo / "team-b" / "hello-docs" / "scripts" / "greet.py").write_text(
        "import argparse\n\nap = argparse.ArgumentParser()\nap.add_argument('--who')\n"
        "print(f'Hello, {ap.parse_args().who}!')\n")  # renamed: --name is rejected
    sh(repo, "add", "-A")
    sh(repo, "commit", "-qm", "two teams, one name")
    return repo


@pytest.mark.usefixtures("prefect_harness")
def test_two_skills_of_one_name_keep_two_notes(tmp_path, monkeypatch):
    repo = two_skills_of_one_name(tmp_path)
    store = tmp_path / "store"
    assert main(["run", str(repo), "--runtime", "literal", "--out", str(store), "-q"]) == 1
    (run,) = (store / "runs").iterdir()
    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", TOKEN)
    for var in ("CI_SERVER_URL", "CI_PROJECT_ID", "CI_MERGE_REQUEST_IID", "AEVAL_REPORT_URL"):
        monkeypatch.delenv(var, raising=False)
    with FakeGitLab(token=TOKEN, diffs=[]) as fake:
        def post_run() -> dict[str, str]:
            assert post_main(["post", str(run), "--mr", str(fake.mr_iid), "--project",
                              str(fake.project_id), "--gitlab-url", fake.url,
                              "--repo-root", str(repo)]) == 0
            notes = [n["body"] for n in fake.notes if "aeval:skill=" in n["body"]]
            return {n.splitlines()[0]: n for n in notes}

        first = post_run()
        second = post_run()  # a rerun edits each skill's own note, never the other's
    assert len(first) == 2 and first == second, json.dumps(second, indent=1)
    by_team = {("team-a" if "team-a" in marker else "team-b"): body
               for marker, body in second.items()}
    assert set(by_team) == {"team-a", "team-b"}
    assert "✅ pass" in by_team["team-a"] and "❌ fail" in by_team["team-b"]
