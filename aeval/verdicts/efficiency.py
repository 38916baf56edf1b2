"""Efficiency and stray files of one attempt: what it cost (turns, tool calls, commands,
tokens, wall time), the case's budgets on it, and the files it left outside what the case
declares. Pure: no IO, no model; the same for every runtime.

Budgets (eval.config `max_tokens`, `max_commands`, `max_wall_s`) are absolute and optional,
and never stop a run. aeval writes each one as an assertion (B1, B2 ... in that order) before
anything runs, and a budget the attempt went over fails the case whatever the pass threshold,
the measured figure as evidence (`ran 57 commands`). Tokens are a model's: a runtime without
one (`literal`) gets no token budget.

`max_turns` and `timeout_s` are stops, not budgets: the runtime ends the run there and what it
left is graded as usual (a timeout is the runtime's end; a turn stop shows as
`stopped_at_turn_limit`). A budget below a stop fails the case without cutting the run short,
so the report can say how far over it went. There is no absolute turn budget: a run can
never take more turns than its stop, and failing every run stopped there would change the
verdicts of the contracts that set `max_turns` as a safety stop.

Relative budgets (`max_vs_base`: `commands: 1.2`) hold the head of a change to a factor of
what its base version used on the same case. A run that compares head with base runs the base
first; the head's assertions then carry the base's figure in each relative budget (B ids after
the absolute ones), so they are still written before the head's output exists.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from aeval.artifacts.case import AssertionSpec, Efficiency
from aeval.events import Event, MessageEvent, ToolCallEvent, Usage, UsageEvent
from aeval.skill import contract as c

SHELL_TOOLS = frozenset({"bash"})
"""Normalized names of the tools that run a shell command (every runtime maps its own)."""
MODEL_MEASURES = frozenset({"tokens", "turns"})
UNITS = {"tokens": "tokens", "commands": "commands", "wall_s": "s of wall time",
         "turns": "turns"}
NOISE = {"turns": 1.0, "commands": 1.0, "tokens": 100.0, "wall_s": 1.0}
"""A change of a cost under this is noise whatever its ratio (head against base: the
efficiency verdict and the relative budgets)."""


def measure(events: list[Event], usage: Usage, wall_s: float, *, model: bool,
            run_status: str = "completed") -> Efficiency:
    """The attempt's efficiency from its events and the runtime's own ``usage`` (when it
    counted requests; else the usage events add up). ``model`` False: no model ran (turns and
    tokens None), unless the events record model usage (a replayed agent run)."""
    if usage == Usage():
        usage = sum((e.usage for e in events if isinstance(e, UsageEvent)), Usage())
    model = model or usage.requests > 0 or usage.prompt_tokens + usage.output_tokens > 0
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    messages = sum(1 for e in events if isinstance(e, MessageEvent) and e.role == "assistant")
    return Efficiency(
        turns=(usage.requests or messages) if model else None,
        tool_calls=len(calls), commands=sum(1 for e in calls if e.tool in SHELL_TOOLS),
        input_tokens=usage.input_tokens if model else None,
        cached_input_tokens=usage.cached_input_tokens if model else None,
        output_tokens=usage.output_tokens if model else None,
        tokens=usage.prompt_tokens + usage.output_tokens if model else None,
        wall_s=round(max(wall_s, 0.0), 3), stopped_at_turn_limit=run_status == "max_turns")


def _number(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def budget_text(b: c.Budget) -> str:
    """``at most 40 commands``; a relative budget: ``at most 5 commands (1.2x the base
    version's 4 on this case)``."""
    said = f"at most {_number(b.at_most)} {UNITS[b.measure]}"
    if b.vs_base is None or b.base is None:
        return said
    return f"{said} ({b.vs_base:g}x the base version's {_number(b.base)} on this case)"


def relative_limit(measure: str, factor: float, base: float) -> float:
    """The most a relative budget allows: ``factor`` times the base's figure, and never
    less than the base's figure plus the measure's noise margin (`NOISE`)."""
    limit = max(factor * base, base + NOISE[measure])
    return round(limit, 3) if measure == "wall_s" else float(int(limit))


def relative_budget_assertions(case: c.EvalCase, base: Efficiency | None, first: int,
                               model: bool) -> list[AssertionSpec]:
    """The case's relative budgets (`max_vs_base`) against the base version's attempt
    ``base``, as assertions B<first>, B<first+1> ... (written before the head runs). Nothing
    without a base figure: no base attempt, or a measure the base did not have (no model:
    no turns or tokens)."""
    out: list[AssertionSpec] = []
    if base is None:
        return out
    for measure, factor in case.max_vs_base.items():
        figure = getattr(base, measure)
        if figure is None or (measure in MODEL_MEASURES and not model):
            continue
        check = c.Budget(type="budget", measure=measure,
                         at_most=relative_limit(measure, factor, figure),
                         vs_base=factor, base=figure)
        out.append(AssertionSpec(id=f"B{first + len(out)}", text=budget_text(check),
                                 kind="deterministic", source="author", check=check))
    return out


def budget_assertions(case: c.EvalCase, model: bool) -> list[AssertionSpec]:
    """The case's budgets as assertions B1, B2 ... (written before anything runs). ``model``
    False: the runtime runs no model, so tokens are not budgeted."""
    out = []
    for field, what in c.BUDGET_FIELDS.items():
        limit = getattr(case, field, None)
        if limit is None or (what in MODEL_MEASURES and not model):
            continue
        check = c.Budget(type="budget", measure=what, at_most=limit)
        out.append(AssertionSpec(id=f"B{len(out) + 1}", text=budget_text(check),
                                 kind="deterministic", source="author", check=check))
    return out


def judge_budget(b: c.Budget, eff: Efficiency | None) -> tuple[bool | None, str]:
    """(within the budget, evidence with the measured figure); None: not measured."""
    if eff is None:
        return None, "not measured: the attempt did not run"
    got = {"tokens": eff.tokens, "commands": eff.commands, "wall_s": eff.wall_s,
           "turns": eff.turns}[b.measure]
    if got is None:
        return None, f"not measured: no model ran, so no {b.measure}"
    ok = got <= b.at_most
    match b.measure:
        case "commands":
            said = f"ran {got} command{'s' if got != 1 else ''}"
        case "turns":
            said = f"took {got} turn{'s' if got != 1 else ''}"
        case "tokens":
            said = (f"used {got:,} tokens (input {eff.input_tokens:,}, cached "
                    f"{eff.cached_input_tokens:,}, output {eff.output_tokens:,})")
        case _:
            said = f"took {got:.1f} s"
    if b.vs_base is not None and b.base:
        said += (f", {got / b.base:.2f}x the base version's {_number(b.base)} "
                 f"(at most {b.vs_base:g}x)")
    return ok, said


def declared_outputs(case: c.EvalCase) -> list[str] | None:
    """What the case declares it leaves: its ``outputs`` and the paths its file checks name.
    None: it declares nothing."""
    named = [a.path for a in case.assertions if isinstance(a, c.FILE_CHECKS)]
    out = [*case.outputs, *named]
    return out or None


def is_declared(path: str, declared: Iterable[str]) -> bool:
    """``path`` is a declared output: equal to one, inside a declared folder, or matching a
    shell pattern (``*`` crosses folders; ``**/`` may also stand for none)."""
    for d in declared:
        d = d.strip()
        if d in ("", ".", "./"):
            return True
        d = d.removeprefix("./")
        folder = d.rstrip("/")
        if path == folder or path.startswith(folder + "/"):
            return True
        # `**/` also stands for no folder at all (`**/*.log` holds `debug.log`)
        if any(fnmatchcase(path, p) for p in {d, d.replace("**/", "")}):
            return True
    return False


def stray_files(outputs: Iterable[str], case: c.EvalCase) -> list[str] | None:
    """The outputs outside what the case declares, sorted. None: the case declares no
    output and asks for none to be stray (no `no_stray_files`), so nothing is called stray."""
    declared = declared_outputs(case)
    asks = any(isinstance(a, c.NoStrayFiles) for a in case.assertions)
    if declared is None and not asks:
        return None
    return sorted(p for p in outputs if not is_declared(p, declared or []))


def stray_evidence(stray: list[str] | None) -> tuple[bool, str]:
    """The `no_stray_files` verdict on the attempt's stray files."""
    if not stray:
        return True, "no file outside the declared outputs"
    shown = ", ".join(stray[:20]) + (f" and {len(stray) - 20} more" if len(stray) > 20 else "")
    return False, f"{len(stray)} stray file{'s' if len(stray) != 1 else ''}: {shown}"


EFFICIENCY_COLUMNS = ("turns", "tool calls", "commands", "tokens in / cached / out", "wall",
                      "stray files")


def efficiency_cells(eff: Efficiency | None, stray: list[str] | None) -> tuple[str, ...]:
    """The efficiency row of a case as every view shows it (summary.md, report.html), in
    `EFFICIENCY_COLUMNS` order: ``–`` for what was not measured (no model: no turns or
    tokens; the attempt never ran: nothing; no declared output: no stray files)."""
    stray_cell = "–" if stray is None else (", ".join(stray[:10]) + (
        f" (+{len(stray) - 10})" if len(stray) > 10 else "") if stray else "none")
    if eff is None:
        return ("–",) * 5 + (stray_cell,)
    tokens = "–" if eff.tokens is None else (
        f"{eff.input_tokens:,} / {eff.cached_input_tokens:,} / {eff.output_tokens:,}")
    turns = "–" if eff.turns is None else str(eff.turns) + (
        " (stopped at max_turns)" if eff.stopped_at_turn_limit else "")
    return (turns, str(eff.tool_calls), str(eff.commands), tokens, f"{eff.wall_s:.1f} s",
            stray_cell)
