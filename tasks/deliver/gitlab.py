"""Deliver on GitLab: what aeval says on a merge request, built from a finished run folder.

Pure functions build everything from the run's artifacts: one summary note per skill, one
inline discussion per suggestion whose lines lie in the MR diff (a ```` ```suggestion ````
block), one fallback note with patches and an agent prompt for the rest, and the GitLab Code
Quality report. ``plan_delivery`` compares that with what the MR already holds and returns the
edits; ``apply_plan`` makes them through the adapter; ``deliver`` does both.
``GitLabForge`` is GitLab behind the one interface of ``forge.py``.

Idempotence rests on hidden markers, always the first line of what aeval posts::

    <!-- aeval:skill=NAME folder=DIR -->           the summary note of one skill folder
    <!-- aeval:suggestion=FINGERPRINT skill=DIR -->  the inline discussion of one suggestion
    <!-- aeval:fallback -->                        the note with suggestions outside the diff
    <!-- aeval:outdated -->                        (second line) aeval resolved this thread

A rerun edits aeval's notes and discussions in place, creates only what is new, and resolves
aeval's discussions whose suggestion no longer applies. A fingerprint hashes the skill, the
repository path, the grounded assertion's text and the original lines: never a run id or a
time, so it is stable across reruns (and serves as the Code Quality fingerprint too).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field

from aeval.adapters.forges.diff import FileDiff
from aeval.adapters.forges.gitlab import (
    DiffRefs,
    GitLabError,
    GitLabMR,
    GitLabTarget,
    InlinePosition,
    RemoteDiscussion,
    RemoteNote,
)
from aeval.strict import StrictModel
from aeval.tasks.deliver.bodies import (
    ActionKind,
    CodeQualityIssue,
    agent_prompt,
    code_quality_report,
    fallback_note_body,
    file_patch,
    outdated_body,
    skill_note_body,
    suggestion_body,
    write_code_quality_report,
)
from aeval.tasks.deliver.forge import Delivered, Forge, PostTarget
from aeval.tasks.deliver.placement import (
    fallback_note,
    note_change,
    place_suggestions,
    reconcile_inline,
    summary_notes,
)
from aeval.tasks.deliver.read_run import (
    CODE_QUALITY_FILE,
    OUTDATED_MARKER,
    FileLines,
    LocatedSuggestion,
    Placed,
    RunBundle,
    SkillReport,
    diff_index,
    fingerprint,
    inline_position,
    load_run,
    parse_hunks,
    skill_marker,
    skill_repo_dir,
    suggestion_marker,
)


class DeliveryAction(StrictModel):
    """One write to GitLab."""

    kind: ActionKind
    marker: str = Field(description="The aeval marker of the note or discussion.")
    body: str | None = None
    note_id: int | None = None
    discussion_id: str | None = None
    position: InlinePosition | None = None
    reason: str = ""


class DeliveryPlan(Placed):
    """The writes that bring the MR in line with the run, and how suggestions were placed."""

    actions: list[DeliveryAction] = Field(default_factory=list)


class DeliveryResult(DeliveryPlan):
    """A plan after it was applied (or only printed, with ``dry_run``)."""

    dry_run: bool = False
    rejected: list[str] = Field(default_factory=list,
                                description="Inline positions GitLab refused (moved to fallback).")

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for a in self.actions:
            counts[a.kind] = counts.get(a.kind, 0) + 1
        done = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in sorted(counts.items()))
        verb = "would do" if self.dry_run else "done"
        return (f"{verb}: {done or 'nothing'}; {len(self.unchanged)} unchanged; "
                f"{len(self.inline)} suggestion(s) inline, {len(self.fallback)} in the fallback "
                f"note, {len(self.skipped)} skipped")


def _upsert_note(marker: str, body: str, existing: list[RemoteNote], plan: DeliveryPlan
                 ) -> None:
    # notes are listed newest first: the oldest is aeval's
    kind = note_change(body, existing[-1] if existing else None)
    if kind is None:
        plan.unchanged.append(marker)
    else:
        plan.actions.append(DeliveryAction(kind=kind, marker=marker, body=body,
                                           note_id=existing[-1].id if existing else None))


def plan_delivery(bundle: RunBundle, *, refs: DiffRefs | None, diffs: list[FileDiff],
                  notes: list[RemoteNote], discussions: list[RemoteDiscussion],
                  report_url: str | None = None, force_fallback: Iterable[str] = (),
                  me: int | None = None) -> DeliveryPlan:
    """Compare the run with the MR's notes and discussions; the writes that reconcile them.

    Only notes written by ``me`` (the token's user, when known) that *start* with a marker
    are aeval's: a reviewer quoting or copying one is never edited.
    """
    plan = DeliveryPlan()
    index = diff_index(diffs)
    if refs is None:
        plan.notices.append("GitLab has no diff refs for this MR yet: no inline suggestions.")
    placement = place_suggestions(bundle, lambda s: inline_position(s, index, refs),
                                  force_fallback)
    plan.skipped = placement.skipped
    plan.inline = [s.fingerprint for s, _ in placement.inline]
    plan.fallback = [s.fingerprint for s in placement.fallback]

    def ours(n: RemoteNote | None) -> bool:
        return n is not None and not n.system and n.body.startswith("<!-- aeval:") and (
            me is None or n.author_id == me)

    mine = [n for n in notes if ours(n)]
    for note in summary_notes(bundle, placement, mine, report_url=report_url):
        _upsert_note(note.marker, note.body, note.existing, plan)

    def same_place(d: RemoteDiscussion, pos: InlinePosition) -> bool:
        at = d.first.position or {} if d.first else {}
        return at.get("new_path") == pos.new_path and at.get("new_line") == pos.new_line

    for step in reconcile_inline(bundle, placement, [d for d in discussions if ours(d.first)],
                                 lambda d: d.first.body if d.first else "", same_place):
        d = step.thread
        if step.kind == "retire" and d is not None:
            _retire(d, step.reason, plan)
            continue
        s = step.suggestion
        assert s is not None
        marker, body = suggestion_marker(s.fingerprint, s.folder or s.skill), suggestion_body(s)
        if d is None or d.first is None:
            plan.actions.append(DeliveryAction(kind="create_discussion", marker=marker,
                                               body=body, position=step.position))
            continue
        acts = []
        if d.resolved and OUTDATED_MARKER in d.first.body.splitlines()[:2]:
            acts.append(DeliveryAction(kind="reopen_discussion", marker=marker,
                                       discussion_id=d.id, reason="the suggestion applies again"))
        if note_change(body, d.first) is not None:
            acts.append(DeliveryAction(kind="update_discussion", marker=marker, body=body,
                                       discussion_id=d.id, note_id=d.first.id))
        plan.actions += acts
        if not acts:
            plan.unchanged.append(marker)

    fb = fallback_note(bundle, placement, mine, notice=" ".join(plan.notices) or None)
    if fb is not None:
        _upsert_note(fb.marker, fb.body, fb.existing, plan)
    return plan


def _retire(d: RemoteDiscussion, reason: str, plan: DeliveryPlan) -> None:
    """Mark an aeval discussion outdated and resolve it (once; humans' resolutions stand)."""
    first = d.first
    if first is None or d.resolved:
        return
    marker = first.body.splitlines()[0]
    plan.actions.append(DeliveryAction(kind="update_discussion", marker=marker,
                                       body=outdated_body(first.body, reason),
                                       discussion_id=d.id, note_id=first.id, reason=reason))
    plan.actions.append(DeliveryAction(kind="resolve_discussion", marker=marker,
                                       discussion_id=d.id, reason=reason))


# ---- applying ---------------------------------------------------------------------------------


def apply_plan(mr: GitLabMR, plan: DeliveryPlan) -> DeliveryResult:
    """Make the plan's writes. An inline position GitLab refuses (400) is recorded in
    ``rejected`` instead of failing the delivery."""
    done, rejected = [], []
    for a in plan.actions:
        if a.kind == "create_note":
            a = a.model_copy(update={"note_id": mr.create_note(a.body or "")})
        elif a.kind == "update_note":
            mr.update_note(a.note_id or 0, a.body or "")
        elif a.kind == "create_discussion":
            try:
                d = mr.create_discussion(a.body or "", a.position)
            except GitLabError as exc:
                if exc.status_code != 400 or a.position is None:
                    raise
                rejected.append(a.marker)
                continue
            a = a.model_copy(update={"discussion_id": d.id})
        elif a.kind == "update_discussion":
            mr.update_discussion_note(a.discussion_id or "", a.note_id or 0, a.body or "")
        elif a.kind in ("resolve_discussion", "reopen_discussion"):
            mr.resolve_discussion(a.discussion_id or "", a.kind == "resolve_discussion")
        done.append(a)
    data = plan.model_dump()
    data.update(actions=[a.model_dump() for a in done], rejected=rejected)
    return DeliveryResult(**data)


def deliver(mr: GitLabMR, bundle: RunBundle, *, report_url: str | None = None,
            dry_run: bool = False) -> DeliveryResult:
    """Read the MR (diff refs, diffs, notes, discussions), plan, and apply unless ``dry_run``.
    Suggestions whose inline position GitLab still refuses go to the fallback note."""
    refs = mr.diff_refs()
    diffs = mr.diffs() if refs else []
    me = mr.user_id()

    def plan(forced: Iterable[str] = ()) -> DeliveryPlan:
        return plan_delivery(bundle, refs=refs, diffs=diffs, notes=mr.notes(),
                             discussions=mr.discussions(), report_url=report_url,
                             force_fallback=forced, me=me)

    first = plan()
    if dry_run:
        return DeliveryResult(**first.model_dump(), dry_run=True)
    result = apply_plan(mr, first)
    if not result.rejected:
        return result
    forced = [m.split("=", 1)[1].split(" ", 1)[0] for m in result.rejected]
    again = apply_plan(mr, plan(forced))
    return again.model_copy(update={"actions": result.actions + again.actions,
                                    "rejected": result.rejected,
                                    "unchanged": again.unchanged})


def plan_as_text(plan: DeliveryPlan) -> str:
    """A readable listing of the writes (``--dry-run``)."""
    out = []
    for a in plan.actions:
        where = ""
        if a.position:
            where = f" at {a.position.new_path}:{a.position.new_line}"
        out.append(f"== {a.kind}{where} {a.marker} {a.reason}".rstrip())
        if a.body:
            out.append(a.body)
    out += [f"-- skipped: {s}" for s in plan.skipped]
    out += [f"-- notice: {n}" for n in plan.notices]
    return "\n".join(out) + ("\n" if out else "")


class GitLabForge(Forge):
    """GitLab behind the one `Forge` interface: a merge request's notes and discussions,
    and gl-code-quality.json in the run folder."""

    name = "gitlab"
    title = "GitLab"

    def connect(self, target: PostTarget) -> None:
        t = GitLabTarget.resolve(target.url, target.project, target.number)
        self.mr = GitLabMR.connect(t)
        self.where = f"{t.url} project {t.project_id} MR !{t.mr_iid}"

    def deliver(self, bundle: RunBundle, *, report_url: str | None, dry_run: bool
                ) -> DeliveryResult:
        return deliver(self.mr, bundle, report_url=report_url, dry_run=dry_run)

    def offline(self, bundle: RunBundle, report_url: str | None) -> DeliveryResult:
        plan = plan_delivery(bundle, refs=None, diffs=[], notes=[], discussions=[],
                             report_url=report_url)
        return DeliveryResult(**plan.model_dump(), dry_run=True)

    def plan_text(self, result: Delivered) -> str:
        assert isinstance(result, DeliveryPlan)
        return plan_as_text(result)

    def placed(self, action: Any) -> str:
        p = action.position
        return f"{p.new_path}:{p.new_line}" if p else ""

    def refused(self, marker: str) -> str:
        return f"GitLab refused the inline position of {marker}: moved to the fallback note"

    def before(self, bundle: RunBundle) -> list[str]:
        return [f"wrote {write_code_quality_report(bundle)}"]

    def summary_only(self, bundle: RunBundle) -> str:
        """What needs no token: the Code Quality report for the MR widget."""
        return f"wrote {write_code_quality_report(bundle)}"


__all__ = [
    "CODE_QUALITY_FILE", "CodeQualityIssue", "DeliveryAction", "DeliveryPlan", "DeliveryResult",
    "FileLines", "GitLabForge", "LocatedSuggestion", "RunBundle", "SkillReport", "agent_prompt",
    "apply_plan", "code_quality_report", "deliver", "diff_index", "fallback_note_body",
    "file_patch", "fingerprint", "inline_position", "load_run", "outdated_body",
    "parse_hunks", "plan_as_text", "plan_delivery", "skill_marker",
    "skill_note_body", "skill_repo_dir", "suggestion_body", "suggestion_marker",
    "write_code_quality_report",
]
