"""GitHub delivery, the pure parts: the pull request from the Actions environment, the plan
against what the PR holds (a replan after it is applied is empty), and files a fork could
plant as symlinks out of the checkout never read."""

from __future__ import annotations

import json
import shutil

import pytest

from aeval.adapters.forges.diff import FileDiff
from aeval.adapters.forges.github import GitHubConfigError, GitHubTarget, RemoteComment
from aeval.artifacts import RunManifest
from aeval.run.store import read_model, write_model
from aeval.tasks.deliver.github import gate_summary, plan_github
from aeval.tasks.deliver.read_run import load_run
from tests.conftest import ROOT
from tests.unit.test_deliver import (
    REPO_PATH,
    SKILL_DIR,
    SKILL_MD,
    TRAIN_ROW,
    WORKFLOW_LINE,
    make_run,
    mr_diffs,
    train_row_fix,
    workflow_fix,
)

HEAD = "c" * 40


def event(tmp_path, data: dict) -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(data))
    return {"GITHUB_REPOSITORY": "acme/skills", "GITHUB_EVENT_PATH": str(path),
            "GITHUB_API_URL": "https://ghe.example/api/v3/"}


def test_the_pull_request_of_a_pull_request_event(tmp_path):
    t = GitHubTarget.resolve(environ=event(tmp_path, {"pull_request": {"number": 12}}))
    assert (t.repository, t.number, t.api_url, t.expected_head) == (
        "acme/skills", 12, "https://ghe.example/api/v3", None)
    assert GitHubTarget.resolve("o/r", "3", environ={}).api_url == "https://api.github.com"


def test_a_workflow_run_names_the_head_the_pull_request_must_have(tmp_path):
    env = event(tmp_path, {"workflow_run": {"head_sha": HEAD,
                                            "pull_requests": [{"number": 4}]}})
    t = GitHubTarget.resolve(environ=env)
    assert (t.number, t.expected_head) == (4, HEAD)
    # a fork's run lists no pull request: the number comes from the run's artifact
    env = event(tmp_path, {"workflow_run": {"head_sha": HEAD, "pull_requests": []}})
    with pytest.raises(GitHubConfigError, match="pull request"):
        GitHubTarget.resolve(environ=env)
    assert GitHubTarget.resolve(number="9", environ=env).expected_head == HEAD


@pytest.mark.parametrize(("repo", "pr", "message"), [
    (None, 1, "GITHUB_REPOSITORY"), ("acme", 1, "owner/name"), ("a/b", "x1", "a number"),
    ("a/b", None, "GITHUB_EVENT_PATH")])
def test_what_is_missing_is_named(repo, pr, message):
    with pytest.raises(GitHubConfigError, match=message):
        GitHubTarget.resolve(repo, pr, environ={})


def files() -> list[FileDiff]:
    return [FileDiff(**d.model_dump()) for d in mr_diffs()]


def as_remote(plan) -> tuple[list[RemoteComment], list[RemoteComment]]:
    """What GitHub would hold after the plan's creations (written by the Actions bot)."""
    comments, review = [], []
    for i, a in enumerate(plan.actions):
        bot = {"login": "github-actions[bot]", "user_type": "Bot", "body": a.body or ""}
        if a.kind == "create_comment":
            comments.append(RemoteComment(id=i, **bot))
        elif a.kind == "create_review_comment":
            review.append(RemoteComment(id=i, path=a.path, line=a.line,
                                        start_line=a.start_line, side="RIGHT", **bot))
    return comments, review


def test_plan_then_replan_is_empty(tmp_path):
    from aeval.adapters.forges.github import RemoteCheck

    bundle = load_run(make_run(tmp_path, "r1", [train_row_fix(), workflow_fix()]), ROOT)
    plan = plan_github(bundle, head_sha=HEAD, files=files(), comments=[], review_comments=[])
    assert sorted(a.kind for a in plan.actions) == [
        "create_check_run", "create_comment", "create_comment", "create_review_comment"]
    (rc,) = [a for a in plan.actions if a.kind == "create_review_comment"]
    assert (rc.path, rc.line, rc.start_line) == (REPO_PATH, TRAIN_ROW, None)
    assert plan.check and [a.start_line for a in plan.check.annotations] == sorted(
        [TRAIN_ROW, WORKFLOW_LINE])
    comments, review = as_remote(plan)
    check = RemoteCheck(id=1, conclusion=plan.check.conclusion, title=plan.check.title,
                        summary=plan.check.summary)
    again = plan_github(bundle, head_sha=HEAD, files=files(), comments=comments,
                        review_comments=review, checks=[check])
    assert again.actions == [] and len(again.unchanged) == 4


def test_posts_of_humans_are_not_aeval_posts(tmp_path):
    bundle = load_run(make_run(tmp_path, "r1", [train_row_fix()]), ROOT)
    plan = plan_github(bundle, head_sha=HEAD, files=files(), comments=[], review_comments=[])
    comments, review = as_remote(plan)
    human = [c.model_copy(update={"login": "octo", "user_type": "User"}) for c in comments]
    again = plan_github(bundle, head_sha=HEAD, files=files(), comments=human,
                        review_comments=[])
    assert [a.kind for a in again.actions].count("create_comment") == 1
    # with a known login (a personal token), only that login's posts are aeval's
    mine = plan_github(bundle, head_sha=HEAD, files=files(), comments=human,
                       review_comments=review, me="octo")
    assert "create_comment" not in [a.kind for a in mine.actions]


def test_a_symlink_out_of_the_checkout_is_never_read(tmp_path):
    """A fork adds SKILL.md as a symlink to a file of the posting runner: the suggestion is
    skipped, and no line of that file reaches the fallback comment."""
    repo = tmp_path / "repo"
    skill = repo / "skills" / "segmentation"
    shutil.copytree(SKILL_DIR, skill)
    secret = tmp_path / "runner-secret.md"
    lines = SKILL_MD.read_text().splitlines()
    lines.insert(WORKFLOW_LINE, "RUNNER_SECRET=ghs_do_not_post")
    secret.write_text("\n".join(lines) + "\n")
    (skill / "SKILL.md").unlink()
    (skill / "SKILL.md").symlink_to(secret)
    run_dir = make_run(tmp_path / "store", "r1", [workflow_fix()])
    m = read_model(run_dir / "run.json", RunManifest)
    m.skills[0].path = str(skill)
    write_model(run_dir / "run.json", m)
    bundle = load_run(run_dir, repo)
    (s,) = bundle.suggestions()
    assert "not in the checked-out repository" in (s.problem or "")
    plan = plan_github(bundle, head_sha=HEAD, files=[], comments=[], review_comments=[])
    assert "ghs_do_not_post" not in json.dumps(plan.model_dump())


def test_the_gate_summary_shows_names_as_code(tmp_path):
    run_dir = make_run(tmp_path, "r1", [])
    m = read_model(run_dir / "run.json", RunManifest)
    m.skills[0].name = "@all <img src=x>"
    text = gate_summary(m)
    assert "## aeval · gate: exit 1" in text and "| `@all <img src=x>` | ❌ fail | 1 fail |" \
        in text


@pytest.mark.parametrize(("argv", "env", "forge"), [
    ([], {}, "gitlab"),
    ([], {"GITHUB_ACTIONS": "true"}, "github"),
    ([], {"GITHUB_ACTIONS": "true", "GITLAB_CI": "true"}, "gitlab"),
    (["--mr", "7"], {"GITHUB_ACTIONS": "true"}, "gitlab"),
    (["--pr", "7"], {}, "github"),
    (["--summary-only"], {}, "github"),
    (["--forge", "gitlab"], {"GITHUB_ACTIONS": "true"}, "gitlab")])
def test_the_forge_is_named_or_detected(argv, env, forge):
    from aeval.deployments.cli.post import build_parser, forge_of

    args = build_parser().parse_args(["post", "latest", *argv])
    assert forge_of(args, env) == forge
