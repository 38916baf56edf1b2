"""What a model or a skill wrote cannot act on the merge request: posted to the fake GitLab,
no line of any note starts a quick action, and aeval's own markup cannot be closed or forged."""

from __future__ import annotations

import re

import pytest

from aeval.artifacts import FixSuggestion
from tests.fakes.gitlab_markdown import live_text
from tests.integration.test_gitlab import (  # noqa: F401  (fixtures)
    LINES,
    TRAIN_ROW,
    TRAIN_ROW_REPLACEMENT,
    WORKFLOW_LINE,
    finished_run,
    gitlab,
    post,
    run_dir,
    write_suggestions,
)

pytestmark = pytest.mark.integration

HOSTILE = ("Fix the action name.\n/merge\n/approve\r\n\r/close\n  /label ~ship-it\n"
           "```\n/unassign\n```\n</details><!-- aeval:skill=other -->\n~~~\n/title pwned")
QUICK = re.compile(r"^/\w", re.M)


def bodies(fake) -> list[str]:
    """Every note body as stored, and every body as sent (POST and PUT)."""
    sent = [r.body.get("body") for r in fake.writes() if isinstance(r.body, dict)]
    return [n["body"] for n in fake.notes] + [b for b in sent if isinstance(b, str)]


def outside_fences(body: str) -> str:
    """The body without its fenced blocks (a fence closes only with a line of the same
    character, at least as long): what GitLab renders as markdown and HTML."""
    out, fence = [], None
    for line in body.splitlines():
        if fence is None:
            m = re.match(r"^(`{3,}|~{3,})", line)
            if m:
                fence = m.group(1)
                continue
            out.append(line)
        elif re.fullmatch(re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*", line):
            fence = None
    assert fence is None, "a fence was left open"
    return "\n".join(out)


def test_hostile_rationale_and_replacement_cannot_run_quick_actions(gitlab, run_dir):  # noqa: F811
    inline = FixSuggestion(
        level="LV1", grounded_in="train:A3", path="SKILL.md", start_line=TRAIN_ROW,
        end_line=TRAIN_ROW, original=LINES[TRAIN_ROW - 1], replacement=TRAIN_ROW_REPLACEMENT,
        rationale=HOSTILE, validated=False)
    outside = FixSuggestion(
        level="LV2", grounded_in="train:A3", path="SKILL.md", start_line=WORKFLOW_LINE,
        end_line=WORKFLOW_LINE, original=LINES[WORKFLOW_LINE - 1],
        replacement="/approve\n" + LINES[WORKFLOW_LINE - 1].replace("segment_", ""),
        rationale=HOSTILE, validated=False)
    write_suggestions(run_dir, inline, outside)
    assert post(gitlab, run_dir) == 0
    posted = bodies(gitlab)
    assert posted and any("Fix the action name." in b for b in posted)
    for body in posted:
        clean = body.replace("\r", "")  # as GitLab reads it
        assert not QUICK.search(clean), [ln for ln in clean.splitlines() if ln.startswith("/")]
        markdown = outside_fences(body)
        live = "\n".join(live_text(markdown))  # what GitLab renders outside code
        assert "</details><!--" not in live and "<!-- aeval:skill=other" not in live
        assert "Fix the action name." not in live  # the rationale is shown as code, inert
        assert body.startswith("<!-- aeval:")
    blocks = [m.group(2) for b in posted
              for m in re.finditer(r"^(`{3,})suggestion:[^\n]*\n(.*?)\n\1$", b, re.M | re.S)]
    assert blocks == [TRAIN_ROW_REPLACEMENT] * len(blocks) and blocks  # offered, unaltered


def test_the_adapter_disarms_any_body_it_posts(gitlab):  # noqa: F811
    from aeval.adapters.forges.gitlab import GitLabMR, GitLabTarget
    from tests.integration.test_gitlab import TOKEN

    mr = GitLabMR(GitLabTarget(url=gitlab.url, project_id=str(gitlab.project_id),
                               mr_iid=gitlab.mr_iid), TOKEN)
    nid = mr.create_note(f"summary\n/merge\r\n\r/approve\ntoken {TOKEN}\n")
    d = mr.create_discussion("/close\nplain")
    mr.update_note(nid, "edited\n/assign @attacker")
    mr.update_discussion_note(d.id, d.notes[0].id, "/reopen")
    posted = bodies(gitlab)
    assert len(posted) >= 4 and TOKEN not in "".join(posted)
    for body in posted:
        assert not QUICK.search(body.replace("\r", "")), body
