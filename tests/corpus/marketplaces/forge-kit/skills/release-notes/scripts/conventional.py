"""Conventional-commit subjects: `type(scope)!: description`."""

from __future__ import annotations

import re
from typing import NamedTuple

SUBJECT = re.compile(r"^(?P<type>[a-z]+)(?:\((?P<scope>[^)]+)\))?(?P<bang>!)?: (?P<desc>.+)$")


class Commit(NamedTuple):
    type: str
    scope: str | None
    breaking: bool
    description: str


def parse_subject(subject: str, body: str = "") -> Commit:
    """The parts of one commit; a subject without the convention is of type `other`."""
    m = SUBJECT.match(subject.strip())
    breaking = "BREAKING CHANGE:" in body
    if not m:
        return Commit("other", None, breaking, subject.strip())
    return Commit(m["type"], m["scope"], breaking or bool(m["bang"]), m["desc"])
