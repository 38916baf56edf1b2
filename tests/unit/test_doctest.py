"""The doc-test rules (aeval.verdicts.doctest): which blocks are illustrative, what a failure
proves.

The diagnosis tests run the block for real (bash, python, a skill folder on disk) and hand
its real exit code and output to `diagnose`, so they break when an interpreter's wording does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.skill.shell_blocks import placeholder, plan_blocks
from aeval.verdicts.diagnosis import diagnose
from aeval.verdicts.doctest import (
    BlockOutcome,
    Diagnosis,
    DocTestReport,
    Outcome,
    depends,
    discounted,
    doc_test_verdict,
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


def test_the_verdict_of_a_doc_test_comes_from_what_its_blocks_did():
    """The runtime reports each block's outcome; the case's status is read from that report,
    whatever the runtime's own end said."""
    defect = BlockOutcome(9, "defect", "KeyError", evidence="tb")
    report = DocTestReport(blocks=[BlockOutcome(5, "ok"), defect], planned=3)
    assert doc_test_verdict(*_said(report)) == (
        "fail", "doc test found a skill defect: SKILL.md line 9: KeyError\ntb")
    stopped = DocTestReport(blocks=[BlockOutcome(5, "ok")], planned=3, timed_out=True)
    assert doc_test_verdict(*_said(stopped)) == (
        "error", "doc test timeout: timeout after 1 of 3 block(s)")
    empty = DocTestReport(nothing="no self-contained block: SKILL.md has no shell block")
    assert doc_test_verdict(*_said(empty)) == (
        "untested", "no self-contained block: SKILL.md has no shell block")


def _said(report: DocTestReport) -> tuple[str, str]:
    s = report.summary()
    return s.status, s.final_text


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
    ("ok", False), ("skipped", True), ("missing_tool", True), ("needs_context", True),
    ("defect", True), ("inconclusive", True), ("timeout", True), ("not_evidence", True),
])
def test_every_outcome_but_a_clean_run_taints_what_depends_on_it(outcome, expected):
    (plan,) = plan_blocks([(8, FETCH)])
    assert taints(plan, BlockOutcome(8, outcome)) is expected


def test_the_table_above_names_every_outcome():
    from typing import get_args

    assert set(get_args(Outcome)) == {"ok", "skipped", "missing_tool", "needs_context",
                                      "defect", "inconclusive", "timeout", "not_evidence"}


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


def test_the_summary_text_word_for_word():
    defects = [BlockOutcome(n, "defect", f"KeyError {n}", evidence="tb" if n == 4 else "")
               for n in (4, 9, 12, 20)]
    s = summarize(defects)
    assert s.final_text == ("SKILL.md line 4: KeyError 4; SKILL.md line 9: KeyError 9; "
                            "SKILL.md line 12: KeyError 12; and 1 more\ntb")
    assert s.outcomes == defects
    assert summarize(defects[1:]).final_text == (
        "SKILL.md line 9: KeyError 9; SKILL.md line 12: KeyError 12; SKILL.md line 20: "
        "KeyError 20")
    needs = [BlockOutcome(3, "missing_tool", "", "pdftotext"),
             BlockOutcome(5, "missing_tool", ""), BlockOutcome(6, "missing_tool", "", "jq"),
             BlockOutcome(8, "missing_tool", "", "pdftotext")]
    s = summarize(needs)
    assert (s.final_text, s.outcomes) == ("needs pdftotext, an uninstalled command, jq", needs)
    mixed = [BlockOutcome(3, "skipped", "placeholder: '<file>'"), BlockOutcome(5, "ok"),
             BlockOutcome(9, "inconclusive", "exited 2; not in the skill's own code")]
    s = summarize(mixed)
    assert (s.status, s.outcomes) == ("completed", mixed)
    assert s.final_text == ("1 of 3 documented block(s) ran without a skill defect; line 3: "
                            "skipped (placeholder: '<file>'); line 9: inconclusive (exited 2; "
                            "not in the skill's own code)")
    assert summarize([BlockOutcome(5, "ok")]).final_text == (
        "1 of 1 documented block(s) ran without a skill defect")
    s = summarize(mixed[:1])
    assert (s.final_text, s.outcomes) == (
        "no self-contained block: line 3: skipped (placeholder: '<file>')", mixed[:1])
    assert summarize([]).final_text == "no self-contained block"


@pytest.mark.parametrize("code, before", [
    ("# Don't: this deletes your data\nrm -rf /", ""),
    ("# ❌\ncurl http://x | sudo bash", ""),
    ("python3 scripts/x.py --force", "**Don't** run it with --force:"),
    ("python3 scripts/x.py --force", "Never do this"),
])
def test_a_counter_example_is_skipped_and_takes_nothing_away(code, before):
    from aeval.skill.shell_blocks import DocBlock

    (plan,) = plan_blocks([DocBlock(7, code, before)])
    assert (plan.line, plan.code, plan.action, plan.reason, plan.taints) == (
        7, code, "skip", "an example of what not to do", False)


def test_a_plan_keeps_the_line_and_code_of_every_block():
    plans = plan_blocks([(3, "pip install markitdown"), (5, "# only a comment"),
                         (8, "python scripts/x.py <input.pdf>"), (11, "python scripts/x.py a")])
    assert [(p.line, p.code, p.action) for p in plans] == [
        (3, "pip install markitdown", "skip"), (5, "# only a comment", "skip"),
        (8, "python scripts/x.py <input.pdf>", "skip"), (11, "python scripts/x.py a", "run")]
    assert plans[1].reason == "no command (comments only)" and not plans[1].taints
    assert plans[2].taints and plans[3].reason is None and plans[3].taints
    assert plans[3].effects.runs == {"scripts/x.py"}


def test_a_clean_block_that_moved_the_shell_discounts_a_later_failure_of_other_code():
    (cd,) = plan_blocks([(4, "cd build")])
    (report,) = plan_blocks([(14, REPORT)])
    assert discounted(report, DEFECT, [(cd, BlockOutcome(4, "ok"))], frozenset()) == (
        "may depend on line 4 (ok: the reader's shell would be in build after it)")


def test_the_skills_own_file_is_discounted_only_by_a_block_that_would_have_made_it():
    (cd,) = plan_blocks([(4, "cd build")])
    fetch, report = plan_blocks([(8, "curl -fsSL -o scripts/report.py https://x.io/r.py"),
                                 (14, REPORT)])
    missing = Diagnosis("defect", "SKILL.md runs scripts/report.py, which the skill does not "
                        "have", file="scripts/report.py", own="file")
    unclean = [(cd, BlockOutcome(4, "ok")), (fetch, BlockOutcome(8, "inconclusive"))]
    assert discounted(report, missing, unclean, frozenset({"SKILL.md"})) == (
        "may depend on line 8 (inconclusive: it would have made scripts/report.py)")


def test_what_a_failed_block_may_depend_on():
    from aeval.skill.shellparse import effects

    needs = effects('python3 scripts/load.py "$DB_URL" --token "$API_KEY"')
    assert needs.uses == {"DB_URL", "API_KEY"}
    assert depends(needs, effects("API_KEY=abc; DB_URL=x")) == "it sets $API_KEY"
    assert depends(needs, effects("export REGION=eu")) == "it exports $REGION"
    assert depends(needs, effects("export A=1 B=2")) == "it exports $A"
    assert depends(needs, effects("echo hello")) is None
    # reading a shipped file does not make it
    reads = effects("python3 scripts/load.py data/seed.csv")
    assert depends(reads, effects("head data/seed.csv"), frozenset({"data/seed.csv"})) is None
    assert depends(reads, effects("head data/seed.csv")) == "it would have made data/seed.csv"
    assert depends(reads, effects("mkdir -p data")) == "it would have made data"
    rejected = effects("python3 scripts/load.py --db x")
    assert depends(rejected, effects("export DB=1"), own="rejected",
                   file="scripts/load.py") == "it exports $DB"
    assert depends(rejected, effects("cd /tmp"), own="rejected", file="scripts/load.py") is None
    assert depends(rejected, effects("export DB=1"), own="file", file="scripts/load.py") is None


@pytest.mark.parametrize("name, content, mode, kind, reason", [
    ("tool.py", "#!/usr/bin/env python3\nprint('ok')\n", 0o644, "defect",
     "SKILL.md runs scripts/tool.py directly, but it is not executable (mode 644)"),
    ("tool.py", "import sys\nsys.exit(1)\n", 0o755, "defect",
     "SKILL.md runs scripts/tool.py directly, but it has no interpreter line (#!)"),
    ("tool.py", "#!/usr/bin/env python3\r\nprint('ok')\r\n", 0o755, "defect",
     "SKILL.md runs scripts/tool.py directly, but its interpreter line ends with a carriage "
     "return (CRLF line endings)"),
    ("tool.py", "#!venv/bin/python3\nprint('ok')\n", 0o755, "defect",
     "SKILL.md runs scripts/tool.py directly, but its interpreter line names a relative "
     "program 'venv/bin/python3'"),
    ("tool.js", "#!/usr/bin/env -S node-aeval-absent --no-warnings\nconsole.log(1)\n", 0o755,
     "missing_tool", "needs node-aeval-absent"),
])
def test_a_file_run_directly_must_be_able_to_start(skill, name, content, mode, kind, reason):
    path = skill / "scripts" / name
    path.write_bytes(content.encode())
    path.chmod(mode)
    code = f"scripts/{name} train"
    exit_code, output = run_block(code, skill)
    assert exit_code != 0, output
    d = diagnose(code, exit_code, output, skill)
    assert (d.kind, d.reason) == (kind, reason), output
    if kind == "missing_tool":
        assert d.tool == reason.removeprefix("needs ")


def test_a_missing_interpreter_the_case_declares_is_the_environment(skill):
    path = skill / "scripts" / "tool.js"
    path.write_text("#!/usr/bin/env node-aeval-absent\nconsole.log(1)\n")
    path.chmod(0o755)
    exit_code, output = run_block("scripts/tool.js", skill)
    d = diagnose("scripts/tool.js", exit_code, output, skill, declared={"node-aeval-absent"})
    assert (d.kind, d.reason) == ("inconclusive", "declared host tool node-aeval-absent is "
                                                  "missing")


def test_each_step_keeps_the_line_of_the_block_it_came_from():
    from aeval.skill import markdown
    from aeval.skill.shell_blocks import doc_blocks

    md = dedent("""\
        # Seg
        Train it:

        ```bash

        python3 scripts/run.py train
        ```

        ```python
        python3 scripts/run.py train
        ```

        ```sh
        python3 scripts/run.py train
        ```
        """)
    fences, _ = markdown.parse(md)
    blocks = doc_blocks(fences, ["python3 scripts/run.py train", "python3 scripts/run.py train",
                                 "python3 scripts/run.py train", "echo extra"])
    assert [(b.line, b.code) for b in blocks] == [
        (6, "python3 scripts/run.py train"), (14, "python3 scripts/run.py train"),
        (0, "python3 scripts/run.py train"), (0, "echo extra")]
    assert blocks[0].before.strip().endswith("Train it:")


def _own(skill, args, exit_code, output, code="python scripts/run.py train", direct=False):
    from aeval.skill.shellparse import effects
    from aeval.verdicts.diagnosis import diagnose_own

    d = diagnose_own("scripts/run.py", args, direct, exit_code, output, skill, effects(code),
                     frozenset())
    return None if d is None else (d.kind, d.reason, d.file, d.own, d.tool)


def test_what_the_skills_own_script_said_decides_and_names_the_file(skill):
    """Which own-file defects a later block cannot excuse (``own``), and which failures are
    the environment's or the reader's, from the script's own words."""
    assert _own(skill, ["train", "--mode", "x"], 2,
                "usage: run.py [-h]\nrun.py: error: argument --mode: invalid choice: 'x'") == (
        "defect", "the skill's run.py rejects what SKILL.md documents: argument --mode: "
                  "invalid choice: 'x'", "scripts/run.py", "usage", None)
    assert _own(skill, ["segment_train", "--data", "d"], 1,
                "Unknown action segment_train\n") == (
        "defect", "the skill's scripts/run.py rejects the documented 'segment_train': Unknown "
                  "action segment_train", "scripts/run.py", "rejected", None)
    assert _own(skill, ["train"], 1, "error: HF_TOKEN environment variable not set\n") == (
        "needs_context", "needs HF_TOKEN: the skill's scripts/run.py refuses to run without "
                         "it, saying \"error: HF_TOKEN environment variable not set\"", None,
        None, "HF_TOKEN (scripts/run.py says \"error: HF_TOKEN environment variable not set\")")
    assert _own(skill, ["train", "my_scans/a.png", "b.png"], 1, "cannot read input\n") == (
        "inconclusive", "scripts/run.py exited 1; it needs an input the reader supplies: "
                        "my_scans/a.png", None, None, None)
    assert _own(skill, ["train", "$RUN_ID", "$OUT"], 1, "bad run\n",
                code='python scripts/run.py train "$RUN_ID" "$OUT"') == (
        "inconclusive", "scripts/run.py exited 1; the block uses $OUT, which the reader sets",
        None, None, None)
    assert _own(skill, ["train", "--fast"], 3, "crashed\n") == (
        "defect", "the skill's scripts/run.py exited 3 with the documented arguments "
                  "`train --fast`: crashed", "scripts/run.py", "rejected", None)
    assert _own(skill, ["train", "x" * 200], 3, "")[1].endswith(f"`train {'x' * 114}`: no output")
    # killed by a signal or a timeout: not the skill's answer, the general rules decide
    assert _own(skill, ["train"], 137, "Killed\n") is None
    assert _own(skill, ["train"], 129, "Hangup\n") is None
    assert _own(skill, ["train"], None, "") is None
    assert _own(skill, ["train"], 128, "usage: run.py train\n")[0] == "defect"


def test_a_directly_run_file_that_cannot_start_is_an_own_file_defect(skill):
    run = skill / "scripts" / "run.py"
    run.chmod(0o644)
    assert _own(skill, ["train"], 126, "Permission denied", direct=True) == (
        "defect", "SKILL.md runs scripts/run.py directly, but it is not executable (mode 644)",
        "scripts/run.py", "file", None)
    run.chmod(0o755)  # executable, but no interpreter line: only a start failure says so
    assert _own(skill, ["train"], 2, "syntax error near unexpected token", direct=True)[:4] == (
        "defect", "SKILL.md runs scripts/run.py directly, but it has no interpreter line (#!)",
        "scripts/run.py", "file")
    assert _own(skill, ["train"], 1, "x: bad interpreter: No such file", direct=True)[3] == "file"
    link = skill / "scripts" / "alias.py"
    link.symlink_to("run.py")
    from aeval.skill.shellparse import effects
    from aeval.verdicts.diagnosis import diagnose_own

    d = diagnose_own("scripts/alias.py", [], True, 126, "Permission denied", skill,
                     effects("scripts/alias.py"), frozenset())
    assert d.reason.startswith("SKILL.md runs scripts/alias.py directly, but it has no "
                               "interpreter line")  # the link's target is what runs


@pytest.mark.parametrize("first, exit_code, output", [
    ("#!/usr/bin/env node-aeval-absent", 127, "/usr/bin/env: 'node-aeval-absent': No such file"),
    ("#!/usr/bin/env node-aeval-absent", 126, "x: bad interpreter"),
    ("#!/usr/local/bin/node-aeval-absent --harmony", 127, "x: bad interpreter: no such file"),
])
def test_an_interpreter_missing_on_the_host_is_a_need(skill, first, exit_code, output):
    run = skill / "scripts" / "run.py"
    run.write_text(first + "\nconsole.log(1)\n")
    run.chmod(0o755)
    assert _own(skill, [], exit_code, output, direct=True) == (
        "missing_tool", "needs node-aeval-absent", None, None, "node-aeval-absent")
    assert _own(skill, [], 1, output, direct=True) is not None
    assert _own(skill, [], 1, output, direct=True)[0] != "missing_tool"


@pytest.mark.parametrize("word, expected", [
    ("scripts/run.py", "scripts/run.py"),
    ("$SKILL_DIR/scripts/run.py", "scripts/run.py"),
    ("${SKILL_DIR}/scripts/gone.py", "scripts/gone.py"),  # named through $SKILL_DIR: missing
    (".agents/skills/segmentation/scripts/run.py", "scripts/run.py"),
    ("/mnt/segmentation/scripts/x.py", "scripts/x.py"),
    ("segmentation/segmentation/scripts/run.py", "scripts/run.py"),  # the last one counts
    ("a/segmentation/b/segmentation/scripts/y.py", "scripts/y.py"),
    ("scripts/new.py", "scripts/new.py"),  # in the skill's own folder
    ("lib/new.py", "lib/new.py"),  # a folder the skill has
    ("bin/new.py", None),  # a folder it has not: the reader's project
    ("tool2.py", "tool2.py"),  # the skill keeps .py files at its root
    ("notes.txt", None), ("https://x.io/scripts/run.py", None), ("-scripts/run.py", None),
    ("", None), ("scripts/*.py", None), ("$OUT/run.py", None), ("~/scripts/run.py", None),
    ("/etc/passwd", None), ("../other/run.py", None), (".", None), ("${SKILL_DIR}", None),
    ("scripts/../../x.py", None),
])
def test_which_word_names_a_file_of_the_skill(skill, word, expected):
    from aeval.verdicts.doctest import own_file

    (skill / "tool.py").write_text("print(1)\n")
    (skill / "lib").mkdir()
    assert own_file(word, skill, ("segmentation",)) == expected


def test_a_bare_script_name_is_the_skills_only_when_it_keeps_such_files_at_its_root(skill):
    from aeval.verdicts.doctest import own_file

    assert own_file("tool2.py", skill) is None
    assert own_file("tool2.sh", skill) is None
    (skill / "setup.sh").write_text("echo\n")
    assert own_file("tool2.sh", skill) == "tool2.sh" and own_file("tool2.py", skill) is None


# ---- issue 31: the skill folder's spellings are no placeholders; install steps ---------------

@pytest.mark.parametrize("code", [
    "python3 {baseDir}/scripts/scan_secrets.py --path . --format sarif",
    'python3 "${CLAUDE_SKILL_DIR}/scripts/scan_secrets.py" --path .',
    "python3 /mnt/skills/user/secret-scan/scripts/scan_secrets.py --path .",
    "cd {baseDir} && ./scripts/scan_secrets.py --format json",
])
def test_a_block_through_the_skill_folders_spelling_runs(code):
    (plan,) = plan_blocks([(9, code)])
    assert (plan.action, plan.reason) == ("run", None)


@pytest.mark.parametrize("code, why", [
    ("python3 {baseDir}/scripts/scan_secrets.py --path <repo>", "'<repo>'"),
    ("python3 {baseDir}/scripts/scan_secrets.py --path {input}", "'{input}'"),
])
def test_placeholders_beside_the_spelling_are_still_placeholders(code, why):
    (plan,) = plan_blocks([(9, code)])
    assert plan.action == "skip" and why in (plan.reason or ""), plan


@pytest.mark.parametrize("code, installs", [
    ("npm install -g some-cli\nsome-cli --version", "some-cli"),
    ("npm i -g @mermaid-js/mermaid-cli\nmmdc --version | head -1", "@mermaid-js/mermaid-cli"),
    ("pip install ruff; ruff --version", "ruff"),
    ("brew install jq\nwhich jq\ncommand -v jq", "jq"),
    ("sudo apt-get install -y poppler-utils\npdftotext -v", "poppler-utils"),
    ("uv tool install ruff\nruff -V", "ruff"),
])
def test_an_install_only_block_is_an_install_step_and_taints_nothing(code, installs):
    (plan,) = plan_blocks([(12, code)])
    assert plan.action == "skip" and not plan.taints, plan
    assert plan.reason == (f"an install step (installs {installs} and checks it is there): "
                           "installing host software is the case's setup")


@pytest.mark.parametrize("code", [
    "npm install -g some-cli\nsome-cli scan .",  # it uses what it installed
    "pip install -r requirements.txt\npython3 scripts/check.py --version",  # the skill's own
    "npm install -g some-cli\n./bin/some-cli --version",
])
def test_an_install_beside_a_real_command_still_runs(code):
    (plan,) = plan_blocks([(12, code)])
    assert plan.action == "run", plan
