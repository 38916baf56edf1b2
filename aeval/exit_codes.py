"""The exit codes of `aeval run` (and `sweep`, `show`, `trigger`): one table, read by the
gate (`aeval.verdicts.status.gate`), the command line's ``--help`` epilog and the
documentation (docs/statuses-and-exit-codes.md), whose table a unit test compares with
`markdown_table` (so the three cannot drift apart again: ``--help`` listed 1, 2, 3, 0, 4
while the README said 1, 2, 4, 3, 0).

Listed in the gate's order: the first that applies is the exit code.
"""

from __future__ import annotations

import textwrap
from typing import NamedTuple

FAIL = 1
USAGE = 2
ENVIRONMENT = 3
INTERNAL = 4
TOO_FEW_TESTED = 5
"""Fewer case runs tested than ``--min-tested`` asks: a code of its own (not 2, whose "fix
the input" is a skill's or the command's), so CI can tell a run that proved nothing from one
that found a defect, and a pipeline can choose to let it pass with a warning (GitLab's
``allow_failure: exit_codes: [5]``)."""
OK = 0
INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, as a shell reports it): any command, never in the gate."""
TERMINATED = 143
"""SIGTERM (128 + 15: a CI runner's cancel or timeout): `run` and `sweep` stop their cases
and record them as cancelled (`aeval run --resume` runs them); never in the gate."""


class ExitCode(NamedTuple):
    code: int
    meaning: str
    """What happened, in one sentence (plain text: shown by --help and in
    docs/statuses-and-exit-codes.md)."""
    in_ci: str
    """What it means for a merge request's pipeline."""


RUN_EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(FAIL, "a case failed: a skill defect; on a run of a change (--changed-since), "
                   "also an environment error the change introduced (its own setup, "
                   "preflight or credentials)", "blocks the merge"),
    ExitCode(USAGE, "a usage error, or an invalid skill (SKILL.md or eval.config cannot be "
                    "loaded); with --require-tested, an untested case too", "fix the input"),
    ExitCode(INTERNAL, "internal error: aeval itself failed (a bug to report; -v shows the "
                       "traceback)", "report it"),
    ExitCode(ENVIRONMENT, "an environment error after retries (model API, preflight, missing "
                          "credential), and no skill failure", "retry; never a skill defect"),
    ExitCode(TOO_FEW_TESTED, "fewer case runs were tested (passed or failed) than --min-tested "
                             "N (or AEVAL_MIN_TESTED) asks; by default N is 0", "blocks the "
                             "merge: add cases that run (eval.config steps) or a model runtime"),
    ExitCode(OK, "every tested case passed (untested cases are listed as a warning, never "
                 "counted as a pass); a run that tested nothing says `no case was tested`",
             "green"),
)


def epilog(command: str = "aeval run") -> str:
    """The ``--help`` epilog: the codes in the gate's order, each meaning wrapped."""
    lines = [f"exit codes of `{command}` (first match wins):"]
    for e in RUN_EXIT_CODES:
        lines += textwrap.wrap(f"{e.meaning} [CI: {e.in_ci}]", width=88,
                               initial_indent=f"  {e.code}  ", subsequent_indent="     ")
    return "\n".join(lines) + "\n"


def markdown_table() -> str:
    """The documentation's table (docs/statuses-and-exit-codes.md) of the same codes, in the
    same order."""
    rows = ["| code | meaning | in CI |", "|---|---|---|"]
    rows += [f"| {e.code} | {e.meaning} | {e.in_ci} |" for e in RUN_EXIT_CODES]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # python -m aeval.exit_codes: the documentation's table, to paste
    print(markdown_table(), end="")
