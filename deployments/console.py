"""What `aeval` prints: quiet embedded-Prefect defaults, progress lines, the summary table."""

from __future__ import annotations

import logging
import os
from pathlib import Path


def prefect_env(verbose: bool) -> None:
    """Quiet, offline defaults for the embedded Prefect, set before Prefect is imported."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    if not verbose:
        # The embedded server logs its own shutdown races at ERROR; nothing a user can act on.
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_FLOW_RUNS_LEVEL", "WARNING")
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_TASK_RUNS_LEVEL", "WARNING")


def make_console():
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(console.width, 120))
    return console


def progress_logging(quiet: bool) -> None:
    from rich.logging import RichHandler

    logger = logging.getLogger("aeval.progress")
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(RichHandler(show_path=False, show_level=False, markup=False,
                                      log_time_format="%H:%M:%S"))


def evidence_line(text: str, cap: int = 160) -> str:
    """The most telling line of evidence: the last non-empty one (tracebacks end there)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    last = lines[-1] if len(lines) == 1 else f"{lines[0][:80]} … {lines[-1]}"
    return last if len(last) <= cap else last[: cap - 1] + "…"


def print_summary(manifest, run_dir: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    from aeval.artifacts import Grading
    from aeval.store import read_model

    console = make_console()
    table = Table(title=f"aeval run {manifest.run_id}", title_justify="left")
    for col in ("skill", "case", "runtime", "status", "first-attempt", "terminal", "tier"):
        table.add_column(col, no_wrap=True)
    style = {"pass": "green", "fail": "red", "error": "yellow", "invalid": "magenta"}

    def pct(x):
        return "–" if x is None else f"{x:.0%}"

    details = []
    for s in manifest.skills:
        if s.status == "invalid":
            table.add_row(s.name, "–", "–", "[magenta]invalid[/]", "–", "–", "–")
            details += [f"[magenta]{escape(s.name)}[/]: {escape(p)}" for p in s.problems]
            continue
        for c in s.cases:
            status = c.status + (f", {c.ungraded} ungraded" if c.ungraded else "")
            name = c.case_id + (f" #{c.epoch}" if c.epoch is not None else "")
            table.add_row(s.name, name, c.runtime, f"[{style[c.status]}]{status}[/]",
                          f"{pct(c.first_attempt_pass_rate)} ({c.passed}/{c.passed + c.failed})",
                          pct(c.terminal_pass_rate), str(s.tier or "–"))
            if c.status == "pass":
                continue
            head = f"[{style[c.status]}]{escape(s.name)}/{escape(name)} [{c.runtime}][/]"
            grading = run_dir / c.dir / "grading.json"
            if c.status == "error" or not grading.is_file():
                details.append(f"{head}: {escape(c.reason)}")
                continue
            g = read_model(grading, Grading)
            for e in g.expectations:
                if e.status == "failed":
                    details.append(f"{head} {e.id} {escape(e.text)}\n      "
                                   f"{escape(evidence_line(e.evidence))}")
    console.print(table)
    if details:
        console.print("\nWhat failed, with evidence:")
        for d in details:
            console.print(f"  {d}")
    for s in manifest.skills:
        for w in s.warnings:
            console.print(f"[dim]lint: {escape(w)}[/]")
    g = manifest.gate
    console.print(f"\nartifacts: {run_dir}")
    console.print(f"exit {g.exit_code}: {escape(g.reason)}")
