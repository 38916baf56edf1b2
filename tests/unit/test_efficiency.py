"""Efficiency, budgets and stray files (issue 47): measured from an attempt's events, the
same for every runtime; budgets judged with the measured figure as evidence and failing the
case whatever the threshold; stray files against what the case declares."""

from __future__ import annotations

import pytest

from aeval.artifacts.case import AssertionSpec
from aeval.events import MessageEvent, ToolCallEvent, Usage, UsageEvent
from aeval.skill.contract import Budget, EvalCase, FileContains
from aeval.verdicts.checks import CheckOutcome
from aeval.verdicts.efficiency import (
    budget_assertions,
    efficiency_cells,
    judge_budget,
    measure,
    stray_files,
)
from aeval.verdicts.judge import judge


def call(seq: int, tool: str = "bash") -> ToolCallEvent:
    return ToolCallEvent(seq=seq, t=seq, call_id=f"c{seq}", tool=tool,
                         input={"command": "python3 scripts/report.py totals"})


def said(seq: int) -> MessageEvent:
    return MessageEvent(seq=seq, t=seq, role="assistant", text="Totalling the export next.")


def spent(seq: int, inp: int, cached: int, out: int) -> UsageEvent:
    return UsageEvent(seq=seq, t=seq, usage=Usage(input_tokens=inp, cached_input_tokens=cached,
                                                  output_tokens=out, requests=1))


AGENT_RUN = [said(0), spent(1, 1200, 800, 90), call(2), call(3, "read_file"), said(4),
             spent(5, 300, 1900, 40), call(6), said(7), spent(8, 100, 2200, 30)]


def case(**extra) -> EvalCase:
    return EvalCase(id="report", prompt="Write report.md from data/sales.csv.",
                    expected_outcome="report.md lists the total per region.", **extra)


def test_an_agent_run_is_measured_from_its_events_and_a_literal_run_has_no_model_figures():
    eff = measure(AGENT_RUN, Usage(), 12.3456, model=True)
    assert (eff.turns, eff.tool_calls, eff.commands) == (3, 3, 2)
    assert (eff.input_tokens, eff.cached_input_tokens, eff.output_tokens) == (1600, 4900, 160)
    assert eff.tokens == 1600 + 4900 + 160 and eff.wall_s == 12.346
    # the runtime's own usage, when it reported some, is what counts (no double count)
    own = Usage(input_tokens=10, output_tokens=5, requests=7)
    assert measure(AGENT_RUN, own, 1.0, model=True).tokens == 15
    assert measure(AGENT_RUN, own, 1.0, model=True).turns == 7
    literal = measure([call(0), call(1), call(2)], Usage(), 0.5, model=False)
    assert (literal.turns, literal.tokens, literal.commands) == (None, None, 3)
    assert efficiency_cells(literal, None) == ("–", "3", "3", "–", "0.5 s", "–")
    assert efficiency_cells(eff, ["debug.log"])[3] == "1,600 / 4,900 / 160"


@pytest.mark.parametrize("measure_, at_most, passed, evidence", [
    ("commands", 1, False, "ran 2 commands"),
    ("commands", 2, True, "ran 2 commands"),
    ("tokens", 10_000, True, "used 6,660 tokens (input 1,600, cached 4,900, output 160)"),
    ("tokens", 5_000, False, "used 6,660 tokens (input 1,600, cached 4,900, output 160)"),
    ("wall_s", 10, False, "took 12.3 s"),
])
def test_a_budget_is_judged_with_the_measured_figure(measure_, at_most, passed, evidence):
    eff = measure(AGENT_RUN, Usage(), 12.3, model=True)
    got = judge_budget(Budget(type="budget", measure=measure_, at_most=at_most), eff)
    assert got == (passed, evidence)


def test_a_turn_stop_is_recorded_and_an_unmeasured_budget_is_never_a_pass():
    eff = measure(AGENT_RUN, Usage(), 3.0, model=True, run_status="max_turns")
    assert eff.stopped_at_turn_limit and efficiency_cells(eff, None)[0] == (
        "3 (stopped at max_turns)")
    # without a model, tokens are not measured: never a pass
    none = measure([call(0)], Usage(), 1.0, model=False)
    assert judge_budget(Budget(type="budget", measure="tokens", at_most=9), none)[0] is None


def test_budgets_are_written_from_the_contract_in_order_and_only_where_measurable():
    c = case(max_turns=20, max_tokens=50_000, max_commands=40, max_wall_s=90.5)
    assert [(a.id, a.text) for a in budget_assertions(c, model=True)] == [
        ("B1", "at most 50,000 tokens"), ("B2", "at most 40 commands"),
        ("B3", "at most 90.5 s of wall time")]
    assert [a.text for a in budget_assertions(c, model=False)] == [
        "at most 40 commands", "at most 90.5 s of wall time"]
    # max_turns is the runtime's stop, never a budget
    assert budget_assertions(case(max_commands=3), model=True)[0].text == "at most 3 commands"
    assert budget_assertions(case(max_turns=5), model=True) == []


def test_a_budget_over_fails_the_case_even_where_the_threshold_would_pass_it():
    a1 = AssertionSpec(id="A1", text="File report.md matches /north/", kind="deterministic",
                       source="author",
                       check=FileContains(type="file_contains", path="report.md",
                                          pattern="north"))
    b1, = budget_assertions(case(max_commands=3), model=False)
    checks = {"A1": CheckOutcome(True, "report.md:3: north: 140.00"),
              "B1": CheckOutcome(False, "ran 5 commands")}
    j = judge([a1, b1], [], checks, {}, 0.5)
    assert j.status == "fail"
    assert j.reason.startswith("over budget: B1 at most 3 commands: ran 5 commands"), j.reason
    within = judge([a1, b1], [], {**checks, "B1": CheckOutcome(True, "ran 2 commands")}, {},
                   1.0)
    assert within.status == "pass", within.reason


@pytest.mark.parametrize("declared, extra, stray", [
    (["report.md"], [], ["debug.log", "tmp/cache.json", "totals.json"]),
    (["report.md", "tmp/"], [], ["debug.log", "totals.json"]),
    (["*.md", "*.json"], [], ["debug.log"]),  # `*` crosses folders: tmp/cache.json too
    (["./report.md", "totals.json", "**/*.log", "tmp"], [], []),
    # a file check's path is a declared output
    ([], [FileContains(type="file_contains", path="report.md", pattern="Totals")],
     ["debug.log", "tmp/cache.json", "totals.json"]),
])
def test_stray_files_are_the_outputs_outside_the_declared_ones(declared, extra, stray):
    outputs = ["report.md", "totals.json", "debug.log", "tmp/cache.json"]
    assert stray_files(outputs, case(outputs=declared, assertions=extra)) == stray


def test_a_case_that_declares_nothing_calls_nothing_stray_unless_it_asks():
    outputs = ["report.md", "debug.log"]
    assert stray_files(outputs, case()) is None
    asks = case(assertions=[{"type": "no_stray_files"}])
    assert stray_files(outputs, asks) == ["debug.log", "report.md"]


def test_the_prefect_case_artifact_shows_the_efficiency_row_with_stray_names_inert(tmp_path):
    from aeval.artifacts import CaseResult
    from aeval.tasks.run.prefect_artifacts import case_markdown

    eff = measure([call(0), call(1), call(2)], Usage(), 2.04, model=False)
    c = CaseResult(case_id="report", runtime="literal", status="fail", reason="over budget",
                   dir="messy-report/literal/report", efficiency=eff,
                   stray_files=["debug.log", "tmp/a|b.json"])
    md = case_markdown(c, "messy-report", tmp_path)
    assert "| turns | tool calls | commands | tokens in / cached / out | wall | stray files |" \
        in md
    row = md.splitlines()[-1]
    assert row.startswith("| `–` | `3` | `3` | `–` | `2.0 s` | `debug.log, tmp/a")
    assert "a\\|b.json" in row  # a `|` in a file name cannot split the row


# ---- relative budgets (`max_vs_base`): the head against the base's figure on the case ------


def test_a_relative_budget_is_written_with_the_bases_figure_and_a_noise_margin():
    from aeval.verdicts.efficiency import relative_budget_assertions

    base = measure(AGENT_RUN, Usage(), 10.0, model=True)  # 2 commands, 3 turns, 6,660 tokens
    c = case(max_commands=40, max_vs_base={"commands": 1.2, "tokens": 1.5, "wall_s": 1.2,
                                           "turns": 2})
    got = relative_budget_assertions(c, base, first=2, model=True)
    assert [(a.id, a.text) for a in got] == [
        # 1.2 x 2 commands is 2.4: under the margin of one command, so 3
        ("B2", "at most 3 commands (1.2x the base version's 2 on this case)"),
        ("B3", "at most 9,990 tokens (1.5x the base version's 6,660 on this case)"),
        ("B4", "at most 12 s of wall time (1.2x the base version's 10 on this case)"),
        ("B5", "at most 6 turns (2x the base version's 3 on this case)")]
    # without a model neither tokens nor turns are measured: no budget on them
    literal = measure([call(0), call(1)], Usage(), 0.4, model=False)
    assert [a.check.measure for a in relative_budget_assertions(c, literal, 1, model=False)] \
        == ["commands", "wall_s"]
    # no base attempt (the base did not pass the case, or there is no base): nothing
    assert relative_budget_assertions(c, None, 1, model=True) == []
    assert relative_budget_assertions(case(), base, 1, model=True) == []


@pytest.mark.parametrize("head_s, passed", [(11.9, True), (12.0, True), (12.5, False)])
def test_a_relative_budget_is_judged_with_both_figures(head_s, passed):
    from aeval.verdicts.efficiency import relative_budget_assertions

    base = measure([call(0)], Usage(), 10.0, model=False)
    (b,) = relative_budget_assertions(case(max_vs_base={"wall_s": 1.2}), base, 1, model=False)
    ok, evidence = judge_budget(b.check, measure([call(0)], Usage(), head_s, model=False))
    assert ok is passed
    assert evidence == (f"took {head_s:.1f} s, {head_s / 10:.2f}x the base version's 10 "
                        "(at most 1.2x)")


@pytest.mark.parametrize("bad, said", [
    ({"comands": 1.2}, "comands"),      # a misspelled measure names itself
    ({"commands": 0.9}, "greater than or equal to 1"),
    ({"wall_s": "fast"}, "valid number"),
])
def test_a_bad_relative_budget_is_refused_naming_the_field(bad, said):
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as e:
        case(max_vs_base=bad)
    assert "max_vs_base" in str(e.value) and said in str(e.value)
