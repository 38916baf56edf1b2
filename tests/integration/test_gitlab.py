"""Posting a real run of the segmentation example on a fake GitLab MR (loopback server).

The run comes from `aeval run` on examples/marketplace/skills/segmentation (literal runtime);
the suggestions are written with the pydantic models, as the suggester will write them.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.artifacts import FixSuggestion, FixSuggestions
from aeval.deployments.cli.post import main as post_main
from aeval.run.store import write_model
from aeval.tasks.deliver.post import post_run
from aeval.tasks.deliver.read_run import (
    CODE_QUALITY_FILE,
)
from tests.conftest import EXAMPLES, ROOT
from tests.fakes import FakeGitLab, diff_from_texts
from tests.unit.test_deliver import CODE_QUALITY_SCHEMA, check_junit

pytestmark = pytest.mark.integration

TOKEN = "glpat-fake-0123456789abcdef"
SKILL_DIR = EXAMPLES / "skills" / "segmentation"
SKILL_MD = SKILL_DIR / "SKILL.md"
REPO_PATH = SKILL_MD.relative_to(ROOT).as_posix()
LINES = SKILL_MD.read_text().splitlines()
TRAIN_ROW = next(i for i, ln in enumerate(LINES, 1) if "| `segment_train` |" in ln)
WORKFLOW_LINE = next(i for i, ln in enumerate(LINES, 1) if ln.startswith("1. Train:"))
TRAIN_ROW_REPLACEMENT = LINES[TRAIN_ROW - 1].replace("`segment_train`", "`train`")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """One real run of the segmentation skill (both cases fail on `segment_train`)."""
    store = tmp_path_factory.mktemp("store")
    aeval = Path(sys.executable).parent / "aeval"
    cmd = [str(aeval)] if aeval.exists() else [sys.executable, "-m", "aeval.deployments.cli.main"]
    proc = subprocess.run([*cmd, "run", str(SKILL_DIR), "--out", str(store), "-q"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a skill defect
    (run_dir,) = (store / "runs").iterdir()
    return run_dir


@pytest.fixture
def run_dir(finished_run: Path, tmp_path: Path) -> Path:
    """A private copy of the run, so each test writes its own suggestions."""
    dst = tmp_path / "store" / "runs" / finished_run.name
    shutil.copytree(finished_run, dst)
    return dst


@pytest.fixture
def gitlab(monkeypatch):
    """A fake MR whose diff changed the `segment_train` row of SKILL.md (and its neighbours
    are context), with the token in the environment and no CI variables."""
    new = SKILL_MD.read_text()
    old = new.splitlines(keepends=True)
    old[TRAIN_ROW - 1] = "| `segment_train` | trains a model |\n"
    fake = FakeGitLab(token=TOKEN, per_page=2, diffs=[
        {"old_path": REPO_PATH, "new_path": REPO_PATH, "diff": diff_from_texts("".join(old),
                                                                               new)},
        {"old_path": "README.md", "new_path": "README.md", "diff": "@@ -1 +1 @@\n-a\n+b\n"},
        {"old_path": "docs/old.md", "new_path": "docs/new.md", "renamed_file": True,
         "diff": ""}])
    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", TOKEN)
    for var in ("CI_SERVER_URL", "CI_PROJECT_ID", "CI_MERGE_REQUEST_IID", "AEVAL_REPORT_URL"):
        monkeypatch.delenv(var, raising=False)
    with fake:
        yield fake


def write_suggestions(run_dir: Path, *fixes: FixSuggestion) -> None:
    write_model(run_dir / "segmentation" / "literal" / "fix_suggestions.json", FixSuggestions(
        skill="segmentation", runtime="literal", suggestions=list(fixes),
        causal_share=1.0 if fixes else None))


def train_row_fix() -> FixSuggestion:
    return FixSuggestion(
        level="LV1", grounded_in="train:A3", path="SKILL.md", start_line=TRAIN_ROW,
        end_line=TRAIN_ROW, original=LINES[TRAIN_ROW - 1], replacement=TRAIN_ROW_REPLACEMENT,
        rationale="scripts/run.py registers `train`, not `segment_train` (KeyError).",
        validated=False)


def line_fix(line: int, level: str = "LV2") -> FixSuggestion:
    return FixSuggestion(
        level=level, grounded_in="train:A3", path="SKILL.md", start_line=line, end_line=line,
        original=LINES[line - 1], replacement=LINES[line - 1].replace("segment_", "") + " ",
        rationale=f"line {line} names a wrong action.", validated=False)


def post(fake: FakeGitLab, run_dir: Path, *extra: str) -> int:
    return post_main(["post", str(run_dir), "--mr", str(fake.mr_iid), "--project",
                      str(fake.project_id), "--gitlab-url", fake.url, "--repo-root", str(ROOT),
                      *extra])


def writes(fake: FakeGitLab) -> list[tuple[str, str]]:
    base = f"/api/v4/projects/{fake.project_id}/merge_requests/{fake.mr_iid}"
    return [(r.method, r.path.removeprefix(base)) for r in fake.writes()]


# ---- the done-when criteria -------------------------------------------------------------------


def test_one_inline_suggestion_on_the_action_row_plus_the_summary_note(gitlab, run_dir):
    write_suggestions(run_dir, train_row_fix())
    assert post(gitlab, run_dir, "--report-url", "https://ci.example/-/jobs/9/artifacts") == 0

    assert sorted(writes(gitlab)) == [("POST", "/discussions"), ("POST", "/notes")]
    assert all(r.status in (200, 201) for r in gitlab.requests)
    paths = [r.path for r in gitlab.requests]
    assert any(p.endswith("/diffs") for p in paths) and not any(p.endswith("/changes")
                                                               for p in paths)
    inline = [d for d in gitlab.discussions if not d["individual_note"]]
    assert len(inline) == 1 and len(inline[0]["notes"]) == 1
    note = inline[0]["notes"][0]
    pos = note["position"]
    assert (pos["new_path"], pos["old_path"], pos["new_line"]) == (REPO_PATH, REPO_PATH,
                                                                   TRAIN_ROW)
    assert pos.get("old_line") is None  # an added line
    assert pos["head_sha"] == gitlab.diff_refs["head_sha"]
    block = re.search(r"^```suggestion:-0\+0\n(.*?)\n```$", note["body"], re.M | re.S)
    assert block and block.group(1) == TRAIN_ROW_REPLACEMENT
    assert "LV1" in note["body"] and "`train:A3`" in note["body"]
    (summary,) = [d["notes"][0] for d in gitlab.discussions if d["individual_note"]]
    assert summary["body"].startswith("<!-- aeval:skill=segmentation folder=examples%2F"
                                      "marketplace%2Fskills%2Fsegmentation -->")
    assert "KeyError: 'segment_train'" in summary["body"]
    assert "| `train` | literal | **fail**" in summary["body"]
    assert "https://ci.example/-/jobs/9/artifacts" in summary["body"]


def test_posting_the_same_run_again_creates_nothing(gitlab, run_dir):
    write_suggestions(run_dir, train_row_fix(), line_fix(WORKFLOW_LINE))
    assert post(gitlab, run_dir) == 0
    before = gitlab.discussions
    assert len(gitlab.writes()) == 3  # summary note, inline discussion, fallback note
    gitlab.clear_requests()

    assert post(gitlab, run_dir) == 0
    assert gitlab.writes() == []
    assert {r.method for r in gitlab.requests} == {"GET"}
    assert gitlab.discussions == before


def test_a_suggestion_outside_the_diff_goes_to_the_fallback_note(gitlab, run_dir):
    write_suggestions(run_dir, line_fix(WORKFLOW_LINE, "LV1"))
    assert post(gitlab, run_dir) == 0
    assert [r.status for r in gitlab.requests if r.status >= 400] == []
    assert writes(gitlab) == [("POST", "/notes"), ("POST", "/notes")]
    (fallback,) = [n for n in gitlab.notes if n["body"].startswith("<!-- aeval:fallback -->")]
    assert f"`{REPO_PATH}` lines {WORKFLOW_LINE}-{WORKFLOW_LINE}" in fallback["body"]
    assert f"--- a/{REPO_PATH}" in fallback["body"] and "```diff" in fallback["body"]
    assert "Prompt for an agent" in fallback["body"]
    assert not any(d["notes"][0].get("position") for d in gitlab.discussions)


def test_code_quality_and_junit_of_the_run_validate(gitlab, run_dir):
    import jsonschema

    write_suggestions(run_dir, train_row_fix(), line_fix(WORKFLOW_LINE))
    assert post(gitlab, run_dir) == 0
    data = json.loads((run_dir / CODE_QUALITY_FILE).read_text())
    jsonschema.validate(data, CODE_QUALITY_SCHEMA)
    assert sorted((d["severity"], d["location"]["lines"]["begin"]) for d in data) == sorted(
        [("major", TRAIN_ROW), ("minor", WORKFLOW_LINE)])
    assert {d["location"]["path"] for d in data} == {REPO_PATH}
    root = check_junit((run_dir / "junit.xml").read_bytes())
    assert [c.get("name") for c in root.iter("testcase")] == ["inference", "train"]


# ---- updates and resolution -------------------------------------------------------------------


def test_context_lines_take_old_and_new_line(gitlab, run_dir):
    write_suggestions(run_dir, line_fix(TRAIN_ROW + 1))  # context line after the changed row
    assert post(gitlab, run_dir) == 0
    (d,) = [d for d in gitlab.discussions if not d["individual_note"]]
    pos = d["notes"][0]["position"]
    assert (pos["old_line"], pos["new_line"]) == (TRAIN_ROW + 1, TRAIN_ROW + 1)


def test_rerun_edits_notes_and_resolves_what_no_longer_applies(gitlab, run_dir):
    write_suggestions(run_dir, train_row_fix())
    assert post(gitlab, run_dir) == 0
    (disc,) = [d for d in gitlab.discussions if not d["individual_note"]]
    gitlab.clear_requests()

    write_suggestions(run_dir)  # the next run suggests nothing
    assert post(gitlab, run_dir) == 0
    assert sorted(writes(gitlab)) == sorted([
        ("PUT", f"/notes/{gitlab.notes[0]['id']}"),
        ("PUT", f"/discussions/{disc['id']}/notes/{disc['notes'][0]['id']}"),
        ("PUT", f"/discussions/{disc['id']}")])
    (after,) = [d for d in gitlab.discussions if not d["individual_note"]]
    assert after["notes"][0]["resolved"] and "<!-- aeval:outdated -->" in after["notes"][0][
        "body"]
    gitlab.clear_requests()

    write_suggestions(run_dir, train_row_fix())  # and then again: reopened, not duplicated
    assert post(gitlab, run_dir) == 0
    assert not any(m == "POST" for m, _ in writes(gitlab))
    (again,) = [d for d in gitlab.discussions if not d["individual_note"]]
    assert not again["notes"][0]["resolved"]
    assert "```suggestion:-0+0" in again["notes"][0]["body"]


def test_a_refused_position_falls_back_instead_of_failing(gitlab, run_dir, monkeypatch):
    monkeypatch.setattr(gitlab, "position_error", lambda pos: "line_code x must be a valid "
                                                              "line code")
    write_suggestions(run_dir, train_row_fix())
    assert post(gitlab, run_dir) == 0
    assert [r.status for r in gitlab.requests if r.method == "POST"].count(400) == 1
    (fallback,) = [n for n in gitlab.notes if n["body"].startswith("<!-- aeval:fallback -->")]
    assert TRAIN_ROW_REPLACEMENT in fallback["body"]


def test_notes_of_others_are_never_taken_for_aeval_notes(gitlab, run_dir):
    gitlab.add_note("> <!-- aeval:skill=segmentation -->\n> quoted by a reviewer")
    gitlab.add_note("<!-- aeval:skill=segmentation -->\ncopied by a reviewer")
    write_suggestions(run_dir, train_row_fix())
    assert post(gitlab, run_dir) == 0
    assert sorted(writes(gitlab)) == [("POST", "/discussions"), ("POST", "/notes")]
    assert not any(m == "PUT" for m, _ in writes(gitlab))


# ---- transport, configuration, secrets --------------------------------------------------------


def test_transient_errors_are_retried_by_python_gitlab(gitlab, run_dir):
    write_suggestions(run_dir, train_row_fix())
    gitlab.fail_next(502, count=2)
    assert post(gitlab, run_dir) == 0
    assert [r.status for r in gitlab.requests[:3]] == [502, 502, 200]
    assert len([d for d in gitlab.discussions if not d["individual_note"]]) == 1


def test_mr_from_ci_variables_and_the_prefect_task(gitlab, run_dir, monkeypatch):
    monkeypatch.setenv("CI_SERVER_URL", gitlab.url)
    monkeypatch.setenv("CI_PROJECT_ID", gitlab.project_path)  # a path works as an id
    monkeypatch.setenv("CI_MERGE_REQUEST_IID", str(gitlab.mr_iid))
    monkeypatch.setenv("AEVAL_REPORT_URL", "https://ci.example/report")
    write_suggestions(run_dir, train_row_fix())
    said = post_run.fn(str(run_dir))  # the flow's step: the forge and MR from CI variables
    assert said.startswith(f"posted on GitLab, {gitlab.url} project {gitlab.project_path} "
                           f"MR !{gitlab.mr_iid}: done"), said
    assert "1 suggestion(s) inline, 0 in the fallback note" in said
    assert len([d for d in gitlab.discussions if not d["individual_note"]]) == 1
    assert "https://ci.example/report" in gitlab.notes[-1]["body"] + gitlab.notes[0]["body"]
    assert (run_dir / CODE_QUALITY_FILE).is_file()


def test_dry_run_only_reads(gitlab, run_dir, capsys):
    write_suggestions(run_dir, train_row_fix(), line_fix(WORKFLOW_LINE))
    assert post(gitlab, run_dir, "--dry-run") == 0
    assert gitlab.writes() == [] and not (run_dir / CODE_QUALITY_FILE).exists()
    out = capsys.readouterr().out
    assert "== create_discussion at" in out and TRAIN_ROW_REPLACEMENT in out
    assert "would do" in out


def test_the_token_never_shows(gitlab, run_dir, capsys, monkeypatch):
    write_suggestions(run_dir, train_row_fix())
    assert post(gitlab, run_dir) == 0
    assert all(r.authorized for r in gitlab.requests)
    bodies = json.dumps([r.body for r in gitlab.requests])
    files = "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())
    out = capsys.readouterr()
    assert TOKEN not in bodies + files + out.out + out.err

    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", "glpat-wrong-token-xyz")
    assert post(gitlab, run_dir) == 2
    out = capsys.readouterr()
    assert "401" in out.err and "glpat-wrong-token-xyz" not in out.out + out.err


def test_usage_errors(gitlab, run_dir, capsys, monkeypatch):
    monkeypatch.delenv("AEVAL_GITLAB_TOKEN")
    assert post(gitlab, run_dir) == 2
    assert "AEVAL_GITLAB_TOKEN" in capsys.readouterr().err
    assert post_main(["post", "no-such-run", "--out", str(run_dir.parent.parent)]) == 2
    assert gitlab.requests == []
    # without GitLab access a dry run still shows the bodies
    write_suggestions(run_dir, train_row_fix())
    assert post_main(["post", str(run_dir), "--dry-run", "--repo-root", str(ROOT)]) == 0
    assert TRAIN_ROW_REPLACEMENT in capsys.readouterr().out


def test_unreachable_gitlab_is_an_environment_error(run_dir, monkeypatch, capsys):
    import gitlab.utils

    monkeypatch.setattr(gitlab.utils.time, "sleep", lambda s: None)  # skip the backoff
    monkeypatch.setenv("AEVAL_GITLAB_TOKEN", TOKEN)
    write_suggestions(run_dir, train_row_fix())
    rc = post_main(["post", str(run_dir), "--mr", "1", "--project", "1", "--gitlab-url",
                    "http://127.0.0.1:9", "--repo-root", str(ROOT)])
    assert rc == 3 and "ConnectionError" in capsys.readouterr().err
