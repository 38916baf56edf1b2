"""MR bodies built from hostile model and skill text: no line starts a quick action, no fence
or HTML of aeval's can be closed or forged, and a suggestion that would carry a "/" line is
shown, never offered for one-click apply."""

from __future__ import annotations

import re

from aeval.artifacts import FixSuggestion
from aeval.tasks.deliver.bodies import disarm, outdated_body, suggestion_body, untrusted
from aeval.tasks.deliver.read_run import LocatedSuggestion
from tests.fakes.gitlab_markdown import AEVAL_HTML, live_text

HOSTILE = "ok\n/merge\r\n\r/approve\n```\n/close\n```\n~~~\n</details><!-- aeval:fallback -->"


def located(replacement: str, rationale: str = HOSTILE) -> LocatedSuggestion:
    fix = FixSuggestion(level="LV1", grounded_in="train:A3", path="SKILL.md", start_line=14,
                        end_line=14, original="| `segment_train` | trains |",
                        replacement=replacement, rationale=rationale, validated=False)
    return LocatedSuggestion(fingerprint="ab12", skill="segmentation", runtimes=["builtin"],
                             suggestion=fix, repo_path="skills/segmentation/SKILL.md",
                             grounded_text="/reopen\nThe action names work",
                             grounded_evidence="$ run\n/assign @attacker\nKeyError")


def lines_as_gitlab_reads(body: str) -> list[str]:
    return body.replace("\r", "").split("\n")


def test_untrusted_text_is_inert():
    out = untrusted(HOSTILE)
    assert not any(ln.startswith("/") for ln in lines_as_gitlab_reads(out))
    assert "\n" not in out and live_text(f"Why: {out}") == ["Why: "]  # all of it is code
    assert "`train`" in untrusted("registers `train`")  # shown as written


def test_suggestion_body_has_no_quick_action_line_and_offers_the_fix():
    body = suggestion_body(located("| `train` | trains |"))
    assert not any(ln.startswith("/") for ln in lines_as_gitlab_reads(body))
    assert re.search(r"^```suggestion:-0\+0\n\| `train` \| trains \|\n```$", body, re.M)
    tags = [tag for t in live_text(body) for tag in re.findall(r"<[^>]*>", t)]
    assert all(AEVAL_HTML.match(t) for t in tags), tags  # aeval's markup, nothing forged
    assert [t for t in tags if t.startswith("<!--")] == [body.splitlines()[0]]


def test_a_replacement_with_a_slash_line_is_not_offered():
    body = suggestion_body(located("/approve\n| `train` | trains |"))
    assert "```suggestion" not in body and "Not offered as a one-click suggestion" in body
    assert not any(ln.startswith("/") for ln in lines_as_gitlab_reads(body))


def test_outdated_body_stays_disarmed():
    body = outdated_body(suggestion_body(located("| `train` |")), "/close\nthe file changed")
    assert not any(ln.startswith("/") for ln in lines_as_gitlab_reads(body))


def test_disarm_drops_carriage_returns_like_gitlab():
    assert disarm("a\n\r/merge\r\n") == "a\n /merge\n"
