"""The doc-test rules (aeval.doctest): which blocks are illustrative, what a failure proves.

The diagnosis tests run the block for real (bash, python, a skill folder on disk) and hand
its real exit code and output to `diagnose`, so they break when an interpreter's wording does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.doctest import (
    BlockOutcome,
    Diagnosis,
    Outcome,
    diagnose,
    discounted,
    doc_test_verdict,
    placeholder,
    plan_blocks,
    summarize,
    taints,
)


@pytest.mark.parametrize("code, expected", [
    ("python scripts/extract.py <input.pdf>", "angle-bracket placeholder '<input.pdf>'"),
    ("curl -H 'Authorization: Bearer <token>' https://api.example.com",
     "angle-bracket placeholder '<token>'"),
    ("python scripts/new.py --name {skill_name}", "brace placeholder '{skill_name}'"),
    ("export OPENAI_API_KEY=YOUR_API_KEY", "YOUR_... placeholder 'YOUR_API_KEY'"),
    ('curl -H "x-key: $YOUR_KEY" https://x', "YOUR_... placeholder '$YOUR_KEY'"),
    ("python run.py --token your-api-key", "YOUR_... placeholder 'your-api-key'"),
    ("python scripts/fill.py form.pdf [...]", "[...] placeholder '[...]'"),
    ("python scripts/fill.py [OPTIONS] form.pdf", "[...] placeholder '[OPTIONS]'"),
    ("python scripts/fill.py form.pdf ...", "bare ellipsis '...'"),
    ("ls\n...\nls", "bare ellipsis '...'"),
])
def test_placeholders_are_skipped_with_the_reason(code, expected):
    assert placeholder(code) == expected
    (plan,) = plan_blocks([(12, code)])
    assert (plan.action, plan.line, plan.reason) == ("skip", 12, f"placeholder: {expected}")


@pytest.mark.parametrize("code, reason, taints", [
    ("pip install markitdown", "installs host software", False),
    ("sudo apt-get install -y poppler-utils\npython3 -m pip install --user pdfplumber",
     "installs host software", False),
    ("npm install -g docx  # once", "installs host software", False),
    ("# Optional: nothing to run here", "no command (comments only)", False),
    ("$ python scripts/stats.py data.csv\nrows: 5", "a console session", True),
])
def test_install_comment_and_console_blocks_are_skipped(code, reason, taints):
    (plan,) = plan_blocks([(3, code)])
    assert plan.action == "skip" and plan.reason.startswith(reason) and plan.taints is taints


def test_a_block_that_installs_and_runs_is_run():
    (plan,) = plan_blocks([(3, "pip install -e .\npython scripts/stats.py data.csv")])
    assert plan.action == "run"


@pytest.mark.parametrize("code", [
    "python scripts/stats.py data.csv > out/summary.txt",
    "sort < in.txt > out.txt",
    'echo "${HOME}/x" && cat <<EOF\nhi\nEOF',
    "find . -name '*.py' -exec wc -l {} +",
    "awk '{print $1}' access.log | sort | uniq -c",
    "[ -f out.txt ] && tr '[A-Z]' '[a-z]' < out.txt",
    "python -c 'print(list(range(3))[1:])'",
    "kill $VIEWER_PID",
])
def test_runnable_blocks_are_not_placeholders(code):
    assert placeholder(code) is None


@pytest.fixture
def skill(tmp_path) -> Path:
    d = tmp_path / "segmentation"
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text("---\nname: segmentation\ndescription: d\n---\n")
    (d / "scripts" / "run.py").write_text(dedent("""\
        import argparse
        import sys

        ACTIONS = {"train": lambda a: print("train")}
        p = argparse.ArgumentParser(prog="run.py")
        p.add_argument("action")
        p.add_argument("--mode", choices=["fast", "full"], default="fast")
        p.add_argument("--data")
        a = p.parse_args()
        if a.data:
            open(a.data).read()
        if a.action == "convert":
            import markitdown  # noqa: F401
        if a.action == "pdf":
            import subprocess
            subprocess.run(["soffice-aeval-absent", "--headless", "--convert-to", "pdf"])
        ACTIONS[a.action](a)
        """))
    return d


def run_block(code: str, cwd: Path) -> tuple[int, str]:
    bindir = str(Path(sys.executable).parent)
    r = subprocess.run(["bash", "-o", "pipefail", "-e", "-c", code], cwd=cwd,
                       capture_output=True, text=True,
                       env={"PATH": f"{bindir}:/usr/bin:/bin", "LANG": "C.UTF-8"})
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("code, kind, reason", [
    ("python scripts/run.py segment_train", "defect",
     "KeyError: 'segment_train' raised in the skill's scripts/run.py:17"),
    ("python scripts/run.py train --mode turbo", "defect",
     "the skill's run.py rejects what SKILL.md documents: argument --mode: invalid choice: "
     "'turbo' (choose from 'fast', 'full')"),
    ("python scripts/run.py train --gpus 2", "defect",
     "the skill's run.py rejects what SKILL.md documents: unrecognized arguments: --gpus 2"),
    ("python scripts/train.py --epochs 1", "defect",
     "SKILL.md runs scripts/train.py, which the skill does not have"),
    ("bash scripts/setup.sh", "defect",
     "SKILL.md runs scripts/setup.sh, which the skill does not have"),
    ("python scripts/run.py convert", "missing_tool", "needs markitdown"),
    ("python scripts/run.py pdf", "missing_tool", "needs soffice-aeval-absent"),
    ("curl -fsS https://example.invalid/install.sh | bash", "inconclusive",
     "exited 6; not in the skill's own code"),
    ("pdftotext-aeval-absent -layout in.pdf out.txt", "missing_tool",
     "needs pdftotext-aeval-absent"),
    ("python scripts/run.py train --data masks/train.csv", "inconclusive",
     "FileNotFoundError: [Errno 2] No such file or directory: 'masks/train.csv' "
     "(an input the block expects is missing)"),
    ("kill $VIEWER_PID", "inconclusive", "exited 2; not in the skill's own code"),
    ("python -c 'import json; json.loads(\"{\")'", "inconclusive",
     "exited 1; not in the skill's own code"),
    ("grep -q needle README.md", "inconclusive", "exited 2; not in the skill's own code"),
])
def test_diagnosis_of_real_failures(skill, code, kind, reason):
    exit_code, output = run_block(code, skill)
    assert exit_code != 0, output
    d = diagnose(code, exit_code, output, skill)
    assert (d.kind, d.reason) == (kind, reason), output


def test_a_declared_tool_is_not_a_missing_tool(skill):
    code = "pdftotext-aeval-absent in.pdf"
    exit_code, output = run_block(code, skill)
    d = diagnose(code, exit_code, output, skill, declared={"pdftotext-aeval-absent"})
    assert d.kind == "inconclusive" and d.tool == "pdftotext-aeval-absent"


def test_traceback_in_a_non_skill_file_is_not_a_defect(skill, tmp_path):
    (tmp_path / "user_code.py").write_text("raise KeyError('segment_train')\n")
    code = f"python {tmp_path / 'user_code.py'}"
    exit_code, output = run_block(code, skill)
    assert "KeyError" in output
    assert diagnose(code, exit_code, output, skill).kind == "inconclusive"


def test_summary_priorities():
    ok, defect = BlockOutcome(5, "ok"), BlockOutcome(9, "defect", "KeyError", evidence="tb")
    need = BlockOutcome(7, "missing_tool", "needs pdftotext", "pdftotext")
    skip = BlockOutcome(3, "skipped", "placeholder")
    assert summarize([ok, need, defect]).status == "failed"
    assert summarize([ok, need, defect]).final_text == "SKILL.md line 9: KeyError\ntb"
    assert (summarize([ok, need]).status, summarize([ok, need]).final_text) == (
        "untested", "needs pdftotext")
    assert summarize([skip, ok]).status == "completed"
    s = summarize([skip])
    assert s.status == "untested" and s.final_text.startswith("no self-contained block")
    assert summarize([]).status == "untested"


@pytest.mark.parametrize("run_status, expected", [
    ("completed", "pass"), ("failed", "fail"), ("untested", "untested"), ("timeout", "error"),
])
def test_doc_test_verdict(run_status, expected):
    status, reason = doc_test_verdict(run_status, "needs pdftotext")
    assert status == expected and "needs pdftotext" in reason


@pytest.mark.parametrize("program, output", [
    ("dot", "Error: spawnSync dot ENOENT\n    at Object.spawnSync (node:internal)\n"
            "Node.js v20.20.2"),
    ("convert", "scripts/x.rb:3:in `system': Errno::ENOENT: No such file or directory - "
                "convert"),
    ("ffmpeg", 'exec: "ffmpeg": executable file not found in $PATH'),
])
def test_a_program_a_script_starts_that_is_missing_is_a_need(skill, program, output):
    d = diagnose("python scripts/run.py train", 1, output, skill)  # the script exists
    assert (d.kind, d.tool) == ("missing_tool", program)


def test_a_rejection_in_any_wording_is_a_defect_and_names_the_documented_call(skill):
    (skill / "scripts" / "audit.py").write_text(
        "import sys\nCOMMANDS = {'errors': 1, 'references': 2}\n"
        "if len(sys.argv) != 3 or sys.argv[1] not in COMMANDS:\n"
        "    sys.exit('usage: audit.py errors|references FILE.csv')\n")
    (skill / "formulas.csv").write_text("cell,formula\n")
    code = "python scripts/audit.py refs formulas.csv"
    exit_code, output = run_block(code, skill)
    d = diagnose(code, exit_code, output, skill)
    assert (d.kind, d.own) == ("defect", "rejected")
    assert d.reason == ("the skill's scripts/audit.py exited 1 with the documented arguments "
                        "`refs formulas.csv`: usage: audit.py errors|references FILE.csv")


# ---- which outcomes take evidence away from later blocks (taint) --------------------------

FETCH = "curl -fsSL -o export.csv https://example.com/export.csv"
REPORT = "python3 scripts/report.py export.csv --out report.md"


@pytest.mark.parametrize("outcome, expected", [
    ("ok", False), ("skipped", True), ("missing_tool", True), ("defect", True),
    ("inconclusive", True), ("timeout", True), ("not_evidence", True),
])
def test_every_outcome_but_a_clean_run_taints_what_depends_on_it(outcome, expected):
    (plan,) = plan_blocks([(8, FETCH)])
    assert taints(plan, BlockOutcome(8, outcome)) is expected


def test_the_table_above_names_every_outcome():
    from typing import get_args

    assert set(get_args(Outcome)) == {"ok", "skipped", "missing_tool", "defect",
                                      "inconclusive", "timeout", "not_evidence"}


def test_a_skip_that_takes_nothing_away_taints_only_when_it_moves_the_shell():
    (install,) = plan_blocks([(3, "pip install markitdown")])
    assert not install.taints and not taints(install, BlockOutcome(3, "skipped"))
    (cd_ok,) = plan_blocks([(5, "cd examples && ls")])
    assert taints(cd_ok, BlockOutcome(5, "ok"))  # the reader's shell is elsewhere after it


DEFECT = Diagnosis("defect", "FileNotFoundError: export.csv, raised in scripts/report.py")


@pytest.mark.parametrize("outcome", ["inconclusive", "skipped", "timeout", "missing_tool",
                                     "defect"])
def test_a_failure_that_needs_what_an_unclean_block_would_have_made_is_not_evidence(outcome):
    """A failed download (inconclusive), a skipped or timed-out block: the file a later
    block reads may be missing because of it, so that later failure proves nothing."""
    fetch, report = plan_blocks([(8, FETCH), (14, REPORT)])
    why = discounted(report, DEFECT, [(fetch, BlockOutcome(8, outcome))], frozenset())
    assert why == f"may depend on line 8 ({outcome}: it would have made export.csv)"


def test_a_failure_is_evidence_after_clean_or_unrelated_blocks():
    fetch, other, report = plan_blocks([(8, FETCH), (11, "mkdir -p logs"), (14, REPORT)])
    assert discounted(report, DEFECT, [(other, BlockOutcome(11, "inconclusive"))],
                      frozenset()) is None
    assert discounted(report, DEFECT, [], frozenset()) is None
    # a clean block is never in `unclean` (taints says no): here it would count, so the
    # runner's rule is what keeps a clean download's later failure evidence
    assert not taints(fetch, BlockOutcome(8, "ok"))


def test_the_skills_own_missing_file_is_evidence_whatever_came_before():
    fetch, report = plan_blocks([(8, FETCH), (14, REPORT)])
    missing = Diagnosis("defect", "SKILL.md runs scripts/report.py, which the skill does not "
                        "have", file="scripts/report.py", own="file")
    assert discounted(report, missing, [(fetch, BlockOutcome(8, "inconclusive"))],
                      frozenset({"SKILL.md"})) is None
    (cd,) = plan_blocks([(4, "cd build")])
    assert discounted(report, missing, [(cd, BlockOutcome(4, "ok"))], frozenset()) is None
