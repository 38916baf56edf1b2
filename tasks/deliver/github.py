"""Deliver on GitHub: what aeval says on a pull request, built from a finished run folder.

The same plan as GitLab's (``tasks/deliver/placement.py``), in GitHub's terms:

- one issue comment per skill folder (the summary), and one fallback comment with patches
  and an agent prompt for the fixes outside the diff, marked and edited in place on rerun;
- one pull-request review (event ``COMMENT``) whose comments carry ```` ```suggestion ````
  blocks on the diff lines they replace, multi-line (``start_line``..``line``) where the fix
  spans lines; only the comments that are new go into a rerun's review, and aeval's comments
  whose suggestion no longer applies are marked outdated (REST cannot resolve a thread);
- a completed ``aeval`` check run on the head commit whose conclusion is the gate, with an
  annotation on the lines of each suggestion (LV1 failure, LV2 notice). Not on a fork's pull
  request: GitHub runs a fork's ``pull_request`` workflow from the fork's own copy, so the
  run folder (run.json's gate, every grading.json) is whatever that workflow uploaded, and
  no file of it can make the check green. There a gate that would pass concludes
  ``action_required`` (which no required status accepts), titled as the fork's own report;
  a failing gate stays a failure;
- the job summary (``$GITHUB_STEP_SUMMARY``) with the gate and a row per skill.

Only posts whose first line is an aeval marker and whose author is the token's user (a bot,
when the token cannot read its user, as Actions' ``GITHUB_TOKEN``) are aeval's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from aeval.adapters.forges.diff import FileDiff
from aeval.adapters.forges.github import (
    Annotation,
    GitHubError,
    GitHubPR,
    GitHubTarget,
    RemoteCheck,
    RemoteComment,
    ReviewComment,
)
from aeval.artifacts import RunManifest
from aeval.isolation.text import code_span, escape_controls, one_line
from aeval.strict import StrictModel
from aeval.tasks.deliver.bodies import _cell, github_suggestion_body, outdated_body
from aeval.tasks.deliver.forge import Delivered, Forge, PostTarget
from aeval.tasks.deliver.placement import (
    fallback_note,
    note_change,
    place_suggestions,
    reconcile_inline,
    summary_notes,
)
from aeval.tasks.deliver.read_run import (
    _ICON,
    OUTDATED_MARKER,
    FileLines,
    LocatedSuggestion,
    Placed,
    RunBundle,
    diff_index,
    diff_lines,
    suggestion_marker,
)

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
REVIEW_MARKER = "<!-- aeval:review -->"
_CONCLUSION = {0: "success", 1: "failure", 2: "failure", 3: "neutral", 4: "failure",
               5: "failure"}
_PASSING = frozenset({"success", "neutral", "skipped"})
"""Conclusions GitHub counts as passing a required status check."""
FORK_NOTE = ("reported by the fork's own workflow, not verified: a fork's pull request runs "
             "its own copy of the workflow that made this run folder")

GitHubActionKind = Literal["create_comment", "update_comment", "create_review_comment",
                           "update_review_comment", "create_check_run"]


class GitHubAction(StrictModel):
    """One write to GitHub (review comments are sent together, as one review)."""

    kind: GitHubActionKind
    marker: str = Field(description="The aeval marker of the comment (the check's name for "
                                    "a check run).")
    body: str | None = None
    comment_id: int | None = None
    path: str | None = Field(None, description="A review comment's file.")
    line: int | None = Field(None, description="A review comment's last line.")
    start_line: int | None = Field(None, description="A multi-line comment's first line.")
    reason: str = ""


class CheckPlan(StrictModel):
    """The check run of the head commit."""

    conclusion: str
    title: str
    summary: str
    annotations: list[Annotation] = Field(default_factory=list)


class GitHubPlan(Placed):
    """The writes that bring the pull request in line with the run."""

    head_sha: str
    actions: list[GitHubAction] = Field(default_factory=list)
    check: CheckPlan | None = None


class GitHubResult(GitHubPlan):
    """A plan after it was applied (or only printed, with ``dry_run``)."""

    dry_run: bool = False
    rejected: list[str] = Field(default_factory=list,
                                description="Review comments GitHub refused (moved to the "
                                            "fallback comment).")

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for a in self.actions:
            counts[a.kind] = counts.get(a.kind, 0) + 1
        done = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(counts.items()))
        verb = "would do" if self.dry_run else "done"
        return (f"{verb}: {done or 'nothing'}; {len(self.unchanged)} unchanged; "
                f"{len(self.inline)} suggestion(s) inline, {len(self.fallback)} in the fallback "
                f"comment, {len(self.skipped)} skipped")


# ---- planning ---------------------------------------------------------------------------------


def review_lines(s: LocatedSuggestion, index: dict[str, FileLines]
                 ) -> tuple[str, int, int] | None:
    """(path, start_line, line) of the review comment for ``s`` when every line it replaces is in
    the diff and still reads as its original at the head."""
    f = diff_lines(s, index)
    if f is None:
        return None
    return f.new_path, s.suggestion.start_line, s.suggestion.end_line


def _ours(me: str | None) -> Callable[[RemoteComment], bool]:
    """aeval's posts: a marker first, written by ``me`` (a bot when the token's login is
    unknown: Actions' ``GITHUB_TOKEN`` and app tokens cannot read ``/user``)."""
    def ours(c: RemoteComment) -> bool:
        who = c.login == me if me is not None else c.user_type == "Bot"
        return who and c.body.startswith("<!-- aeval:")
    return ours


def gate_summary(manifest: RunManifest) -> str:
    """The gate and a row per skill, in markdown (the job summary and the check's summary);
    names and reasons from the run as inert code."""
    g = manifest.gate
    head = (f"## aeval · gate: exit {g.exit_code}" if g else "## aeval · gate: unknown")
    out = [head, "", f"{code_span(g.reason)}" if g and g.reason else "", "",
           f"Run `{manifest.run_id}`", "", "| skill | verdict | cases |", "|---|---|---|"]
    for s in manifest.skills:
        counts: dict[str, int] = {}
        for c in s.cases:
            counts[c.status] = counts.get(c.status, 0) + 1
        cases = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "–"
        out.append(f"| {_cell(s.name)} | {_ICON.get(s.status, '')} {s.status} | {cases} |")
    return "\n".join(out) + "\n"


def check_plan(bundle: RunBundle, fork: bool = False) -> CheckPlan:
    """The check run: conclusion from the gate, an annotation per suggestion on its lines.
    ``fork``: the pull request's head is another repository's, whose workflow made the run
    folder; a conclusion that would pass a required status is ``action_required`` then."""
    g = bundle.manifest.gate
    code = g.exit_code if g else 4
    notes = []
    for s in bundle.suggestions():
        if s.problem or not s.repo_path:
            continue
        sg = s.suggestion
        notes.append(Annotation(
            path=s.repo_path, start_line=sg.start_line, end_line=sg.end_line,
            annotation_level="failure" if sg.level == "LV1" else "notice",
            title=one_line(f"aeval {sg.level}: {s.skill}")[:255],
            message=escape_controls(f"{sg.rationale}\n\nGrounded in {sg.grounded_in}: "
                                    f"{s.grounded_text}\n\nReplace with:\n{sg.replacement}"
                                    )[:4000]))
    title = one_line(f"gate: exit {code}" + (f" ({g.reason})" if g and g.reason else ""))
    conclusion = _CONCLUSION.get(code, "failure")
    summary = gate_summary(bundle.manifest)
    if fork:
        title = one_line(f"a fork's report, not verified: {title}")
        summary = f"**A fork's pull request:** {FORK_NOTE}.\n\n{summary}"
        if conclusion in _PASSING:
            conclusion = "action_required"
    return CheckPlan(conclusion=conclusion, title=title[:255], summary=summary[:60000],
                     annotations=notes)


def plan_github(bundle: RunBundle, *, head_sha: str, files: list[FileDiff],
                comments: list[RemoteComment], review_comments: list[RemoteComment],
                checks: Sequence[RemoteCheck] = (), report_url: str | None = None,
                force_fallback: Iterable[str] = (), me: str | None = None,
                fork: bool = False) -> GitHubPlan:
    """Compare the run with the pull request's comments; the writes that reconcile them
    (``fork``: the head is another repository's: `check_plan`)."""
    plan = GitHubPlan(head_sha=head_sha)
    index = diff_index(files)
    placement = place_suggestions(bundle, lambda s: review_lines(s, index), force_fallback)
    plan.skipped = placement.skipped
    plan.inline = [s.fingerprint for s, _ in placement.inline]
    plan.fallback = [s.fingerprint for s in placement.fallback]
    ours = _ours(me)
    mine = [c for c in comments if ours(c)]

    def upsert(marker: str, body: str, existing: list[RemoteComment]) -> None:
        oldest = existing[0] if existing else None  # listed oldest first
        kind = note_change(body, oldest)
        if kind is None:
            plan.unchanged.append(marker)
        else:
            plan.actions.append(GitHubAction(
                kind="create_comment" if kind == "create_note" else "update_comment",
                marker=marker, body=body, comment_id=oldest.id if oldest else None))

    for note in summary_notes(bundle, placement, mine, report_url=report_url):
        upsert(note.marker, note.body, note.existing)

    def same_place(c: RemoteComment, at: tuple[str, int, int]) -> bool:
        path, start, end = at
        return c.path == path and c.line == end and (c.start_line or c.line) == start

    for step in reconcile_inline(bundle, placement, [c for c in review_comments if ours(c)],
                                 lambda c: c.body, same_place):
        c = step.thread
        if step.kind == "retire" and c is not None:
            if OUTDATED_MARKER not in c.body.splitlines()[:2]:
                plan.actions.append(GitHubAction(
                    kind="update_review_comment", marker=c.body.splitlines()[0],
                    body=outdated_body(c.body, step.reason), comment_id=c.id,
                    reason=step.reason))
            continue
        s = step.suggestion
        assert s is not None and step.position is not None
        marker = suggestion_marker(s.fingerprint, s.folder or s.skill)
        body = github_suggestion_body(s)
        if c is None:
            path, start, end = step.position
            plan.actions.append(GitHubAction(
                kind="create_review_comment", marker=marker, body=body, path=path,
                line=end, start_line=start if start < end else None))
        elif note_change(body, c) is not None:
            plan.actions.append(GitHubAction(kind="update_review_comment", marker=marker,
                                             body=body, comment_id=c.id,
                                             reason="brought up to date"))
        else:
            plan.unchanged.append(marker)

    fb = fallback_note(bundle, placement, mine, forge="GitHub", change="pull request")
    if fb is not None:
        upsert(fb.marker, fb.body, fb.existing)

    check = check_plan(bundle, fork)
    last = checks[0] if checks else None
    if last is not None and (last.conclusion, last.title, last.summary) == (
            check.conclusion, check.title, check.summary):
        plan.unchanged.append("check run")
    else:
        plan.check = check
        plan.actions.append(GitHubAction(kind="create_check_run", marker="aeval",
                                         reason=check.title))
    return plan


def review_body(comments: list[GitHubAction]) -> str:
    """The body of the review that carries new suggestion comments."""
    return (f"{REVIEW_MARKER}\n**aeval**: {len(comments)} one-click suggestion(s) on the lines "
            "below; each skill's verdict and evidence is in its comment in the conversation.\n")


# ---- applying ---------------------------------------------------------------------------------


def apply_github(pr: GitHubPR, plan: GitHubPlan, report_url: str | None = None
                 ) -> GitHubResult:
    """Make the plan's writes: comments in order, one review for the new suggestion
    comments, then the check run. When GitHub refuses the review (422: a line it cannot
    place), each comment is tried in a review of its own and the refused ones are recorded
    in ``rejected``."""
    done: list[GitHubAction] = []
    rejected: list[str] = []
    new_review = [a for a in plan.actions if a.kind == "create_review_comment"]
    for a in plan.actions:
        if a.kind == "create_comment":
            a = a.model_copy(update={"comment_id": pr.create_issue_comment(a.body or "")})
        elif a.kind == "update_comment":
            pr.update_issue_comment(a.comment_id or 0, a.body or "")
        elif a.kind == "update_review_comment":
            pr.update_review_comment(a.comment_id or 0, a.body or "")
        elif a.kind in ("create_review_comment", "create_check_run"):
            continue
        done.append(a)

    def review(group: list[GitHubAction]) -> None:
        pr.create_review(plan.head_sha, review_body(group), [
            ReviewComment(path=a.path or "", line=a.line or 1, start_line=a.start_line,
                          body=a.body or "") for a in group])

    if new_review:
        try:
            review(new_review)
            done += new_review
        except GitHubError as exc:
            if exc.status_code != 422:
                raise
            for a in new_review:
                try:
                    review([a])
                    done.append(a)
                except GitHubError as one:
                    if one.status_code != 422:
                        raise
                    rejected.append(a.marker)
    if plan.check is not None:
        c = plan.check
        pr.create_check_run(plan.head_sha, conclusion=c.conclusion, title=c.title,
                            summary=c.summary, annotations=c.annotations,
                            details_url=report_url)
        done += [a for a in plan.actions if a.kind == "create_check_run"]
    data = plan.model_dump()
    data.update(actions=[a.model_dump() for a in done], rejected=rejected)
    return GitHubResult(**data)


def deliver_github(pr: GitHubPR, bundle: RunBundle, *, report_url: str | None = None,
                   dry_run: bool = False) -> GitHubResult:
    """Read the pull request (head, files, comments, review comments, check runs), plan, and
    apply unless ``dry_run``. Suggestions GitHub still refuses go to the fallback comment."""
    info = pr.pull()
    files = pr.files()
    me = pr.me()
    # a head of another repository (or of one GitHub no longer names: a deleted fork)
    fork = (info.head_repository or "").casefold() != pr.target.repository.casefold()

    def plan(forced: Iterable[str] = ()) -> GitHubPlan:
        return plan_github(bundle, head_sha=info.head_sha, files=files,
                           comments=pr.issue_comments(), review_comments=pr.review_comments(),
                           checks=pr.check_runs(info.head_sha), report_url=report_url,
                           force_fallback=forced, me=me, fork=fork)

    first = plan()
    if dry_run:
        return GitHubResult(**first.model_dump(), dry_run=True)
    result = apply_github(pr, first, report_url)
    if not result.rejected:
        return result
    forced = [m.split("=", 1)[1].split(" ", 1)[0] for m in result.rejected]
    again = apply_github(pr, plan(forced), report_url)
    return again.model_copy(update={"actions": result.actions + again.actions,
                                    "rejected": result.rejected,
                                    "unchanged": again.unchanged})


def write_step_summary(bundle: RunBundle, environ: dict[str, str] | None = None) -> Path | None:
    """Append the gate summary to ``$GITHUB_STEP_SUMMARY`` (how GitHub collects a job's
    summary: every step appends); None outside Actions."""
    path = (os.environ if environ is None else environ).get(SUMMARY_ENV)
    if not path:
        return None
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(gate_summary(bundle.manifest) + "\n")
    return Path(path)


def github_plan_as_text(plan: GitHubPlan) -> str:
    """A readable listing of the writes (``--dry-run``)."""
    out = []
    for a in plan.actions:
        where = ""
        if a.path:
            where = f" at {a.path}:{a.start_line or a.line}" + (
                f"-{a.line}" if a.start_line else "")
        out.append(f"== {a.kind}{where} {a.marker} {a.reason}".rstrip())
        if a.body:
            out.append(a.body)
    if plan.check is not None:
        out.append(f"== check run: {plan.check.conclusion}, "
                   f"{len(plan.check.annotations)} annotation(s)")
    out += [f"-- skipped: {s}" for s in plan.skipped]
    out += [f"-- notice: {n}" for n in plan.notices]
    return "\n".join(out) + ("\n" if out else "")


class GitHubForge(Forge):
    """GitHub behind the one `Forge` interface: a pull request's comments, review and check
    run, and the job summary."""

    name = "github"
    title = "GitHub"

    def connect(self, target: PostTarget) -> None:
        t = GitHubTarget.resolve(target.project, target.number, target.url)
        self.pr = GitHubPR.connect(t)
        self.where = f"{t.repository} pull request #{t.number}"

    def deliver(self, bundle: RunBundle, *, report_url: str | None, dry_run: bool
                ) -> GitHubResult:
        return deliver_github(self.pr, bundle, report_url=report_url, dry_run=dry_run)

    def offline(self, bundle: RunBundle, report_url: str | None) -> GitHubResult:
        plan = plan_github(bundle, head_sha="0" * 40, files=[], comments=[],
                           review_comments=[], report_url=report_url)
        return GitHubResult(**plan.model_dump(), dry_run=True)

    def plan_text(self, result: Delivered) -> str:
        assert isinstance(result, GitHubPlan)
        return github_plan_as_text(result)

    def placed(self, action: Any) -> str:
        return f"{action.path}:{action.line}" if action.path else ""

    def refused(self, marker: str) -> str:
        return f"GitHub refused the review comment {marker}: moved to the fallback comment"

    def after(self, bundle: RunBundle) -> list[str]:
        path = write_step_summary(bundle)
        return [f"wrote the gate to {path}"] if path else []

    def summary_only(self, bundle: RunBundle) -> str:
        path = write_step_summary(bundle)
        return (f"wrote the gate to {path}" if path else
                "GITHUB_STEP_SUMMARY is not set: no job summary to write")
