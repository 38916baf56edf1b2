"""What `aeval` prints: quiet embedded-Prefect defaults, progress lines, the summary table.

Width: on a terminal, tables fold their cells to the terminal's width; piped or captured
(CI logs, `| grep`, tests), nothing wraps: every line is printed whole at a fixed wide width,
whatever ``COLUMNS`` says, so a line of evidence stays one greppable line.

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
from pathlib import Path

from aeval.text import InertFilter, escape_controls

# Piped output is never wrapped: wide enough for any row of the summary table.
PIPE_WIDTH = 4096


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


def evidence_line(text: str, cap: int = 160) -> str:
    """The most telling line of evidence: the last non-empty one (tracebacks end there)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    last = lines[-1] if len(lines) == 1 else f"{lines[0][:80]} … {lines[-1]}"
    return last if len(last) <= cap else last[: cap - 1] + "…"


def shown(text: object) -> str:
    """Untrusted text for a rich console: inert, and rich markup escaped."""
    from rich.markup import escape

    return escape(inert(text))


def print_summary(manifest, run_dir: Path) -> None:
    from rich.table import Table

    from aeval.artifacts import Grading
    from aeval.store import read_model

    console = make_console()
    table = Table(title=f"aeval run {manifest.run_id}", title_justify="left")
    for col in ("skill", "case", "runtime", "status", "first-attempt", "terminal", "tier"):
        table.add_column(col, overflow="fold")
    style = {"pass": "green", "fail": "red", "error": "yellow", "invalid": "magenta",
             "untested": "cyan", "internal": "bold red"}

    def pct(x):
        return "–" if x is None else f"{x:.0%}"

    details = []
    untested = []
    for s in manifest.skills:
        if s.status == "invalid":
            table.add_row(shown(s.name), "–", "–", "[magenta]invalid[/]", "–", "–", "–")
            details += [f"[magenta]{shown(s.name)}[/]: {shown(p)}" for p in s.problems]
            continue
        for c in s.cases:
            status = c.status + (f", {c.ungraded} ungraded" if c.ungraded else "") + (
                " (unchanged: reused)" if c.reused_from else "")
            name = c.case_id + (f" #{c.epoch}" if c.epoch is not None else "")
            tested = c.status != "untested"  # an untested case has no rate to show
            table.add_row(shown(s.name), shown(name), shown(c.runtime),
                          f"[{style[c.status]}]{shown(status)}[/]",
                          f"{pct(c.first_attempt_pass_rate)} ({c.passed}/{c.passed + c.failed})"
                          if tested else "–", pct(c.terminal_pass_rate) if tested else "–",
                          shown(s.tier or "–"))
            if c.status == "pass":
                continue
            head = f"[{style[c.status]}]{shown(f'{s.name}/{name} [{c.runtime}]')}[/]"
            if c.reused_from:
                head += shown(f" (verdict of {c.reused_from}, unchanged since)")
            if c.status == "untested":
                note = " (SKILL.md's doc test beside the contract; the other cases decide " \
                       "the skill's verdict)" if c.supplementary else ""
                untested.append(f"{head}: {shown(evidence_line(c.reason, 300))}"
                                f"[dim]{shown(note)}[/]")
                continue
            grading = run_dir / c.dir / "grading.json"
            if c.status == "error" or not grading.is_file():
                details.append(f"{head}: {shown(c.reason)}")
                continue
            g = read_model(grading, Grading)
            for e in g.expectations:
                if e.status == "failed":
                    details.append(f"{head} {shown(e.id)} {shown(e.text)}\n      "
                                   f"{shown(evidence_line(e.evidence))}")
    console.print(table)
    if details:
        console.print("\nWhat failed, with evidence:")
        for d in details:
            console.print(f"  {d}")
    if untested:
        console.print("\nNot tested (never counted as a pass), and why:")
        for d in untested:
            console.print(f"  {d}")
    for s in manifest.skills:
        for w in s.warnings:
            console.print(f"[dim]lint: {shown(w)}[/]")
    g = manifest.gate
    console.print(f"\nartifacts: {shown(run_dir)}")
    console.print(f"exit {g.exit_code}: {shown(g.reason)}")


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
