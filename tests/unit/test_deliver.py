"""Pure delivery: diff parsing, positions, bodies, fingerprints, plans, Code Quality, JUnit and
the CI template. No server: GitLab state is given as models."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
import yaml

from aeval.adapters.forges.gitlab import DiffRefs, MRFileDiff, RemoteDiscussion, RemoteNote
from aeval.artifacts import (
    CaseResult,
    ChangeMade,
    Expectation,
    FixSuggestion,
    FixSuggestions,
    GraderInfo,
    Grading,
    GradingSummary,
    RunManifest,
    SelfCorrection,
    SkillResult,
)
from aeval.run.store import write_model
from aeval.tasks.deliver.bodies import (
    code_quality_report,
    fallback_note_body,
    fenced,
    file_patch,
    github_suggestion_body,
    skill_note_body,
    suggestion_body,
    write_code_quality_report,
)
from aeval.tasks.deliver.gitlab import (
    DeliveryPlan,
    plan_delivery,
)
from aeval.tasks.deliver.read_run import (
    CODE_QUALITY_FILE,
    FALLBACK_MARKER,
    OUTDATED_MARKER,
    diff_index,
    fingerprint,
    inline_position,
    load_run,
    parse_hunks,
    skill_marker,
)
from aeval.tasks.run.publish import junit_xml
from tests.conftest import EXAMPLES, ROOT
from tests.fakes import diff_from_texts

SKILL_DIR = EXAMPLES / "skills" / "segmentation"
SKILL_MD = SKILL_DIR / "SKILL.md"
REPO_PATH = "examples/marketplace/skills/segmentation/SKILL.md"
LINES = SKILL_MD.read_text().splitlines()
TRAIN_ROW = next(i for i, ln in enumerate(LINES, 1) if ln.startswith("| `segment_train`"))
WORKFLOW_LINE = next(i for i, ln in enumerate(LINES, 1) if ln.startswith("1. Train:"))
REFS = DiffRefs(base_sha="a" * 40, start_sha="b" * 40, head_sha="c" * 40)
TEMPLATE = ROOT / "deployments" / "gitlab" / "aeval.gitlab-ci.yml"

# GitLab's Code Quality report, as its documentation describes it.
CODE_QUALITY_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "pattern": r"^[^/]"},
                    "lines": {"type": "object", "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1}}},
                },
            },
        },
    },
}


def train_row_fix(**kw) -> FixSuggestion:
    """The LV1 fix of the example: the action is `train`, not `segment_train`."""
    line = LINES[TRAIN_ROW - 1]
    return FixSuggestion(**{
        "level": "LV1", "grounded_in": "train:A3", "path": "SKILL.md",
        "start_line": TRAIN_ROW, "end_line": TRAIN_ROW, "original": line,
        "replacement": line.replace("`segment_train`", "`train`"),
        "rationale": "scripts/run.py registers the action `train`; `segment_train` is a "
                     "KeyError.", "validated": False, **kw})


def workflow_fix(**kw) -> FixSuggestion:
    line = LINES[WORKFLOW_LINE - 1]
    return FixSuggestion(**{
        "level": "LV2", "grounded_in": "train:A3", "path": "SKILL.md",
        "start_line": WORKFLOW_LINE, "end_line": WORKFLOW_LINE, "original": line,
        "replacement": line.replace("segment_train", "train"),
        "rationale": "The workflow names the same wrong action.", "validated": False, **kw})


SEG_FOLDER = "examples/marketplace/skills/segmentation"
"""The segmentation skill's folder from the repository root: its notes' identity."""


def make_run(store: Path, run_id: str, suggestions: list[FixSuggestion],
             created: datetime | None = None) -> Path:
    """A finished run folder of the segmentation skill with one failed case (train)."""
    run_dir = store / "runs" / run_id
    exps = [
        Expectation(id="A1", text="File outputs/model.json exists", kind="deterministic",
                    status="failed", passed=False, terminal_passed=False,
                    evidence="outputs/model.json does not exist in the workspace",
                    graded_by="check"),
        Expectation(id="A3", text="Every command of the run succeeded on the first attempt",
                    kind="deterministic", status="failed", passed=False, terminal_passed=True,
                    evidence="[2] `run.py segment_train` exited 1:\nKeyError: 'segment_train'",
                    graded_by="check"),
        Expectation(id="S1", text="The skill's files were not modified during execution",
                    kind="structural", status="passed", passed=True, terminal_passed=True,
                    graded_by="structural"),
    ]
    grading = Grading(
        skill="segmentation", case_id="train", runtime="builtin", status="fail",
        status_reason="1/3 first-attempt", expectations=exps,
        summary=GradingSummary(passed=1, failed=2, ungraded=0, total=3, pass_rate=1 / 3,
                               first_attempt_pass_rate=1 / 3, terminal_pass_rate=1.0),
        self_correction=SelfCorrection(was_needed=True, changes_made=[ChangeMade(
            id="C1", path="SKILL.md", change="modified", diff="-segment_train\n+train",
            event_seq=5, attribution="direct")]),
        grader=GraderInfo(model=None, protocol_fidelity=True))
    case = CaseResult(case_id="train", runtime="builtin", status="fail",
                      reason="1/3 first-attempt", passed=1, failed=2, total=3,
                      first_attempt_pass_rate=1 / 3, terminal_pass_rate=1.0,
                      self_corrections=1, dir="segmentation/builtin/train")
    write_model(run_dir / case.dir / "grading.json", grading)
    write_model(run_dir / "segmentation/builtin/fix_suggestions.json", FixSuggestions(
        skill="segmentation", runtime="builtin", suggestions=suggestions,
        causal_share=1.0 if suggestions else None))
    created = created or datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    manifest = RunManifest(
        run_id=run_id, created_at=created, finished_at=created, status="finished",
        aeval_version="0.1.0", paths=[str(SKILL_DIR)], runtimes=["builtin"],
        skills=[SkillResult(name="segmentation", path=str(SKILL_DIR), status="fail",
                            tier="per-skill", cases=[case])],
        totals={"fail": 1}, gate={"exit_code": 1, "reason": "1 case(s) failed"})
    write_model(run_dir / "run.json", manifest)
    return run_dir


def mr_diffs(changed_line: int = TRAIN_ROW) -> list[MRFileDiff]:
    """The MR changed one line of SKILL.md (3 lines of context each side)."""
    new = SKILL_MD.read_text()
    old_lines = new.splitlines(keepends=True)
    old_lines[changed_line - 1] = "| old row |\n"
    return [MRFileDiff(old_path=REPO_PATH, new_path=REPO_PATH,
                       diff=diff_from_texts("".join(old_lines), new))]


# ---- diff hunks and positions -----------------------------------------------------------------


def test_parse_hunks_maps_added_and_context_lines():
    diff = "@@ -3,4 +3,5 @@ title\n ctx3\n-gone\n+new4\n+new5\n ctx6\n\\ No newline\n" \
           "@@ -20,2 +21,1 @@\n ctx21\n-gone2\n"
    assert parse_hunks(diff) == {3: 3, 4: None, 5: None, 6: 5, 21: 20}


def test_inline_position_added_context_and_outside(tmp_path):
    run = make_run(tmp_path, "r1", [train_row_fix(), workflow_fix(),
                                    train_row_fix(start_line=TRAIN_ROW - 2,
                                                  end_line=TRAIN_ROW - 2,
                                                  original=LINES[TRAIN_ROW - 3])])
    by_line = {s.suggestion.start_line: s for s in load_run(run, ROOT).suggestions()}
    index = diff_index(mr_diffs())
    added = inline_position(by_line[TRAIN_ROW], index, REFS)
    assert added.new_line == TRAIN_ROW and added.old_line is None
    assert added.new_path == added.old_path == REPO_PATH
    assert added.model_dump()["position_type"] == "text"
    context = inline_position(by_line[TRAIN_ROW - 2], index, REFS)
    assert (context.old_line, context.new_line) == (TRAIN_ROW - 2, TRAIN_ROW - 2)
    assert inline_position(by_line[WORKFLOW_LINE], index, REFS) is None
    assert inline_position(by_line[TRAIN_ROW], index, None) is None


def test_multiline_suggestion_needs_every_line_in_the_diff(tmp_path):
    end = TRAIN_ROW + 4  # the hunk of the changed row ends 3 lines after it
    run = make_run(tmp_path, "r1", [train_row_fix(
        end_line=end, original="\n".join(LINES[TRAIN_ROW - 1:end]))])
    s = load_run(run, ROOT).suggestions()[0]
    assert inline_position(s, diff_index(mr_diffs()), REFS) is None
    covering = inline_position(s, diff_index(mr_diffs(changed_line=TRAIN_ROW + 2)), REFS)
    assert covering is not None and covering.new_line == TRAIN_ROW


# ---- bodies -----------------------------------------------------------------------------------


def test_suggestion_body_replaces_exactly_the_suggested_lines(tmp_path):
    fix = train_row_fix(end_line=TRAIN_ROW + 1, original="\n".join(LINES[TRAIN_ROW - 1:
                                                                          TRAIN_ROW + 1]),
                        replacement="| `train` | trains |\n| `evaluate` | evaluates |\n")
    s = load_run(make_run(tmp_path, "r1", [fix]), ROOT).suggestions()[0]
    body = suggestion_body(s)
    assert s.folder == "examples/marketplace/skills/segmentation"
    assert body.startswith(f"<!-- aeval:suggestion={s.fingerprint} "
                           "skill=examples%2Fmarketplace%2Fskills%2Fsegmentation -->\n")
    block = re.search(r"^```suggestion:-0\+(\d+)\n(.*?)\n```$", body, re.M | re.S)
    assert block and block.group(1) == "1"
    assert block.group(2) == "| `train` | trains |\n| `evaluate` | evaluates |"
    assert "LV1" in body and fix.rationale in body
    assert "`train:A3`" in body and "Every command of the run succeeded" in body


def test_fences_outgrow_backticks_inside():
    assert fenced("a ``` b", "suggestion:-0+0").startswith("````suggestion:-0+0\n")
    assert fenced("plain").startswith("```text\n")


def test_skill_note_has_verdict_rates_evidence_and_link(tmp_path):
    bundle = load_run(make_run(tmp_path, "r1", [train_row_fix()]), ROOT)
    body = skill_note_body(bundle.skills[0], bundle.manifest,
                           report_url="https://ci.example/-/jobs/1/artifacts", inline=1)
    assert body.startswith(skill_marker("segmentation", SEG_FOLDER) + "\n")
    assert "fail" in body and "r1" in body
    assert "| `train` | builtin | **fail** | 33% (1/3) | 100% | 1 |" in body
    assert "A1: `File outputs/model.json exists`" in body
    assert "outputs/model.json does not exist" in body
    assert "(passed only after a correction)" in body  # A3: terminal pass, first-attempt fail
    assert "C1: modified `SKILL.md`" in body
    assert "[full report](https://ci.example/-/jobs/1/artifacts)" in body
    assert "1 inline on the diff" in body


def test_fallback_note_has_patch_that_applies_and_a_prompt(tmp_path):
    bundle = load_run(make_run(tmp_path, "r1", [workflow_fix(), train_row_fix()]), ROOT)
    body = fallback_note_body(bundle.suggestions(), bundle.manifest, ROOT)
    assert body.startswith(FALLBACK_MARKER + "\n")
    assert "### Prompt for an agent" in body and "replace lines" in body
    patch = re.search(r"^```diff\n(.*?)^```$", body, re.M | re.S).group(1)
    assert patch.startswith(f"--- a/{REPO_PATH}\n+++ b/{REPO_PATH}\n")
    _git_apply(tmp_path / "ctx", patch)


def test_a_command_fix_is_shown_as_a_command_never_as_a_patch(tmp_path):
    """A static fix whose fix is a file mode (``chmod +x``): the fallback note, the agent
    prompt and a GitHub review comment give the command and where to run it; no patch and no
    one-click suggestion stand for it, while a line fix beside it keeps its patch."""
    line = LINES[WORKFLOW_LINE - 1]
    chmod = FixSuggestion(level="LV1", grounded_in="train:S0", path="SKILL.md",
                          start_line=WORKFLOW_LINE, end_line=WORKFLOW_LINE, original=line,
                          replacement=line, rationale="scripts/run.py is not executable.",
                          validated=False, source="static",
                          command="chmod +x scripts/run.py")
    bundle = load_run(make_run(tmp_path, "r1", [chmod, train_row_fix(source="static")]), ROOT)
    by_cmd = {s.suggestion.command: s for s in bundle.suggestions()}
    body = fallback_note_body(bundle.suggestions(), bundle.manifest, ROOT)
    assert f"Run in the skill's folder `{SEG_FOLDER}`" in body
    assert "```sh\nchmod +x scripts/run.py\n```" in body
    assert f"In the folder `{SEG_FOLDER}`, run: `chmod +x scripts/run.py`" in body
    (patch,) = re.findall(r"^```diff\n(.*?)^```$", body, re.M | re.S)
    added = [ln for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("++")]
    assert added == [f"+{train_row_fix().replacement}"]  # the line fix only
    review = github_suggestion_body(by_cmd["chmod +x scripts/run.py"])
    assert "```suggestion" not in review and "chmod +x scripts/run.py" in review
    assert "```suggestion\n" + train_row_fix().replacement in github_suggestion_body(
        by_cmd[None])


def test_zero_context_patch_applies(tmp_path):
    patch = file_patch(REPO_PATH, [workflow_fix(), train_row_fix()], None)
    _git_apply(tmp_path / "zero", patch, "--unidiff-zero")


def _git_apply(repo: Path, patch: str, *flags: str) -> None:
    if not shutil.which("git"):
        pytest.skip("git not installed")
    (repo / Path(REPO_PATH).parent).mkdir(parents=True)
    shutil.copy(SKILL_MD, repo / REPO_PATH)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "fix.patch").write_text(patch)
    subprocess.run(["git", "-C", str(repo), "apply", *flags, "fix.patch"], check=True)
    text = (repo / REPO_PATH).read_text()
    assert "| `train` |" in text and "run.py train --data" in text
    assert "segment_train" not in text


# ---- fingerprints and Code Quality ------------------------------------------------------------


def test_fingerprints_are_stable_across_reruns(tmp_path):
    a = load_run(make_run(tmp_path, "20261130-090000-aaaaaa", [train_row_fix()]), ROOT)
    b = load_run(make_run(tmp_path, "20261201-120000-bbbbbb", [train_row_fix()],
                          created=datetime(2026, 12, 1, 12, tzinfo=UTC)), ROOT)
    fa, fb = a.suggestions()[0].fingerprint, b.suggestions()[0].fingerprint
    assert fa == fb
    assert [i.fingerprint for i in code_quality_report(a)] == [fb]
    changed = fingerprint("segmentation", REPO_PATH, a.suggestions()[0].grounded_text, "other")
    assert changed != fa


def test_code_quality_report_validates(tmp_path):
    bundle = load_run(make_run(tmp_path, "r1", [train_row_fix(), workflow_fix()]), ROOT)
    path = write_code_quality_report(bundle)
    assert path.name == CODE_QUALITY_FILE
    data = json.loads(path.read_text())
    jsonschema.validate(data, CODE_QUALITY_SCHEMA)
    assert {(d["severity"], d["location"]["lines"]["begin"]) for d in data} == {
        ("major", TRAIN_ROW), ("minor", WORKFLOW_LINE)}
    assert {d["location"]["path"] for d in data} == {REPO_PATH}
    assert len({d["fingerprint"] for d in data}) == 2


def test_stale_or_unmapped_suggestions_are_skipped(tmp_path):
    stale = train_row_fix(original="| `segment_train` | something else |")
    bundle = load_run(make_run(tmp_path, "r1", [stale]), ROOT)
    assert "stale" in bundle.suggestions()[0].problem
    assert code_quality_report(bundle) == []
    plan = plan_delivery(bundle, refs=REFS, diffs=mr_diffs(), notes=[], discussions=[])
    assert [a.kind for a in plan.actions] == ["create_note"] and plan.skipped
    outside = load_run(make_run(tmp_path / "o", "r1", [train_row_fix()]), tmp_path)
    assert "repository" in outside.suggestions()[0].problem


def test_skill_folder_maps_into_the_git_repository(tmp_path):
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    bundle = load_run(make_run(tmp_path, "r1", [train_row_fix()]))
    assert bundle.suggestions()[0].repo_path == REPO_PATH


# ---- planning ---------------------------------------------------------------------------------


def _as_remote(plan: DeliveryPlan) -> tuple[list[RemoteNote], list[RemoteDiscussion]]:
    """What GitLab would hold after the plan's creations."""
    notes, discussions = [], []
    for i, a in enumerate(plan.actions):
        if a.kind == "create_note":
            notes.append(RemoteNote(id=i, body=a.body))
        elif a.kind == "create_discussion":
            discussions.append(RemoteDiscussion(id=f"d{i}", notes=[RemoteNote(
                id=100 + i, body=a.body, resolvable=True, position=a.position.model_dump())]))
    return notes, discussions


def test_plan_then_replan_is_empty(tmp_path):
    bundle = load_run(make_run(tmp_path, "r1", [train_row_fix(), workflow_fix()]), ROOT)
    first = plan_delivery(bundle, refs=REFS, diffs=mr_diffs(), notes=[], discussions=[])
    assert sorted(a.kind for a in first.actions) == ["create_discussion", "create_note",
                                                     "create_note"]
    notes, discussions = _as_remote(first)
    again = plan_delivery(bundle, refs=REFS, diffs=mr_diffs(), notes=notes,
                          discussions=discussions)
    assert again.actions == [] and len(again.unchanged) == 3


def test_plan_resolves_what_no_longer_applies_and_ignores_quotes(tmp_path):
    bundle = load_run(make_run(tmp_path, "r1", [train_row_fix()]), ROOT)
    notes, discussions = _as_remote(plan_delivery(bundle, refs=REFS, diffs=mr_diffs(),
                                                  notes=[], discussions=[]))
    quoted = RemoteNote(id=99, body="> " + skill_marker("segmentation", SEG_FOLDER) +
                        "\nagreed")
    fixed = load_run(make_run(tmp_path / "2", "r2", []), ROOT)
    plan = plan_delivery(fixed, refs=REFS, diffs=mr_diffs(), notes=[quoted, *notes],
                         discussions=discussions)
    kinds = [(a.kind, a.discussion_id or a.note_id) for a in plan.actions]
    assert ("update_note", notes[0].id) in kinds  # the summary note, not the quote
    assert ("resolve_discussion", discussions[0].id) in kinds
    update = next(a for a in plan.actions if a.kind == "update_discussion")
    assert OUTDATED_MARKER in update.body and "```suggestion" not in update.body


def test_lines_that_read_differently_at_the_mr_head_go_to_fallback(tmp_path):
    """A run of another commit (older, or a merged result) never anchors on the wrong line."""
    bundle = load_run(make_run(tmp_path, "r1", [train_row_fix()]), ROOT)
    diffs = mr_diffs()
    diffs[0].diff = diffs[0].diff.replace("+| `segment_train`", "+| `segment_fit`")
    plan = plan_delivery(bundle, refs=REFS, diffs=diffs, notes=[], discussions=[])
    assert not plan.inline and len(plan.fallback) == 1
    assert plan_delivery(bundle, refs=REFS, diffs=mr_diffs(), notes=[],
                         discussions=[]).inline


# ---- JUnit (tasks/run/publish.py) ----------------------------------------------------------------


def check_junit(xml: bytes) -> ET.Element:
    """The structure GitLab's JUnit parser and the common JUnit XSD expect."""
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    assert set(root.attrib) <= {"name", "time", "tests", "failures", "errors", "disabled"}
    for suite in root:
        assert suite.tag == "testsuite"
        assert {"name", "tests"} <= set(suite.attrib)
        assert set(suite.attrib) <= {"name", "tests", "failures", "errors", "skipped", "time",
                                     "disabled", "timestamp", "hostname", "id", "package"}
        cases = [c for c in suite if c.tag == "testcase"]
        assert all(c.tag in ("testcase", "properties", "system-out", "system-err")
                   for c in suite)
        assert int(suite.get("tests")) == len(cases)
        for tag, attr in (("failure", "failures"), ("error", "errors")):
            assert int(suite.get(attr, "0")) == sum(c.find(tag) is not None for c in cases)
        for c in cases:
            assert c.get("name") and c.get("classname")
            for child in c:
                assert child.tag in ("failure", "error", "skipped", "system-out", "system-err")
                if child.tag in ("failure", "error"):
                    assert set(child.attrib) <= {"message", "type"}
                    assert (child.text or "").strip()
    return root


def test_junit_xml_validates(tmp_path):
    run = make_run(tmp_path, "r1", [])
    manifest = RunManifest.model_validate_json((run / "run.json").read_text())
    manifest.skills += [
        SkillResult(name="broken", path="/x/broken", status="invalid",
                    problems=["SKILL.md: no frontmatter"]),
        SkillResult(name="flaky", path="/x/flaky", status="error", cases=[
            CaseResult(case_id="c", runtime="literal", epoch=1, status="error",
                       reason="model API 503", dir="flaky/literal/c/epoch-1"),
            CaseResult(case_id="c", runtime="literal", epoch=2, status="pass", reason="ok",
                       dir="flaky/literal/c/epoch-2")])]
    root = check_junit(junit_xml(run, manifest))
    assert {s.get("name") for s in root} == {"segmentation [builtin]", "broken", "flaky [literal]"}
    failure = root.find("./testsuite/testcase/failure")
    assert "KeyError: 'segment_train'" in failure.text


# ---- the CI template --------------------------------------------------------------------------


def test_ci_template_is_valid_yaml_with_the_documented_jobs():
    text = TEMPLATE.read_text()
    ci = list(yaml.safe_load_all(text))[1]  # after the spec:inputs header
    job, report, prefect = ci["aeval-evaluate"], ci["aeval-report"], ci["aeval-prefect"]
    assert ci["variables"]["AEVAL_SKILLS_GLOB"] == "skills/**/*"
    for j in (job, report, prefect):
        assert all('$CI_PIPELINE_SOURCE == "merge_request_event"' in r["if"] for r in j["rules"])
        assert all(r["changes"] == ["$AEVAL_SKILLS_GLOB"] for r in j["rules"])
    # the job that runs the skills never posts and never sees the token
    assert job["script"][-1] == ("aeval run . --changed-since $CI_MERGE_REQUEST_DIFF_BASE_SHA "
                                 '--sandbox "$AEVAL_SANDBOX"')
    assert ci["variables"]["AEVAL_SANDBOX"] == "require"  # the template refuses no sandbox
    assert "apt-get install -y -qq bubblewrap" in job["script"][0]
    assert "environment" not in job and "AEVAL_GITLAB_TOKEN" not in str(job)
    assert job["retry"] == {"max": 2, "exit_codes": [3]}
    assert job["allow_failure"] == {"exit_codes": [3]}
    art = job["artifacts"]
    assert art["when"] == "always" and ".aeval/runs/" in art["paths"]
    assert art["reports"]["junit"].endswith("junit.xml")
    # the report job posts those artifacts, whatever the verdict, in the token's environment
    assert report["needs"] == [{"job": "aeval-evaluate", "artifacts": True}]
    assert [r.get("when") for r in report["rules"]] == ["always"]
    assert report["environment"]["name"] == "aeval-report"
    assert "aeval post latest" in report["script"][0]
    assert report["retry"] == {"max": 2, "exit_codes": [3]}
    assert report["allow_failure"] == {"exit_codes": [3]}
    assert report["artifacts"]["reports"]["codequality"].endswith(CODE_QUALITY_FILE)
    assert any(r.get("when") == "manual" for r in prefect["rules"])
    assert "AEVAL_VIA_PREFECT" in job["rules"][0]["if"]
    assert "AEVAL_VIA_PREFECT" in report["rules"][0]["if"]
    cmd = " ".join(prefect["script"])
    assert ci["variables"]["AEVAL_PREFECT_DEPLOYMENT"] == "aeval-mr/mr"
    assert cmd.startswith('aeval trigger "$AEVAL_PREFECT_DEPLOYMENT"') and "--timeout" in cmd
    assert prefect["retry"] == {"max": 2, "exit_codes": [3]}
    assert prefect["allow_failure"] == {"exit_codes": [3]}
    header = "\n".join(ln for ln in text.splitlines() if ln.startswith("#"))
    used = set(re.findall(r"\$\{?(AEVAL_[A-Z_]+)", text)) | set(ci["variables"])
    assert used and all(v in header for v in used | {"AEVAL_GITLAB_TOKEN"})
