"""What `aeval` prints: quiet embedded-Prefect defaults, progress lines (starting Prefect
included), the summary.

Width: on a terminal the summary is sized to it: the table from 100 columns (`COMPACT_BELOW`),
a compact list of two lines a case below; evidence up to about two lines of the terminal,
a failed command and the end of its output one line each. Piped or captured (CI logs,
`| grep`, tests), nothing wraps: every line is printed whole at a fixed wide width, whatever
``COLUMNS`` says, so a line of evidence stays one greppable line.

Untrusted text (skill names, reasons, evidence, paths) is inert on the console: `inert`
writes control characters and ESC sequences as visible escapes (``\x1b``), so step output
cannot recolour the terminal, hide a link or rewrite CI log lines. Plain ``print`` output
goes through `QuietPipe`, which applies it to every write; rich output (whose own styles are
ESC sequences) goes around it, and what it shows is passed through `inert` cell by cell;
progress lines are made inert by a logging filter.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from aeval.isolation.text import InertFilter, escape_controls

# Piped output is never wrapped: wide enough for any row of the summary table.
PIPE_WIDTH = 4096
# Above this many case rows, a skill's passing case runs of one runtime are one row: a
# nightly sweep of 1,000 cases printed 1,100 rows of `pass` around the few that matter.
FOLD_PASSING_ABOVE = 50


def inert(text: object) -> str:
    """``text`` as the console may show it: control characters and ESC sequences escaped
    (``\x1b[31m`` stays those nine characters), newlines and tabs kept."""
    return escape_controls(str(text))


def prefect_env(verbose: bool) -> None:
    """Quiet, offline defaults for the embedded Prefect, set before Prefect is imported."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # the embedded Prefect is part of aeval: no usage telemetry (and no notice about it on the
    # console of a first run) unless the user opts in with DO_NOT_TRACK=0
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    if not verbose:
        # Without -v the console shows aeval's own lines only: one progress line per case,
        # the summary, the gate. A failed task is already a case status with its reason, so
        # Prefect's `ERROR | Task run ... failed` lines and their tracebacks (a missing model
        # key printed ~200 lines of them) stay in the Prefect UI and the artifacts. Prefect's
        # console handler (its root logger's only handler) is silenced below CRITICAL, and
        # the embedded server logs its own shutdown races at ERROR: nothing a user can act on.
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")


_spawned_at: float | None = None


def start_prefect() -> None:
    """Spawn the embedded Prefect server in the background
    (`aeval.tasks._engine.servers.embedded.start_early`) and say so on the progress line: it
    takes seconds to boot (more on a fresh PREFECT_HOME), and the user is not left staring at
    nothing. Call it after `progress_logging`."""
    global _spawned_at
    from aeval.tasks._engine.servers.embedded import start_early

    server = start_early()
    if server is not None and _spawned_at is None:
        _spawned_at = time.monotonic()
        logging.getLogger("aeval.progress").info(server_line(server))


def server_line(server) -> str:
    """What the run uses and what it leaves: an embedded server (this run's own, stopped at
    its end), or the local server later runs reuse, started now or found running; that one
    and the warm process stay until idle, and the line says how to stop them."""
    record = getattr(server, "record", None)
    if record is None:
        return "starting Prefect (embedded server, stopped when this run ends) …"
    from aeval.tasks._engine.servers.home import idle_seconds

    kept = f"kept {idle_seconds() / 60:g} min idle for later runs; `aeval server stop`"
    if getattr(server, "spawned", False):
        return f"starting the local Prefect server ({kept}) …"
    return f"using the local Prefect server (pid {record.pid}; {kept})"


def prefect_ready() -> None:
    """Wait for the Prefect server the flows will use (`start_embedded_server`: the one
    `start_prefect` spawned, or Prefect's own start), then say how long it took to boot."""
    global _spawned_at
    from aeval.tasks._engine import start_embedded_server

    start_embedded_server()
    if _spawned_at is not None:
        logging.getLogger("aeval.progress").info(
            "Prefect ready (%.1f s)", time.monotonic() - _spawned_at)
        _spawned_at = None


def make_console():
    """A rich console on stdout: folds to the terminal, or never wraps when piped. It writes
    around `QuietPipe`'s escaping (its styles are ESC sequences): pass what it shows through
    `inert`."""
    from rich.console import Console

    out = sys.stdout.styled if isinstance(sys.stdout, QuietPipe) else None
    console = Console(highlight=False, file=out)
    if not console.is_terminal:
        console = Console(highlight=False, width=PIPE_WIDTH, soft_wrap=True, file=out)
    return console


class _StdoutHandler(logging.Handler):
    """Plain progress lines (``HH:MM:SS message``) on whatever ``sys.stdout`` is at the time:
    unpadded and unwrapped, for pipes and CI logs."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stdout.write(inert(self.format(record)) + "\n")
            sys.stdout.flush()
        except Exception:  # logging must never break the run
            self.handleError(record)


def progress_logging(quiet: bool) -> None:
    """Route the ``aeval.progress`` logger to the console: rich on a terminal, plain lines
    when piped. Idempotent (one handler per process)."""
    logger = logging.getLogger("aeval.progress")
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
    if logger.handlers:
        return
    console = make_console()
    if console.is_terminal:
        from rich.logging import RichHandler

        handler: logging.Handler = RichHandler(console=console, show_path=False,
                                               show_level=False, markup=False,
                                               log_time_format="%H:%M:%S")
    else:
        handler = _StdoutHandler()
    handler.addFilter(InertFilter())
    logger.addHandler(handler)


COMPACT_BELOW = 100
"""Below this many columns the summary is a list, two lines a case, instead of the table
(seven columns do not fit: `csv-stats` folded into `csv-s/tats`)."""
PIPE_EVIDENCE_CAP = 1000
"""Characters of one evidence line when piped (no terminal to size it to)."""
TAIL_LINES = 3
"""Lines of a failed command's output shown under it (the end: tracebacks end there)."""


def evidence_line(text: str, cap: int = 160) -> str:
    """The most telling line of evidence: the last non-empty one (tracebacks end there),
    after the first when there are several, cut to ``cap`` characters."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    head = max(20, cap // 3)
    last = lines[-1] if len(lines) == 1 else f"{lines[0][:head]} … {lines[-1]}"
    return last if len(last) <= cap else last[: cap - 1] + "…"


def shown(text: object) -> str:
    """Untrusted text for a rich console: inert, and rich markup escaped."""
    from rich.markup import escape

    return escape(inert(text))


def _cut(text: str, cap: int) -> str:
    return text if len(text) <= cap else text[: cap - 1] + "…"


STATUS_STYLE = {"pass": "green", "fail": "red", "error": "yellow", "invalid": "magenta",
                "untested": "cyan", "internal": "bold red"}


class _Summary:
    """What `print_summary` shows, sized to ``width`` columns: evidence up to two lines of
    the terminal (`PIPE_EVIDENCE_CAP` when piped), the table or, below `COMPACT_BELOW`
    columns, the compact list."""

    def __init__(self, width: int, piped: bool) -> None:
        self.width = width
        self.compact = width < COMPACT_BELOW
        self.indent = 4 if self.compact else 6
        room = max(20, width - self.indent)
        self.cap = PIPE_EVIDENCE_CAP if piped else int(1.8 * room)  # two folded lines
        self.line_cap = PIPE_EVIDENCE_CAP if piped else room - 2  # one line, unfolded
        self.tail_lines = 2 if self.compact else TAIL_LINES

    def failed_commands(self, g) -> list[str]:
        """The commands that failed on the first attempt: each with its exit code and the
        end of its output (a failing doc test's evidence as the user would see it run)."""
        out = []
        errors = g.self_correction.first_attempt_errors
        for f in errors[:2]:
            code = "" if f.exit_code is None else f", exit {f.exit_code}"
            where = f"  (event {f.seq}{code})"
            out.append(shown(_cut(f"$ {f.command or f.tool}", self.line_cap - len(where)))
                       + f"[dim]{shown(where)}[/]")
            # the end of its output, without a traceback's ~~~^^^ marker lines
            tail = [ln.rstrip() for ln in (f.excerpt or "").splitlines()
                    if ln.strip() and ln.strip(" ~^")]
            out += [f"[dim]│[/] {shown(_cut(ln, self.line_cap - 2))}"
                    for ln in tail[-self.tail_lines:]]
        if len(errors) > 2:
            out.append(f"[dim]… and {len(errors) - 2} more failed command(s) in "
                       f"grading.json[/]")
        return out


def _rates(c) -> tuple[str, str]:
    """(first-attempt, terminal) cells of a case (`aeval.verdicts.status.rate_cells`)."""
    from aeval.verdicts.status import rate_cells

    return rate_cells(c)


def _foldable(c) -> bool:
    """A case run that a long summary folds into its skill's row: a plain pass (nothing
    ungraded, not reused)."""
    return c.status == "pass" and not c.ungraded and not c.reused_from


def _passing_by_runtime(cases) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in cases:
        if _foldable(c):
            out.setdefault(c.runtime, []).append(c)
    return out


def _folded_row(s, runtime: str, cases: list, style: str) -> tuple[str, ...]:
    """One row for a skill's passing case runs of one runtime: how many, and their
    first-attempt assertions together."""
    passed = sum(c.passed for c in cases)
    graded = sum(c.passed + c.failed for c in cases)
    n = len(cases)
    first = f"{_pct(passed / graded)} ({passed}/{graded})" if graded else "–"
    return (shown(s.name), f"{n} case run{'s' if n != 1 else ''}", shown(runtime),
            f"[{style}]pass[/]", first, "–", shown(s.tier or "–"))


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


def _shown_path(path: Path, compact: bool) -> str:
    """A path as the summary names it: relative to the working folder on a narrow terminal
    when it is under it (`.aeval/runs/<id>`), else absolute."""
    if compact:
        with contextlib.suppress(ValueError, OSError):
            return shown(Path(path).resolve().relative_to(Path.cwd().resolve()))
    return shown(path)


Row = tuple[str, str, str, str, str, str, str]
"""A summary row: skill, case, runtime, status markup, first-attempt, terminal, tier."""
Failure = tuple[str, list[tuple[str, list[str]]]]
"""What failed in one case (or invalid skill): its head, then (label, evidence lines) items;
label "" for the reason."""


@dataclass
class _Found:
    """What the summary shows of a run, before it is laid out."""

    rows: list[Row] = field(default_factory=list)
    folded_rows: set[int] = field(default_factory=set)
    """Indices of the rows that hold a skill's passing case runs of one runtime."""
    folded: int = 0
    """Case runs folded into those rows."""
    failures: list[Failure] = field(default_factory=list)
    untested: list[str] = field(default_factory=list)


def _pad(text: str, left: int):
    from rich.padding import Padding

    return Padding(text, (0, 0, 0, left), expand=False)


def _case_name(c) -> str:
    return c.case_id + (f" #{c.epoch}" if c.epoch is not None else "")


def _case_row(s, c) -> Row:
    status = c.status + (f", {c.ungraded} ungraded" if c.ungraded else "") + (
        " (unchanged: reused)" if c.reused_from else "")
    first, terminal = _rates(c)
    return (shown(s.name), shown(_case_name(c)), shown(c.runtime),
            f"[{STATUS_STYLE[c.status]}]{shown(status)}[/]", first, terminal,
            shown(s.tier or "–"))


def _case_head(s, c) -> str:
    """A case as the failure and untested lists name it: skill/case [runtime], coloured."""
    head = f"[{STATUS_STYLE[c.status]}]{shown(f'{s.name}/{_case_name(c)} [{c.runtime}]')}[/]"
    if c.reused_from:
        head += shown(f" (verdict of {c.reused_from}, unchanged since)")
    return head


def _untested_line(view: _Summary, head: str, c) -> str:
    note = " (SKILL.md's doc test beside the contract; the other cases decide " \
           "the skill's verdict)" if c.supplementary else ""
    return f"{head}: {shown(evidence_line(c.reason, view.cap))}[dim]{shown(note)}[/]"


def _assertion_items(view: _Summary, g) -> list[tuple[str, list[str]]]:
    """Each assertion that failed on the first attempt, with its evidence (the id alone
    labels it on a narrow terminal)."""
    return [(f"{shown(e.id)} {shown(e.text)}" if not view.compact else shown(e.id),
             [shown(evidence_line(e.evidence, view.cap))])
            for e in g.expectations if e.status == "failed"]


def _failure_items(view: _Summary, run_dir: Path, c) -> list[tuple[str, list[str]]]:
    """A failed or errored case's evidence: the reason alone (an error, no grading.json),
    else each failed assertion with its evidence, then the commands that failed."""
    from aeval.run.read import read_grading

    g = None if c.status == "error" else read_grading(run_dir / c.dir)
    if g is None:
        return [("", [shown(c.reason)])]
    items = _assertion_items(view, g) or [("", [shown(c.reason)])]  # never without evidence
    if c.status == "fail" and (commands := view.failed_commands(g)):
        items.append(("failed command(s):" if not view.compact else "", commands))
    return items


def _add_folded(found: _Found, s) -> None:
    """A row for each runtime's passing case runs of skill ``s``."""
    for runtime, cases in _passing_by_runtime(s.cases).items():
        found.rows.append(_folded_row(s, runtime, cases, STATUS_STYLE["pass"]))
        found.folded_rows.add(len(found.rows) - 1)
        found.folded += len(cases)


def _add_skill(found: _Found, view: _Summary, run_dir: Path, s, fold: bool) -> None:
    """A skill's rows (its passing case runs folded when ``fold``), failures and untested
    cases."""
    if fold:
        _add_folded(found, s)
    if s.status == "invalid":
        found.rows.append((shown(s.name), "–", "–", "[magenta]invalid[/]", "–", "–", "–"))
        found.failures.append((f"[magenta]{shown(s.name)}[/]",
                               [("", [shown(p)]) for p in s.problems]))
        return
    for c in s.cases:
        if not (fold and _foldable(c)):
            found.rows.append(_case_row(s, c))
        if c.status == "pass":
            continue
        head = _case_head(s, c)
        if c.status == "untested":
            found.untested.append(_untested_line(view, head, c))
        else:
            found.failures.append((head, _failure_items(view, run_dir, c)))


def _print_compact_rows(console, title: str, found: _Found) -> None:
    """Below `COMPACT_BELOW` columns: a case on a line, its rates and tier under it."""
    console.print(title)
    for i, (name, case, runtime, status, first, terminal, tier) in enumerate(found.rows):
        if i in found.folded_rows:
            console.print(_pad(f"{name} [dim]\\[{runtime}][/]: {status}, {case}", 2))
        else:
            console.print(_pad(f"{name}/{case} [dim]\\[{runtime}][/]: {status}"
                               if case != "–" else f"{name}: {status}", 2))
        facts = [f"first attempt {first}"] if first != "–" else []
        facts += [f"terminal {terminal}"] if terminal != "–" else []
        facts += [f"tier {tier}"] if tier != "–" else []
        if facts:
            console.print(_pad(f"[dim]{', '.join(facts)}[/]", 4))


def _print_table(console, title: str, found: _Found) -> None:
    """The table, and what its terminal column means when a case was tested."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in ("skill", "case", "runtime", "status", "first-attempt", "terminal", "tier"):
        table.add_column(col, overflow="fold")
    for row in found.rows:
        table.add_row(*row)
    console.print(table)
    if any(r[4] != "–" for r in found.rows):
        console.print("[dim]terminal: the pass rate after the executor's own corrections;"
                      " – where there was no later attempt (literal runs once)[/]")


def _print_failure(console, view: _Summary, head: str,
                   items: list[tuple[str, list[str]]]) -> None:
    if view.compact:  # the case once, then each failure under it
        console.print(_pad(head, 2))
        for label, lines in items:
            first_line, *rest = lines
            console.print(_pad(f"{label} {first_line}" if label else first_line, 4))
            for ln in rest:
                console.print(_pad(ln, 6))
        return
    for label, lines in items:  # one greppable line per failure, naming its case
        if not label:
            console.print(_pad(f"{head}: {lines[0]}", 2))
            lines = lines[1:]
        else:
            console.print(_pad(f"{head} {label}", 2))
        for ln in lines:
            console.print(_pad(ln, view.indent))


def _print_folded_note(console, folded: int) -> None:
    if folded:
        console.print(f"[dim]{folded:,} passing case run(s) shown as one row per skill and "
                      f"runtime (over {FOLD_PASSING_ABOVE} case runs); every case: run.json, "
                      f"report.html[/]")


def _print_failures(console, view: _Summary, failures: list[Failure]) -> None:
    if failures:
        console.print("\nWhat failed, with evidence:")
    for head, items in failures:
        _print_failure(console, view, head, items)


def _print_untested(console, untested: list[str]) -> None:
    if untested:
        console.print("\nNot tested (never counted as a pass), and why:")
    for line in untested:
        console.print(_pad(line, 2))


def _print_where(console, view: _Summary, run_dir: Path, gate) -> None:
    """Where the artifacts and report.html are (paths whole on one line: the terminal wraps
    them, a copy gets them entire), and the gate."""
    from aeval.run.layout import RunLayout

    console.print(f"\nartifacts: {_shown_path(run_dir, view.compact)}", soft_wrap=True)
    if (report := RunLayout(run_dir).report).is_file():
        console.print(f"report:    {_shown_path(report, view.compact)}", soft_wrap=True)
    console.print(f"exit {gate.exit_code}: {shown(gate.reason)}")


def print_summary(manifest, run_dir: Path, console=None) -> None:
    """The run's summary: a row per case (a table, or a compact list on a narrow terminal),
    what failed with its evidence (a failing command with its exit code and the end of its
    output), what was not tested and why, lint warnings, where the artifacts and report.html
    are, and the gate."""
    console = console or make_console()
    view = _Summary(console.width, piped=console.width >= PIPE_WIDTH)
    found = _Found()
    fold = sum(len(s.cases) for s in manifest.skills) > FOLD_PASSING_ABOVE
    for s in manifest.skills:
        _add_skill(found, view, run_dir, s, fold)
    title = f"aeval run {manifest.run_id}"
    (_print_compact_rows if view.compact else _print_table)(console, title, found)
    _print_folded_note(console, found.folded)
    _print_failures(console, view, found.failures)
    _print_untested(console, found.untested)
    for w in (w for s in manifest.skills for w in s.warnings):
        console.print(f"[dim]lint: {shown(w)}[/]")
    _print_where(console, view, run_dir, manifest.gate)


class QuietPipe:
    """``sys.stdout`` for the length of a command: a reader that goes away (``aeval schema
    eval-config | head -1``) ends the output, not the command. On the first broken pipe the
    stream's descriptor is pointed at /dev/null, so every later write (progress lines, the
    summary, the interpreter's final flush) succeeds silently and ``aeval run`` still
    finishes and exits with its gate code. Every write is made inert (`inert`): a skill's
    text in a printed line cannot act on the terminal. Everything else is the wrapped
    stream's."""

    def __init__(self, stream, escape: bool = True) -> None:
        self._stream = stream
        self._escape = escape
        self.broken = False
        self.styled = QuietPipe(stream, escape=False) if escape else self
        """The same stream without the escaping, for rich (`make_console`)."""

    def _silence(self) -> None:
        self.broken = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # not a real descriptor
            pass

    def write(self, text: str) -> int:
        try:
            return self._stream.write(inert(text) if self._escape else text)
        except BrokenPipeError:
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()
            with contextlib.suppress(OSError, ValueError):
                self._stream.flush()  # the buffered rest now goes to /dev/null

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
