"""The cross-runtime table's columns and exit code, from finished runs' files: what a row
says must be what happened (no grader: no fidelity; refused calls: a loud warning)."""

from __future__ import annotations

from aeval.artifacts import CompareReport, CompareRow, Gate, RefusedTools
from aeval.tasks.studies.compare import compare_gate, refusal_warnings, render_compare


def row(label: str, code: int, refused: RefusedTools | None = None) -> CompareRow:
    return CompareRow(
        label=label, runtime=label.split(":")[0], model=None, run_id="r", cases=1,
        statuses={"fail" if code == 1 else "pass": 1},
        gate=Gate(exit_code=code, reason=f"reason {code}"), wall_minutes=0.5,
        executor_minutes=0.75, assertions_passed=1, assertions_total=3, causal_share=None,
        self_corrections=0, protocol_fidelity="–", requests=5, tokens_in=10, tokens_cached=2,
        refused=refused or RefusedTools(calls=0))


def test_compare_exits_as_its_worst_row_in_aeval_runs_order():
    assert compare_gate([row("a", 0), row("b", 0)]).exit_code == 0
    assert compare_gate([row("a", 3), row("b", 0)]).exit_code == 3
    gate = compare_gate([row("a", 3), row("b", 1), row("c", 1), row("d", 4)])
    assert gate.exit_code == 1 and gate.reason == "b: reason 1; c: reason 1"
    assert compare_gate([row("a", 3), row("b", 4), row("c", 2)]).exit_code == 2


def test_a_row_whose_runtime_refused_the_agents_calls_is_flagged():
    report = CompareReport(compare_id="x", paths=["p"], gate=Gate(exit_code=1, reason="r"),
                           rows=[row("builtin", 1),
                                 row("claude-code:m", 0, RefusedTools(
                                     calls=4, unknown_tools=["bash", "read_file"])),
                                 row("opencode:m", 0, RefusedTools(calls=2, misplaced=2))])
    (claude, opencode) = refusal_warnings(report)
    assert claude.startswith("warning: claude-code:m: 4 tool call(s) the runtime refused "
                             "(tools it has not got: bash, read_file)")
    assert "2 command(s) that looked for the skill outside opencode's skills folder" \
        in opencode
    text = render_compare(report)
    assert text.count("warning: ") == 2 and "gate: exit 1 (r)" in text
    assert "| builtin | 0.50 | 0.75 | 1/3 (33%) | – | 0 | – | 5 | 10 | 2 |" in text
