"""The summary `aeval run` and `aeval show` print, as a user reads it at 60 and at 160
columns: a failing doc test's command, exit code and output tail; a terminal rate only where
a later attempt exists (the same in report.html and the MR note); evidence sized to the
terminal; a compact list on a narrow one; where report.html is."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from aeval.artifacts import (
    CaseResult,
    Expectation,
    FirstAttemptError,
    GraderInfo,
    Grading,
    RunManifest,
    SelfCorrection,
    SkillResult,
)
from aeval.deployments.cli.console import COMPACT_BELOW, print_summary
from aeval.run.store import write_model
from aeval.tasks.deliver.bodies import skill_note_body
from aeval.tasks.deliver.read_run import load_run
from aeval.tasks.run.publish import finish_run
from aeval.verdicts.status import summarize

TRACEBACK = """Traceback (most recent call last):
  File "/tmp/ws/.agents/skills/regional-totals/scripts/summarize.py", line 7, in <module>
    print(totals["north"] / totals["nowhere"])
                            ~~~~~~^^^^^^^^^^^
KeyError: 'nowhere'"""
# S0 of a skill whose SKILL.md documents three actions its script lacks: 290 characters
LONG_EVIDENCE = "; ".join(
    f"SKILL.md line {n}: documents `segment_{a}` for scripts/run.py, which does not accept "
    f"it (it accepts: evaluate, inference, train)" for n, a in ((20, "train"), (21, "eval")))


def exp(id_: str, text: str, passed: bool, terminal: bool | None = None,
        evidence: str = "", kind: str = "deterministic") -> Expectation:
    return Expectation(id=id_, text=text, kind=kind, status="passed" if passed else "failed",
                       passed=passed, terminal_passed=passed if terminal is None else terminal,
                       needed_correction=terminal is not None and terminal and not passed,
                       evidence=evidence,
                       graded_by="structural" if kind == "structural" else "check")


def case(run_dir: Path, skill: str, case_id: str, runtime: str, exps: list[Expectation],
         status: str, reason: str, errors: list[FirstAttemptError] = (),
         changes: int = 0) -> CaseResult:
    s = summarize(exps)
    d = f"{skill}/{runtime}/{case_id}"
    write_model(run_dir / d / "grading.json", Grading(
        skill=skill, case_id=case_id, runtime=runtime, status=status, status_reason=reason,
        expectations=exps, summary=s,
        self_correction=SelfCorrection(was_needed=bool(changes),
                                       first_attempt_errors=list(errors)),
        grader=GraderInfo(model=None, protocol_fidelity=True)))
    return CaseResult(case_id=case_id, runtime=runtime, status=status, reason=reason,
                      passed=s.passed, failed=s.failed, ungraded=s.ungraded, total=s.total,
                      first_attempt_pass_rate=s.first_attempt_pass_rate,
                      terminal_pass_rate=s.terminal_pass_rate, self_corrections=changes,
                      dir=d)


@pytest.fixture
def run_dir(tmp_path) -> Path:
    """A finished run: a failing doc test (generic tier, literal), a literal case whose S2
    is terminal-pass by construction (the contradiction a user saw: 20% first attempt, 40%
    terminal on one literal attempt), an agent case that passed only after editing its
    skill, a case failed as a whole, and an untested doc test."""
    run = tmp_path / "runs" / "20261202-010000-abcdef"
    doc = case(run, "regional-totals", "smoke", "literal", [
        exp("S0", "Every path SKILL.md names exists", True, kind="structural"),
        exp("S1", "The skill's files were not modified during execution", True,
            kind="structural"),
        exp("S2", "SKILL.md's shell blocks run without a defect in the skill's own code",
            False, evidence="SKILL.md line 11: KeyError: 'nowhere' raised in the skill's "
                            "scripts/summarize.py:7", kind="structural")],
        "fail", "a documented command failed (2/3 first-attempt)",
        errors=[FirstAttemptError(seq=2, call_seq=1, tool="bash", exit_code=1,
                                  command="python3 scripts/summarize.py", excerpt=TRACEBACK,
                                  documented="scripts/summarize.py")])
    literal = case(run, "invoice-totals", "totals", "literal", [
        exp("A1", "outputs/totals.json: acme == 1250.0", False,
            evidence="outputs/totals.json does not exist in the workspace"),
        exp("S0", "Every path SKILL.md names exists, and what it runs and documents the "
                  "skill accepts", False, evidence=LONG_EVIDENCE, kind="structural"),
        exp("S1", "The skill's files were not modified during execution", True,
            kind="structural"),
        exp("S2", "Every command the skill documents worked when the executor ran it", False,
            terminal=True, evidence="event 2 exited 2: totals.py: error: invalid choice: "
                                    "'summarize'", kind="structural")],
        "fail", "1/4 first-attempt")
    agent = case(run, "segmentation", "train", "builtin", [
        exp("A1", "File outputs/model.json exists", True),
        exp("S1", "The skill's files were not modified during execution", False,
            terminal=True, evidence="SKILL.md modified at event 5", kind="structural")],
        "fail", "skill files modified during execution (1/2 first-attempt)", changes=1)
    whole = case(run, "csv-stats", "stats", "literal", [
        exp("A1", "outputs/stats.json exists", True)], "fail",
        "the documented workflow failed as written: step 2 exited 3")
    untested = CaseResult(case_id="skill-md", runtime="literal", status="untested",
                          reason="no self-contained block: line 11 needs data.csv",
                          supplementary=True, dir="csv-stats/literal/skill-md")
    now = datetime(2026, 12, 2, 1, 0, tzinfo=UTC)
    skills = [SkillResult(name=n, path=f"/mp/{n}", status="fail", tier=t, cases=cs)
              for n, t, cs in (("csv-stats", "per-skill", [untested, whole]),
                               ("invoice-totals", "per-skill", [literal]),
                               ("regional-totals", "generic", [doc]),
                               ("segmentation", "per-skill", [agent]))]
    manifest = RunManifest(run_id=run.name, created_at=now, finished_at=now, status="running",
                           aeval_version="0.1.0", paths=["/mp"],
                           runtimes=["literal", "builtin"], skills=skills)
    finish_run(run, manifest)  # run.json with its gate, junit.xml, report.html
    return run


def summary(run_dir: Path, width: int) -> str:
    from aeval.run.store import read_model

    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, no_color=True)
    print_summary(read_model(run_dir / "run.json", RunManifest), run_dir, console)
    return out.getvalue()


@pytest.mark.parametrize("width", [60, 160])
def test_a_failing_doc_test_shows_its_command_exit_code_and_output_tail(run_dir, width):
    text = summary(run_dir, width)
    assert "$ python3 scripts/summarize.py  (event 2, exit 1)" in text
    assert "│ KeyError: 'nowhere'" in text
    assert "~~~~" not in text  # a traceback's marker line is not evidence
    assert "KeyError: 'nowhere' raised in the skill's scripts/summarize.py:7" in " ".join(
        text.split())


@pytest.mark.parametrize("width", [60, 160])
def test_a_case_failed_as_a_whole_shows_its_reason(run_dir, width):
    """No failed assertion to list: the reason is the evidence, never nothing."""
    text = " ".join(summary(run_dir, width).split())
    assert re.search(r"csv-stats/stats \[literal\]:? the documented workflow failed as "
                     r"written: step 2 exited 3", text)


def rows(text: str) -> dict[str, list[str]]:
    """The table's rows by skill name: their cells."""
    out = {}
    for ln in text.splitlines():
        if ln.startswith("│"):
            cells = [c.strip() for c in ln.strip("│").split("│")]
            out[f"{cells[0]}/{cells[1]}"] = cells
    return out


def test_a_terminal_rate_only_where_a_later_attempt_exists(run_dir):
    table = rows(summary(run_dir, 160))
    # one literal attempt: 25% first attempt; the 50% "terminal" it used to show is not there
    assert table["invoice-totals/totals"][4:6] == ["25% (1/4)", "–"]
    # the agent edited its skill and went on: its terminal rate is the point
    assert table["segmentation/train"][4:6] == ["50% (1/2)", "100%"]
    assert table["csv-stats/stats"][4:6] == ["100% (1/1)", "–"]
    narrow = summary(run_dir, 60)
    assert "first attempt 50% (1/2), terminal 100%" in narrow
    assert "first attempt 25% (1/4), tier" in narrow  # no terminal rate at all


def test_report_html_and_the_mr_note_show_the_same_rates(run_dir):
    html = (run_dir / "report.html").read_text()
    row = re.search(r"<tr><td>invoice-totals</td>.*?</tr>", html).group(0)
    assert "<td>25% (1/4)</td><td>–</td>" in row
    row = re.search(r"<tr><td>segmentation</td>.*?</tr>", html).group(0)
    assert "<td>50% (1/2)</td><td>100%</td>" in row
    bundle = load_run(run_dir)
    notes = {s.result.name: skill_note_body(s, bundle.manifest, report_url=None)
             for s in bundle.skills}
    assert "| `totals` | literal | **fail** | 25% (1/4) | – | 0 |" in notes["invoice-totals"]
    assert "passed only after a correction" not in notes["invoice-totals"]
    assert "| `train` | builtin | **fail** | 50% (1/2) | 100% | 1 |" in notes["segmentation"]
    assert "S1: `The skill's files were not modified during execution` (passed only after a " \
           "correction)" in notes["segmentation"]


def test_a_narrow_terminal_gets_a_compact_list_within_its_width(run_dir):
    text = summary(run_dir, 60)
    lines = text.splitlines()
    paths = ("artifacts:", "report:")  # whole on one line: the terminal wraps them
    assert max(len(ln.rstrip()) for ln in lines if not ln.startswith(paths)) <= 60
    assert not any(ln.startswith(("┏", "┃", "┡", "└")) for ln in lines)  # no table
    # each case on a line of its own, whole: no `csv-s/tats`
    for name in ("csv-stats/stats [literal]: fail", "invoice-totals/totals [literal]: fail",
                 "regional-totals/smoke [literal]: fail", "segmentation/train [builtin]: fail",
                 "csv-stats/skill-md [literal]: untested"):
        assert any(ln.strip() == name for ln in lines), name
    # what failed: each case once, its failures under it by id
    assert sum(ln.strip() == "invoice-totals/totals [literal]" for ln in lines) == 1
    assert any(ln.startswith("    A1 outputs/totals.json does not exist") for ln in lines)


def test_a_wide_terminal_gets_the_table_and_whole_evidence(run_dir):
    assert COMPACT_BELOW <= 100
    text = summary(run_dir, 160)
    assert any(ln.startswith("┃ skill") for ln in text.splitlines())
    # 250 characters of evidence, cut at 160 before whatever the terminal: now whole
    assert len(LONG_EVIDENCE) > 200
    assert LONG_EVIDENCE in " ".join(text.split())
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 160
    # at 60 columns the same evidence is shortened to about two lines, and says so
    narrow = summary(run_dir, 60)
    assert LONG_EVIDENCE not in " ".join(narrow.split()) and "…" in narrow


@pytest.mark.parametrize("width", [60, 160])
def test_the_report_html_path_is_printed_beside_the_artifacts(run_dir, width, monkeypatch):
    monkeypatch.chdir(run_dir.parent.parent)
    lines = summary(run_dir, width).splitlines()
    where = [ln for ln in lines if ln.startswith(("artifacts:", "report:"))]
    assert len(where) == 2
    report = Path(where[1].split(":", 1)[1].strip())
    assert report.name == "report.html" and report.is_file()
    assert report.parent.resolve() == run_dir.resolve()
    gate = " ".join(" ".join(lines[lines.index(where[1]) + 1:]).split())
    assert gate.startswith("exit 1: 4 case(s) failed: csv-stats/stats, invoice-totals/totals")


@pytest.fixture
def sweep_dir(tmp_path) -> Path:
    """A nightly sweep's run: 20 skills x 3 epochs of a 1-case contract plus the SKILL.md
    doc test (120 case runs), of which one epoch of one case failed on its first attempt."""
    run = tmp_path / "runs" / "20261205-020000-abcdef"
    ok = [exp("A1", "outputs/report.csv exists", True),
          exp("S1", "The skill's files were not modified during execution", True,
              kind="structural")]
    skills = []
    for i in range(20):
        name = f"ledger-{i:02d}"
        cases = []
        for epoch in (1, 2, 3):
            for cid in ("reconcile", "skill-md"):
                bad = name == "ledger-07" and cid == "reconcile" and epoch == 2
                exps = [exp("A1", "outputs/report.csv exists", False,
                            evidence="outputs/report.csv does not exist in the workspace"),
                        ok[1]] if bad else ok
                c = case(run, name, f"{cid}-e{epoch}", "literal", exps,
                         "fail" if bad else "pass", "1/2 first-attempt" if bad else "2/2")
                cases.append(c.model_copy(update={"case_id": cid, "epoch": epoch}))
        skills.append(SkillResult(name=name, path=f"/mp/{name}", tier="per-skill",
                                  status="fail" if name == "ledger-07" else "pass",
                                  cases=cases))
    now = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
    finish_run(run, RunManifest(run_id=run.name, created_at=now, finished_at=now,
                                status="running", aeval_version="0.1.0", paths=["/mp"],
                                runtimes=["literal"], skills=skills))
    return run


def test_a_long_run_shows_each_skills_passing_case_runs_as_one_row(sweep_dir):
    """120 case runs: the one that failed keeps its row and its evidence; each skill's
    passing runs are one row that says how many, not 119 rows of `pass`."""
    text = summary(sweep_dir, 160)
    table = rows(text)
    assert table["ledger-07/reconcile #2"][3:5] == ["fail", "50% (1/2)"]
    assert table["ledger-07/5 case runs"][3:5] == ["pass", "100% (10/10)"]
    assert table["ledger-00/6 case runs"][2:5] == ["literal", "pass", "100% (12/12)"]
    assert len(table) == 21  # a row per skill, and the failed case run's
    assert "119 passing case run(s) shown as one row per skill and runtime" in text
    assert "ledger-07/reconcile #2 [literal] A1 outputs/report.csv exists" in text
    # the gate's last line names the epoch too, as the rows do
    assert "exit 1: 1 case(s) failed: ledger-07/reconcile #2" in " ".join(text.split())
    narrow = summary(sweep_dir, 60).splitlines()
    assert "  ledger-00 [literal]: pass, 6 case runs" in narrow
    assert "  ledger-07/reconcile #2 [literal]: fail" in narrow
    assert max(len(ln.rstrip()) for ln in narrow if not ln.startswith(("artifacts",
                                                                       "report"))) <= 60
