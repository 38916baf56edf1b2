"""The scripted comparative graders the head-vs-base end-to-end tests share: a careful one
that prefers the output holding the right figure wherever it is shown (or says tie when both
or neither hold it), as a good grader would."""

from __future__ import annotations

import json

from aeval.testing.model_server import Script, Turn

COMPARE = "You are the COMPARATIVE GRADER"
GRADER = "You are the GRADER of an aeval test run"


def holds(label: str, right: str) -> str:
    """A regex for output ``label`` (A or B) holding ``right`` (a regex) in its block."""
    return rf"<output_{label} id=\w+>\n(?:(?!</output_{label} ).)*(?:{right})"


def says(winner: str, output: str, quote: str, why: str) -> Turn:
    reasons = [] if winner == "tie" else [{"output": output, "quote": quote, "why": why}]
    return Turn(text=json.dumps({"winner": winner, "reasons": reasons}))


def careful(right: str, quote: str, why: str) -> list[Script]:
    """The output matching ``right`` wins in either position, its reason quoting ``quote``
    (which must be in it verbatim)."""
    def say(winner: str, output: str = "A") -> Turn:
        return says(winner, output, quote, why)

    a, b = holds("A", right), holds("B", right)
    return [
        Script(name="both-right", match=rf"(?s){COMPARE}.*{a}.*{b}", turns=[say("tie")]),
        Script(name="a-right", match=rf"(?s){COMPARE}.*{a}", turns=[say("A", "A")]),
        Script(name="b-right", match=rf"(?s){COMPARE}.*{b}", turns=[say("B", "B")]),
        Script(name="neither", match=COMPARE, turns=[say("tie")]),
    ]
