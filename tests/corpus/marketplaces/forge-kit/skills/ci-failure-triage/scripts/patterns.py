"""The categories of CI log lines, tried in order: the first match wins."""

from __future__ import annotations

import re

RULES: list[tuple[str, re.Pattern[str]]] = [
    ("timeout", re.compile(r"exceeded the maximum execution time|timed out after", re.I)),
    ("infra", re.compile(r"runner has received a shutdown signal|lost communication with the "
                         r"server|no space left on device", re.I)),
    ("deps", re.compile(r"no matching distribution|could not resolve dependencies|"
                        r"ERESOLVE|ResolutionImpossible", re.I)),
    ("lint", re.compile(r"^\S+:\d+:\d+: [A-Z]\d{3,4} |would reformat ")),
    ("test", re.compile(r"^FAILED |^E\s+AssertionError|\d+ failed(,| in)")),
]

RERUN = {"timeout", "infra"}


def strip_timestamp(line: str) -> str:
    """A GitHub Actions log line without its `2024-05-02T10:01:00.1234567Z ` prefix."""
    return re.sub(r"^\d{4}-\d\d-\d\dT[\d:.]+Z ", "", line)


def classify_line(line: str) -> str | None:
    """The category of one log line, or None."""
    text = strip_timestamp(line.rstrip("\n"))
    for category, pattern in RULES:
        if pattern.search(text):
            return category
    return None
