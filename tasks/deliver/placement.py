"""Delivery, the part every forge shares: which suggestion goes inline and which to the
fallback note, which of aeval's posts a rerun edits, creates or retires.

A forge's planner (``tasks/deliver/gitlab.py`` for GitLab, ``tasks/deliver/github.py`` for GitHub)
reads what its merge or pull request holds through its adapter, keeps only aeval's own posts
(a marker as the first line, written by aeval's user), and hands them here; what comes back
says, per marker, what to write. Bodies come from ``tasks/deliver/bodies.py``; markers and
fingerprints from ``tasks/deliver/read_run.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar
from urllib.parse import unquote

from aeval.tasks.deliver.bodies import fallback_note_body, skill_note_body
from aeval.tasks.deliver.read_run import (
    _SUGGESTION_RE,
    FALLBACK_MARKER,
    LocatedSuggestion,
    RunBundle,
    legacy_skill_marker,
    skill_marker,
)


class Post(Protocol):
    """A note or comment as a forge returns it: what planning reads of it."""

    @property
    def id(self) -> int: ...

    @property
    def body(self) -> str: ...


P = TypeVar("P")  # a forge's inline position
N = TypeVar("N", bound=Post)
T = TypeVar("T")  # a forge's inline thread (a GitLab discussion, a GitHub review comment)


@dataclass
class Placement(Generic[P]):
    """Where each suggestion of a run goes."""

    inline: list[tuple[LocatedSuggestion, P]] = field(default_factory=list)
    fallback: list[LocatedSuggestion] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def counts(self, fingerprints: set[str]) -> tuple[int, int]:
        """(inline, fallback) among ``fingerprints`` (one skill's)."""
        return (sum(s.fingerprint in fingerprints for s, _ in self.inline),
                sum(s.fingerprint in fingerprints for s in self.fallback))


def place_suggestions(bundle: RunBundle, position: Callable[[LocatedSuggestion], P | None],
                      forced: Iterable[str] = ()) -> Placement[P]:
    """Every suggestion of the run: inline where ``position`` anchors it (and it is not in
    ``forced``, fingerprints the forge refused before), else in the fallback; skipped, with
    the reason, when it cannot be posted at all (stale, outside the repository)."""
    out: Placement[P] = Placement()
    forced = set(forced)
    for s in bundle.suggestions():
        if s.problem:
            out.skipped.append(f"{s.skill} {s.suggestion.path}:{s.suggestion.start_line}: "
                               f"{s.problem}")
            continue
        pos = None if s.fingerprint in forced else position(s)
        if pos is not None:
            out.inline.append((s, pos))
        else:
            out.fallback.append(s)
    return out


def note_change(body: str, existing: Post | None) -> Literal["create_note", "update_note"] | None:
    """What bringing ``existing`` (aeval's note of this marker, None: there is none) to
    ``body`` takes; None when it already reads so."""
    if existing is None:
        return "create_note"
    return "update_note" if _norm(existing.body) != _norm(body) else None


def _norm(body: str) -> str:
    return body.replace("\r\n", "\n").strip()


@dataclass
class NotePlan(Generic[N]):
    """One summary or fallback note: its marker, its body, and aeval's notes that carry the
    marker already (in the forge's listing order)."""

    marker: str
    body: str
    existing: list[N]


def summary_notes(bundle: RunBundle, placement: Placement, mine: Sequence[N], *,
                  report_url: str | None) -> list[NotePlan[N]]:
    """One note per skill folder. A note of an earlier aeval (marked by name only) is adopted
    when the run has one skill of that name."""
    names = [r.result.name for r in bundle.skills]
    out = []
    for r in bundle.skills:
        marker = skill_marker(r.result.name, r.folder)
        inline, fallback = placement.counts({s.fingerprint for s in r.suggestions})
        body = skill_note_body(r, bundle.manifest, report_url=report_url, inline=inline,
                               fallback=fallback,
                               skipped=[s.problem or "" for s in r.suggestions if s.problem])
        existing = [n for n in mine if n.body.startswith(marker)]
        if not existing and names.count(r.result.name) == 1:
            legacy = legacy_skill_marker(r.result.name)
            existing = [n for n in mine if n.body.split("\n", 1)[0] == legacy]
        out.append(NotePlan(marker, body, existing))
    return out


def fallback_note(bundle: RunBundle, placement: Placement, mine: Sequence[N], *,
                  notice: str | None = None, forge: str = "GitLab",
                  change: str = "merge request") -> NotePlan[N] | None:
    """The one note for suggestions outside the diff; None when there is none to write (no
    such suggestion, and no earlier fallback note to bring up to date)."""
    existing = [n for n in mine if n.body.startswith(FALLBACK_MARKER)]
    if not placement.fallback and not existing:
        return None
    body = fallback_note_body(placement.fallback, bundle.manifest, bundle.repo_root, notice,
                              forge=forge, change=change)
    return NotePlan(FALLBACK_MARKER, body, existing)


@dataclass
class InlineStep(Generic[P, T]):
    """One step of reconciling inline threads: ``create`` a thread for ``suggestion`` at
    ``position``; ``keep`` ``thread`` (bring its body up to date); ``retire`` ``thread``
    (mark it outdated) for ``reason``."""

    kind: Literal["create", "keep", "retire"]
    suggestion: LocatedSuggestion | None = None
    position: P | None = None
    thread: T | None = None
    reason: str = ""


def reconcile_inline(bundle: RunBundle, placement: Placement[P], threads: Iterable[T],
                     first_body: Callable[[T], str], same_place: Callable[[T, P], bool]
                     ) -> list[InlineStep[P, T]]:
    """aeval's inline threads (``threads``, already filtered to aeval's own) against the
    run's inline suggestions: a thread of the same fingerprint at the same place is kept; a
    new suggestion gets a thread; a thread whose suggestion moved, went to the fallback or is
    no longer made is retired. Threads of skills this run did not evaluate stand."""
    by_fp: dict[str, list[T]] = {}
    for t in threads:
        if m := _SUGGESTION_RE.match(first_body(t)):
            by_fp.setdefault(m.group(1), []).append(t)
    steps: list[InlineStep[P, T]] = []
    for s, pos in placement.inline:
        found = by_fp.pop(s.fingerprint, [])
        keep = next((t for t in found if same_place(t, pos)), None)
        steps.append(InlineStep("create", s, pos) if keep is None else
                     InlineStep("keep", s, pos, keep))
        steps += [InlineStep("retire", thread=t, reason="aeval now suggests this on another "
                                                        "line.") for t in found if t is not keep]
    evaluated = {r.folder for r in bundle.skills} | {r.result.name for r in bundle.skills}
    fallback = {s.fingerprint for s in placement.fallback}
    for fp, found in by_fp.items():
        for t in found:
            skill = _SUGGESTION_RE.match(first_body(t)).group(2)  # type: ignore[union-attr]
            if skill is not None and unquote(skill) not in evaluated:
                continue  # a skill this run did not evaluate: its threads stand
            steps.append(InlineStep("retire", thread=t, reason=(
                "moved to the fallback note: its lines are no longer in the diff."
                if fp in fallback else
                f"run `{bundle.manifest.run_id}` no longer suggests this.")))
    return steps
