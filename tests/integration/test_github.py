"""Posting a real run of the segmentation example on a fake GitHub pull request (loopback).

The run comes from `aeval run` on examples/marketplace/skills/segmentation (literal runtime),
shared with the GitLab tests; suggestions are written with the pydantic models. Review
comments are checked the way an author uses them: "Commit suggestion" applied to SKILL.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.adapters.forges import github as github_adapter
from aeval.artifacts import FixSuggestion
from aeval.deployments.cli.post import main as post_main
from aeval.tasks.deliver.post import post_run
from tests.conftest import ROOT
from tests.fakes.fake_github import FakeGitHub, apply_suggestion, patch_from_texts
from tests.fakes.gitlab_markdown import live_references
from tests.integration import test_gitlab
from tests.integration.test_gitlab import (
    LINES,
    REPO_PATH,
    SKILL_MD,
    TRAIN_ROW,
    TRAIN_ROW_REPLACEMENT,
    WORKFLOW_LINE,
    line_fix,
    train_row_fix,
    write_suggestions,
)
from tests.integration.test_gitlab_text import HOSTILE, make_hostile

pytestmark = pytest.mark.integration
# the GitLab tests' real run of the segmentation skill, and a private copy per test
finished_run = test_gitlab.finished_run
run_dir = test_gitlab.run_dir

TOKEN = "ghs_fakeActionsToken0123456789abcdef"
MARKER_RE = "<!-- aeval:"


@pytest.fixture
def github(monkeypatch, tmp_path):
    """A fake PR whose diff changed the `segment_train` row of SKILL.md (its neighbours are
    context), with the token in the environment, no Actions variables, writes unspaced and
    a job summary file."""
    new = SKILL_MD.read_text()
    old = new.splitlines(keepends=True)
    old[TRAIN_ROW - 1] = "| `segment_train` | trains a model |\n"
    fake = FakeGitHub(token=TOKEN, per_page=2, files=[
        {"filename": REPO_PATH, "patch": patch_from_texts("".join(old), new)},
        {"filename": "README.md", "patch": "@@ -1 +1 @@\n-a\n+b"},
        {"filename": "docs/new.md", "previous_filename": "docs/old.md", "status": "renamed"}])
    monkeypatch.setenv("AEVAL_GITHUB_TOKEN", TOKEN)
    for var in ("GITHUB_ACTIONS", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH", "GITHUB_API_URL",
                "GITHUB_EVENT_NAME", "AEVAL_REPORT_URL", "GITLAB_CI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step-summary.md"))
    monkeypatch.setattr(github_adapter, "WRITE_INTERVAL_S", 0)
    with fake:
        yield fake


def post(fake: FakeGitHub, run_dir: Path, *extra: str) -> int:
    return post_main(["post", str(run_dir), "--forge", "github", "--repo", fake.repo, "--pr",
                      str(fake.number), "--github-api-url", fake.url, "--repo-root", str(ROOT),
                      *extra])


def writes(fake: FakeGitHub) -> list[tuple[str, str]]:
    base = f"/repos/{fake.repo}"
    return [(r.method, r.path.removeprefix(base)) for r in fake.writes()]


def bodies(fake: FakeGitHub) -> list[str]:
    """Every body as stored and as sent (comments, reviews, review comments, check runs)."""
    sent = []
    for r in fake.writes():
        b = r.body if isinstance(r.body, dict) else {}
        sent += [b.get("body")] + [c.get("body") for c in b.get("comments") or []]
        sent.append((b.get("output") or {}).get("summary"))  # annotations are plain text
    stored = [c["body"] for c in fake.issue_comments + fake.review_comments + fake.reviews]
    return stored + [s for s in sent if isinstance(s, str)]


def multi_line_fix() -> FixSuggestion:
    """Lines TRAIN_ROW (added) and TRAIN_ROW + 1 (context) replaced by three lines."""
    original = LINES[TRAIN_ROW - 1:TRAIN_ROW + 1]
    return FixSuggestion(
        level="LV1", grounded_in="train:A3", path="SKILL.md", start_line=TRAIN_ROW,
        end_line=TRAIN_ROW + 1, original="\n".join(original),
        replacement="\n".join([TRAIN_ROW_REPLACEMENT, "| `train` | alias: segment_train |",
                               original[1]]),
        rationale="Document the registered action and keep the old name findable.",
        validated=False)


# ---- the done-when criteria -------------------------------------------------------------------


def test_summary_comment_review_suggestion_check_run_and_job_summary(github, run_dir,
                                                                     tmp_path):
    write_suggestions(run_dir, train_row_fix())
    assert post(github, run_dir, "--report-url", "https://ci.example/runs/9") == 0

    assert sorted(writes(github)) == [("POST", "/check-runs"),
                                      ("POST", f"/issues/{github.number}/comments"),
                                      ("POST", f"/pulls/{github.number}/reviews")]
    assert all(r.status < 400 for r in github.requests if r.path != "/user")
    (summary,) = github.issue_comments
    assert summary["body"].startswith("<!-- aeval:skill=segmentation folder=examples%2F"
                                      "marketplace%2Fskills%2Fsegmentation -->")
    assert "| `train` | literal | **fail**" in summary["body"]
    assert "https://ci.example/runs/9" in summary["body"]
    (review,) = github.reviews
    assert review["commit_id"] == github.head_sha and review["body"].startswith(
        "<!-- aeval:review -->")
    (comment,) = github.review_comments
    assert (comment["path"], comment["line"], comment["start_line"], comment["side"]) == (
        REPO_PATH, TRAIN_ROW, None, "RIGHT")
    assert "LV1" in comment["body"] and "`train:A3`" in comment["body"]
    # "Commit suggestion" turns SKILL.md into exactly the suggested text
    applied = apply_suggestion(SKILL_MD.read_text(), comment)
    expected = LINES.copy()
    expected[TRAIN_ROW - 1] = TRAIN_ROW_REPLACEMENT
    assert applied.splitlines() == expected

    (check,) = github.check_runs
    assert (check["name"], check["head_sha"], check["status"], check["conclusion"]) == (
        "aeval", github.head_sha, "completed", "failure")
    assert check["output"]["title"].startswith("gate: exit 1")
    assert [(a["path"], a["start_line"], a["end_line"], a["annotation_level"])
            for a in check["annotations"]] == [(REPO_PATH, TRAIN_ROW, TRAIN_ROW, "failure")]
    assert check["details_url"] == "https://ci.example/runs/9"
    job_summary = (tmp_path / "step-summary.md").read_text()
    assert "## aeval · gate: exit 1" in job_summary and "| `segmentation` | ❌ fail |" in \
        job_summary


def test_a_fix_over_several_lines_is_one_multi_line_suggestion(github, run_dir):
    fix = multi_line_fix()
    write_suggestions(run_dir, fix)
    assert post(github, run_dir) == 0
    (comment,) = github.review_comments
    assert (comment["start_line"], comment["line"]) == (TRAIN_ROW, TRAIN_ROW + 1)
    applied = apply_suggestion(SKILL_MD.read_text(), comment).splitlines()
    assert applied == LINES[:TRAIN_ROW - 1] + fix.replacement.splitlines() + LINES[TRAIN_ROW + 1:]


def test_posting_the_same_run_again_writes_nothing(github, run_dir):
    write_suggestions(run_dir, train_row_fix(), line_fix(WORKFLOW_LINE))
    assert post(github, run_dir) == 0
    before = (github.issue_comments, github.review_comments, github.check_runs)
    assert len(github.writes()) == 4  # summary, review, fallback, check run
    github.clear_requests()

    assert post(github, run_dir) == 0
    assert github.writes() == []
    assert (github.issue_comments, github.review_comments, github.check_runs) == before


def test_a_suggestion_outside_the_diff_goes_to_the_fallback_comment(github, run_dir):
    write_suggestions(run_dir, line_fix(WORKFLOW_LINE, "LV1"))
    assert post(github, run_dir) == 0
    assert github.reviews == [] and github.review_comments == []
    (fallback,) = [c for c in github.issue_comments
                   if c["body"].startswith("<!-- aeval:fallback -->")]
    assert "suggestions outside this pull request's diff" in fallback["body"]
    assert "so GitHub cannot offer them" in fallback["body"]
    assert f"`{REPO_PATH}` lines {WORKFLOW_LINE}-{WORKFLOW_LINE}" in fallback["body"]
    assert f"--- a/{REPO_PATH}" in fallback["body"] and "Prompt for an agent" in fallback["body"]
    # still annotated on its line in the check run
    (check,) = github.check_runs
    assert [a["start_line"] for a in check["annotations"]] == [WORKFLOW_LINE]


def test_rerun_marks_what_no_longer_applies_and_restores_it(github, run_dir):
    write_suggestions(run_dir, train_row_fix())
    assert post(github, run_dir) == 0
    (comment,) = github.review_comments
    github.clear_requests()

    write_suggestions(run_dir)  # the next run suggests nothing
    assert post(github, run_dir) == 0
    assert ("PATCH", f"/pulls/comments/{comment['id']}") in writes(github)
    assert not any(p.endswith("/reviews") for _, p in writes(github))
    (after,) = github.review_comments
    assert "<!-- aeval:outdated -->" in after["body"] and "```suggestion" not in after["body"]
    github.clear_requests()

    write_suggestions(run_dir, train_row_fix())  # and again: restored, not duplicated
    assert post(github, run_dir) == 0
    assert not any(p.endswith("/reviews") for _, p in writes(github))
    (again,) = github.review_comments
    assert "```suggestion" in again["body"] and "outdated" not in again["body"]
    assert len(github.issue_comments) == 1


def test_a_review_github_refuses_falls_back_instead_of_failing(github, run_dir, monkeypatch):
    monkeypatch.setattr(github, "line_error", lambda c: "Line could not be resolved")
    write_suggestions(run_dir, train_row_fix())
    assert post(github, run_dir) == 0
    assert [r.status for r in github.requests if r.path.endswith("/reviews")] == [422, 422]
    (fallback,) = [c for c in github.issue_comments
                   if c["body"].startswith("<!-- aeval:fallback -->")]
    assert TRAIN_ROW_REPLACEMENT in fallback["body"]


def test_comments_of_others_are_never_taken_for_aeval_comments(github, run_dir):
    github.add_comment("> <!-- aeval:skill=segmentation -->\n> quoted by a reviewer")
    github.add_comment("<!-- aeval:skill=segmentation -->\ncopied by a reviewer")
    write_suggestions(run_dir, train_row_fix())
    assert post(github, run_dir) == 0
    assert not any(m == "PATCH" for m, _ in writes(github))
    assert len(github.issue_comments) == 3


def test_mentions_references_links_and_images_from_others_are_inert(github, run_dir):
    make_hostile(run_dir)
    assert post(github, run_dir) == 0
    posted = bodies(github)
    assert len(github.issue_comments) == 2 and len(github.review_comments) == 1
    for body in posted:
        assert live_references(body) == [], body
    shown = "\n".join(posted)
    assert "@all please look" in shown and "evil.example/p.png" in shown  # shown, as code
    job = Path(os.environ["GITHUB_STEP_SUMMARY"]).read_text()
    assert live_references(job) == [] and "gate: exit 1" in job
    # annotations are plain text on GitHub (no markdown): shown whole, control characters
    # escaped
    (check,) = github.check_runs
    assert all(HOSTILE in a["message"] for a in check["annotations"])


# ---- the target, the token, the Prefect task --------------------------------------------------


def event_file(tmp_path: Path, event: dict) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    return str(path)


def test_the_pull_request_from_the_actions_environment(github, run_dir, monkeypatch,
                                                       tmp_path, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_REPOSITORY", github.repo)
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    monkeypatch.setenv("GITHUB_EVENT_PATH", event_file(tmp_path, {
        "action": "synchronize", "number": github.number,
        "pull_request": {"number": github.number, "head": {"sha": github.head_sha}}}))
    write_suggestions(run_dir, train_row_fix())
    assert post_main(["post", str(run_dir), "--repo-root", str(ROOT)]) == 0  # forge detected
    assert len(github.review_comments) == 1
    assert f"{github.repo} pull request #{github.number}" in capsys.readouterr().out


def test_aeval_run_post_inside_actions_posts_on_the_pull_request(github, monkeypatch,
                                                                  tmp_path):
    """`aeval run --post` in a GitHub Actions job posts on the job's pull request, through
    the same path as `aeval post` (no GitLab variables anywhere)."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_REPOSITORY", github.repo)
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    monkeypatch.setenv("GITHUB_EVENT_PATH", event_file(tmp_path, {
        "action": "synchronize", "number": github.number,
        "pull_request": {"number": github.number, "head": {"sha": github.head_sha}}}))
    aeval = Path(sys.executable).parent / "aeval"
    cmd = [str(aeval)] if aeval.exists() else [sys.executable, "-m", "aeval.deployments.cli.main"]
    proc = subprocess.run([*cmd, "run", str(test_gitlab.SKILL_DIR), "--out",
                           str(tmp_path / "store"), "-q", "--post"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the skill's defect, posted
    assert f"post: posted on GitHub, {github.repo} pull request #{github.number}" \
        in proc.stdout, proc.stdout + proc.stderr
    summary, fallback = github.issue_comments
    assert summary["body"].startswith("<!-- aeval:skill=segmentation ")
    # S0's documented actions, fixed with no model, on lines outside the PR's diff
    assert fallback["body"].startswith("<!-- aeval:fallback -->")
    assert "scripts/run.py train --data fixtures" in fallback["body"]
    (check,) = github.check_runs
    assert check["conclusion"] == "failure" and check["head_sha"] == github.head_sha
    assert "## aeval · gate: exit 1" in Path(os.environ["GITHUB_STEP_SUMMARY"]).read_text()
    assert TOKEN not in proc.stdout + proc.stderr


def test_a_workflow_run_posts_only_on_the_pull_request_of_its_head(github, run_dir,
                                                                   monkeypatch, tmp_path,
                                                                   capsys):
    """The posting workflow takes the PR number from the untrusted run's artifact: it must
    name a pull request whose head is the commit that run tested."""
    monkeypatch.setenv("GITHUB_EVENT_PATH", event_file(tmp_path, {
        "action": "completed", "workflow_run": {"head_sha": "d" * 40, "pull_requests": []}}))
    write_suggestions(run_dir, train_row_fix())
    assert post(github, run_dir) == 2
    assert "refusing to post a run of another commit" in capsys.readouterr().err
    assert github.writes() == []

    monkeypatch.setenv("GITHUB_EVENT_PATH", event_file(tmp_path, {
        "workflow_run": {"head_sha": github.head_sha, "pull_requests": []}}))
    assert post(github, run_dir) == 0 and len(github.review_comments) == 1


def test_the_prefect_task_posts_too(github, run_dir, monkeypatch):
    monkeypatch.setenv("GITHUB_REPOSITORY", github.repo)
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    write_suggestions(run_dir, train_row_fix())
    said = post_run.fn(str(run_dir), "github", github.number)  # the flow's step
    assert said.startswith(f"posted on GitHub, {github.repo} pull request #{github.number}: "
                           "done"), said
    assert "1 suggestion(s) inline, 0 in the fallback comment" in said
    assert len(github.issue_comments) == 1 and len(github.review_comments) == 1
    assert len(github.check_runs) == 1


def test_dry_run_only_reads(github, run_dir, capsys, tmp_path):
    write_suggestions(run_dir, train_row_fix(), line_fix(WORKFLOW_LINE))
    assert post(github, run_dir, "--dry-run") == 0
    assert github.writes() == [] and not (tmp_path / "step-summary.md").exists()
    out = capsys.readouterr().out
    assert f"== create_review_comment at {REPO_PATH}:{TRAIN_ROW}" in out
    assert TRAIN_ROW_REPLACEMENT in out and "would do" in out


def test_the_token_never_shows(github, run_dir, capsys, monkeypatch, tmp_path):
    write_suggestions(run_dir, train_row_fix())
    assert post(github, run_dir) == 0
    assert all(r.authorized for r in github.requests)
    files = "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())
    out = capsys.readouterr()
    job = (tmp_path / "step-summary.md").read_text()
    assert TOKEN not in json.dumps(bodies(github)) + files + out.out + out.err + job

    monkeypatch.setenv("AEVAL_GITHUB_TOKEN", "ghs_wrongToken_xyz")
    assert post(github, run_dir) == 2
    out = capsys.readouterr()
    assert "401" in out.err and "ghs_wrongToken_xyz" not in out.out + out.err


def test_usage_errors_and_the_summary_without_a_token(github, run_dir, capsys, monkeypatch,
                                                      tmp_path):
    monkeypatch.delenv("AEVAL_GITHUB_TOKEN")
    assert post(github, run_dir) == 2
    assert "AEVAL_GITHUB_TOKEN" in capsys.readouterr().err
    assert post_main(["post", str(run_dir), "--forge", "github"]) == 2
    assert "GITHUB_REPOSITORY" in capsys.readouterr().err
    assert github.requests == []
    # the untrusted job has no token: it still writes the gate into its job summary
    assert post_main(["post", str(run_dir), "--summary-only"]) == 0
    assert "gate: exit 1" in (tmp_path / "step-summary.md").read_text()
    assert github.requests == []


def test_unreachable_github_is_an_environment_error(run_dir, monkeypatch, capsys):
    monkeypatch.setenv("AEVAL_GITHUB_TOKEN", TOKEN)
    monkeypatch.setattr(github_adapter, "WRITE_INTERVAL_S", 0)
    write_suggestions(run_dir, train_row_fix())
    rc = post_main(["post", str(run_dir), "--forge", "github", "--repo", "acme/skills",
                    "--pr", "1", "--github-api-url", "http://127.0.0.1:9",
                    "--repo-root", str(ROOT)])
    err = capsys.readouterr().err
    assert rc == 3 and "GitHub get pull request" in err and TOKEN not in err


ENV_REPORT = '''#!/usr/bin/env python3
"""Write the environment this script runs with, one NAME=value a line."""
import argparse
import os
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
out = Path(ap.parse_args().out)
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("".join(f"{k}={v}\\n" for k, v in sorted(os.environ.items())))
print(f"wrote {len(os.environ)} variables to {out}")
'''


def env_report_skill(root: Path) -> Path:
    """A skill whose documented step writes the environment it sees to outputs/env.txt."""
    skill = root / "env-report"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: env-report\ndescription: Writes the environment variables a job sees to "
        "a file, to debug CI configuration.\n---\n\n# env-report\n\n"
        "```bash\npython3 scripts/env_report.py --out outputs/env.txt\n```\n")
    script = skill / "scripts" / "env_report.py"
    script.write_text(ENV_REPORT)
    script.chmod(0o755)
    (skill / "eval.config").write_text(json.dumps({"evals": [{
        "id": "report", "prompt": "Write the job's environment to outputs/env.txt.",
        "expected_outcome": "outputs/env.txt lists the environment.",
        "steps": ["python3 $SKILL_DIR/scripts/env_report.py --out outputs/env.txt"],
        "assertions": [{"type": "file_contains", "path": "outputs/env.txt",
                        "pattern": "^PATH="}]}]}))
    return skill


@pytest.mark.usefixtures("prefect_harness")
def test_the_tokens_never_reach_the_executor(tmp_path, monkeypatch):
    """In the Action the run step has no token; should a workflow leak one into it anyway
    (`env:` at the job level), the skill's processes still never see it."""
    from aeval.deployments.cli.main import main

    secrets = {"AEVAL_GITHUB_TOKEN": "ghs_aevalCanary111", "GITHUB_TOKEN": "ghs_canary222",
               "GH_TOKEN": "gho_canary333", "ACTIONS_RUNTIME_TOKEN": "canary444",
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "canary555"}
    for k, v in secrets.items():
        monkeypatch.setenv(k, v)
    skill = env_report_skill(tmp_path)
    store = tmp_path / "store"
    assert main(["run", str(skill), "--runtime", "literal", "--out", str(store), "-q"]) == 0
    (run,) = (store / "runs").iterdir()
    seen = "".join(p.read_text() for p in run.rglob("outputs/env.txt"))  # steps, doc test
    assert "PATH=" in seen
    leaked = [k for k, v in secrets.items() if v in seen or f"\n{k}=" in f"\n{seen}"]
    assert leaked == []
    everything = "".join(p.read_text(errors="replace") for p in run.rglob("*") if p.is_file())
    assert not any(v in everything for v in secrets.values())


def test_a_contract_cannot_ask_for_a_forge_token(tmp_path, capsys):
    from aeval.deployments.cli.main import main

    skill = env_report_skill(tmp_path)
    config = json.loads((skill / "eval.config").read_text())
    for name in ("AEVAL_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN"):
        config["evals"][0]["required_credentials"] = [name]
        (skill / "eval.config").write_text(json.dumps(config))
        assert main(["validate", str(skill)]) == 2, name
        assert name in capsys.readouterr().out


def test_transient_errors_are_retried_by_pygithub(github, run_dir):
    write_suggestions(run_dir, train_row_fix())
    github.fail_next(502, count=2)
    assert post(github, run_dir) == 0
    assert [r.status for r in github.requests[:3]] == [502, 502, 200]
    assert len(github.review_comments) == 1 and len(github.issue_comments) == 1


def test_a_suggestion_that_deletes_lines_applies(github, run_dir):
    context = TRAIN_ROW + 1
    write_suggestions(run_dir, FixSuggestion(
        level="LV2", grounded_in="train:A3", path="SKILL.md", start_line=context,
        end_line=context, original=LINES[context - 1], replacement="",
        rationale="The row documents an action the script does not have.", validated=False))
    assert post(github, run_dir) == 0
    (comment,) = github.review_comments
    assert "```suggestion\n```" in comment["body"]
    applied = apply_suggestion(SKILL_MD.read_text(), comment).splitlines()
    assert applied == LINES[:context - 1] + LINES[context:]


def test_more_than_fifty_annotations_go_in_batches(github):
    from aeval.adapters.forges.github import Annotation, GitHubPR, GitHubTarget

    pr = GitHubPR(GitHubTarget.resolve(github.repo, github.number, github.url, environ={}),
                  TOKEN)
    notes = [Annotation(path=REPO_PATH, start_line=n, end_line=n, annotation_level="notice",
                        message=f"line {n}") for n in range(1, 62)]
    pr.create_check_run(github.head_sha, conclusion="failure", title="gate: exit 1",
                        summary="s", annotations=notes)
    (check,) = github.check_runs
    assert [a["start_line"] for a in check["annotations"]] == list(range(1, 62))
    assert [(r.method, len(r.body["output"]["annotations"])) for r in github.writes()] == [
        ("POST", 50), ("PATCH", 11)]


# ---- issue 33: a forged run folder cannot make a green check ------------------------------------


def forge_green(run_dir: Path) -> None:
    """What a fork's own `pull_request` workflow can upload: the real run folder with run.json
    rewritten to a passing gate, and every grading.json with it."""
    path = run_dir / "run.json"
    data = json.loads(path.read_text())
    data["gate"] = {**data["gate"], "exit_code": 0, "reason": "all cases passed"}
    for skill in data["skills"]:
        skill["status"] = "pass"
        for case in skill["cases"]:
            case.update(status="pass", failed=0, passed=case["total"])
    path.write_text(json.dumps(data))
    for grading in run_dir.rglob("grading.json"):
        g = json.loads(grading.read_text())
        g["status"] = "pass"
        grading.write_text(json.dumps(g))


@pytest.fixture
def fork_github(github):
    """The same pull request, its head in a fork."""
    github.head_repo = "fork-owner/skills"
    return github


def test_a_forks_forged_green_run_makes_no_passing_check(fork_github, run_dir):
    """A fork controls the workflow that uploads its run folder: a run.json that says pass
    gets a check run no required status accepts, titled as the fork's own report."""
    forge_green(run_dir)
    assert post(fork_github, run_dir) == 0
    (check,) = fork_github.check_runs
    assert check["conclusion"] == "action_required"
    assert check["output"]["title"].startswith("a fork's report, not verified: gate: exit 0")
    assert "A fork's pull request:" in check["output"]["summary"]


def test_a_forks_failing_run_still_fails_its_check(fork_github, run_dir):
    assert post(fork_github, run_dir) == 0
    (check,) = fork_github.check_runs
    assert check["conclusion"] == "failure"
    assert check["output"]["title"].startswith("a fork's report, not verified: gate: exit 1")


def test_a_same_repository_pass_is_a_success(github, run_dir):
    """A branch of the repository itself is pushed by someone who can write to it (and so to
    its workflows anyway): its gate is the check's conclusion."""
    forge_green(run_dir)
    assert post(github, run_dir) == 0
    (check,) = github.check_runs
    assert (check["conclusion"], check["output"]["title"]) == ("success",
                                                               "gate: exit 0 (all cases passed)")
