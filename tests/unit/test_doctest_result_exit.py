"""A non-zero exit SKILL.md gives as the skill's answer is no rejection: a scanner that
"exits 1 when it finds something", a linter that exits 1 on errors, a smoke test whose "exit
code 1 means a route failed" answered the documented call (aeval.skill.shell_blocks.
result_exits, aeval.verdicts.diagnosis.documented_exit); the same exit without that sentence,
with another status, about another script, or with a traceback stays a defect.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval.adapters.runtimes.literal import LiteralRuntime
from aeval.isolation.redact import Redactor
from aeval.isolation.shell import base_env
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, Limits
from aeval.skill.shell_blocks import DocBlock, result_exits
from aeval.verdicts.diagnosis import diagnose, documented_exit
from tests.unit.test_doctest import run_block

SCAN = """\
import sys
from pathlib import Path
hits = [p for p in sorted(Path(sys.argv[2]).rglob("*.py")) if "AKIA" in p.read_text()]
for p in hits:
    print(f"{p}:1: aws-key")
sys.exit(1 if hits else 0)
"""
CRASH = "import sys\nraise KeyError('changes')\n"
FOUND = "`scan.py path DIR` exits 1 when it finds something, so CI can gate on it."


@pytest.fixture
def skill(tmp_path) -> Path:
    d = tmp_path / "secrets-scan"
    (d / "scripts").mkdir(parents=True)
    (d / "fixtures" / "repo").mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: secrets-scan\ndescription: Scan\n---\n")
    (d / "scripts" / "scan.py").write_text(SCAN)
    (d / "scripts" / "crash.py").write_text(CRASH)
    (d / "fixtures" / "repo" / "settings.py").write_text('KEY = "AKIAABCDEFGHIJKLMNOP"\n')
    return d


@pytest.mark.parametrize("prose, found", [
    (FOUND, FOUND),
    ("Options:\n\n- `--strict`: exit 1 on warnings as well as errors\n- `--rule NAME`: one rule",
     "- `--strict`: exit 1 on warnings as well as errors"),
    ("Exit code 1 means a route failed or went over budget; the failing routes are listed "
     "last.", "Exit code 1 means a route failed or went over budget; the failing routes are "
              "listed last."),
    ("The check exits\nnon-zero if a setting is missing.", "The check exits non-zero if a "
                                                           "setting is missing."),
])
def test_a_sentence_that_gives_an_exit_status_as_the_answer_is_found(prose, found):
    assert result_exits(f"# scan\n\n{prose}\n\nMore text.") == (found,)


@pytest.mark.parametrize("prose", [
    "It exits 2 on a usage error.",
    "The script exits 1 if an argument is invalid.",
    "Exit when you are done.",
    "Run it; it prints one line per hit.",
])
def test_an_exit_about_the_command_line_or_no_status_is_not_an_answer(prose):
    assert result_exits(prose) == ()


def diagnosed(skill: Path, code: str, results: tuple[str, ...]):
    exit_code, output = run_block(code, skill)
    assert exit_code != 0, output
    return diagnose(code, exit_code, output, skill, results=results)


def test_a_documented_answer_exit_is_a_result_not_a_defect(skill):
    d = diagnosed(skill, "python3 scripts/scan.py path fixtures/repo", (FOUND,))
    assert d.kind == "result", d
    assert "scan.py exited 1, its answer as SKILL.md documents it" in d.reason


@pytest.mark.parametrize("results", [
    (),  # SKILL.md says nothing of the exit
    ("`scan.py path DIR` exits 3 when it finds something.",),  # another status
    ("`audit.sh` exits 1 when it finds something.",),  # another script's sentence
])
def test_the_same_exit_without_its_sentence_is_a_defect(skill, results):
    d = diagnosed(skill, "python3 scripts/scan.py path fixtures/repo", results)
    assert (d.kind, d.own) == ("defect", "rejected"), d


def test_a_traceback_is_a_crash_whatever_the_exit_sentence(skill):
    d = diagnosed(skill, "python3 scripts/crash.py fixtures/repo",
                  ("It exits 1 when it finds something.",))
    assert (d.kind, d.own) == ("defect", "crash"), d
    assert "KeyError: 'changes'" in d.reason


def test_a_sentence_naming_no_file_covers_the_script_it_documents():
    said = "- `--strict`: exit 1 on warnings as well as errors"
    assert documented_exit("scripts/lint_schema.py", 1, (said,)) == said
    assert documented_exit("scripts/lint_schema.py", 2, (said,)) is None


def doc_test(skill: Path, tmp_path: Path, blocks: list[DocBlock]):
    req = ExecutionRequest(prompt="p", case_id="smoke", workspace=tmp_path, home=tmp_path,
                           skill_name=skill.name, skill_description="d", skill_dir=skill,
                           steps=[b.code for b in blocks], doc_test=True, doc_blocks=blocks,
                           env=base_env(tmp_path, {}), limits=Limits(timeout_s=60),
                           raw_log=tmp_path / "raw.jsonl")
    rec = EventRecorder(tmp_path / "events.jsonl", Redactor({}))
    try:
        result = LiteralRuntime().run_doc_test(req, rec)
    finally:
        rec.close()
    return result.doc_test.summary()


def test_a_block_that_ends_on_the_documented_answer_ran(skill, tmp_path):
    summary = doc_test(skill, tmp_path, [
        DocBlock(12, "python3 scripts/scan.py path fixtures/repo", results=(FOUND,))])
    assert summary.status == "completed", summary.final_text
    assert [o.outcome for o in summary.outcomes] == ["ok"]


def test_a_block_stopped_by_the_answer_before_its_end_is_not_a_pass(skill, tmp_path):
    summary = doc_test(skill, tmp_path, [
        DocBlock(12, "python3 scripts/scan.py path fixtures/repo\n"
                     "python3 scripts/scan.py path fixtures/repo --json", results=(FOUND,))])
    assert summary.status == "untested", summary.final_text
    assert "SKILL.md line 13 (the rest of the block) was not run" in summary.final_text


def test_without_the_sentence_the_doc_test_still_fails(skill, tmp_path):
    summary = doc_test(skill, tmp_path, [
        DocBlock(12, "python3 scripts/scan.py path fixtures/repo")])
    assert summary.status == "failed", summary.final_text
    assert "SKILL.md line 12: the skill's scripts/scan.py exited 1" in summary.final_text
