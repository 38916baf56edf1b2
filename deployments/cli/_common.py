"""Constants and option groups shared by the command modules."""

from __future__ import annotations

import argparse

from aeval.exit_codes import FAIL as EXIT_FAIL  # noqa: F401 (the commands' names for them)
from aeval.exit_codes import INTERNAL as EXIT_INTERNAL  # noqa: F401
from aeval.exit_codes import USAGE as EXIT_USAGE  # noqa: F401
from aeval.exit_codes import epilog

EPILOG = epilog()
"""The exit codes of `aeval run`, from `aeval.exit_codes` (docs/statuses-and-exit-codes.md's
table is the same)."""


def flag_problem(exc: Exception) -> str:
    """A request model's ValidationError as one line naming the command-line flag: the
    request's fields are the flags (``max_turns`` is ``--max-turns``)."""
    errors = getattr(exc, "errors", lambda: [])()
    if not errors:
        return str(exc).splitlines()[0]
    e = errors[0]
    field = str(e["loc"][0]) if e.get("loc") else "?"
    return f"--{field.replace('_', '-')}: {e['msg']}"


def add_verbose(p: argparse.ArgumentParser, prefect: bool = False) -> None:
    """-v: the traceback of an internal error (exit 4); for the commands that run flows, also
    Prefect's own logs, which are kept off the console otherwise."""
    p.add_argument("-v", "--verbose", action="store_true",
                   help=("show Prefect's own logs, and " if prefect else "show ")
                   + "the traceback of an internal error")


def add_quiet_verbose(p: argparse.ArgumentParser) -> None:
    """-q (no progress lines) and -v, for the commands that run flows."""
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_verbose(p, prefect=True)


def add_grader_options(p: argparse.ArgumentParser) -> None:
    """--grader-model, --no-grader and --api-base, as every command that grades has them."""
    p.add_argument("--grader-model", help="grader model, or AEVAL_GRADER_MODEL (default: the "
                                          "executor model)")
    p.add_argument("--no-grader", action="store_true",
                   help="no grader model: natural-language assertions stay ungraded")
    p.add_argument("--api-base", help="model API base URL, or AEVAL_API_BASE")
