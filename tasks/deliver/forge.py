"""One way to post a finished run, whichever the forge: `aeval post`, `aeval run --post` and
the flows all call `post_to_forge`.

A forge is one class (`Forge`) registered here by name and imported only when used
(python-gitlab or PyGithub are loaded when a run is posted there): `GitLabForge` in
``gitlab.py``, `GitHubForge` in ``github.py``. Which one is `choose_forge`'s answer: the
one named, else the one the given arguments belong to, else GitHub inside GitHub Actions
(and not GitLab CI), else GitLab. What a `PostTarget` leaves out comes from the forge's CI
environment (GitLab CI's variables, GitHub Actions' event); the token only ever from the
environment, inside the adapter.
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from aeval.adapters.forges.diff import ForgeConfigError
from aeval.tasks.deliver.read_run import REPORT_URL_ENV, RunBundle, load_run

ForgeName = Literal["gitlab", "github"]
FORGES: dict[str, str] = {"gitlab": "aeval.tasks.deliver.gitlab:GitLabForge",
                          "github": "aeval.tasks.deliver.github:GitHubForge"}
"""Forge name -> ``module:class`` of its `Forge`."""


class PostTarget(BaseModel):
    """Where a run is posted: the forge and, where given, its merge or pull request. What is
    left out comes from the forge's CI environment."""

    model_config = ConfigDict(extra="forbid")

    forge: ForgeName = Field(description="gitlab or github.")
    number: int | str | None = Field(None, description="The merge request's IID (GitLab) or "
                                                       "the pull request's number (GitHub).")
    project: str | None = Field(None, description="GitLab project id or path, or GitHub "
                                                  "repository owner/name.")
    url: str | None = Field(None, description="GitLab server URL, or GitHub REST API root.")


def choose_forge(forge: str | None = None, *, github_args: bool = False,
                 gitlab_args: bool = False, environ: Mapping[str, str] | None = None
                 ) -> ForgeName:
    """``forge`` when given; else the forge whose arguments were given; else github inside
    GitHub Actions (and not GitLab CI), else gitlab."""
    env = os.environ if environ is None else environ
    if forge:
        if forge not in FORGES:
            raise ForgeConfigError(f"unknown forge {forge!r} (known: {', '.join(FORGES)})")
        return forge  # type: ignore[return-value]
    if github_args:
        return "github"
    if gitlab_args:
        return "gitlab"
    return "github" if env.get("GITHUB_ACTIONS") == "true" and not env.get("GITLAB_CI") \
        else "gitlab"


class Delivered(Protocol):
    """What a forge's delivery returns (GitLab's `DeliveryResult`, GitHub's `GitHubResult`)."""

    dry_run: bool
    actions: list[Any]
    rejected: list[str]
    skipped: list[str]

    def summary(self) -> str: ...


class Forge(ABC):
    """One forge: connect to a merge or pull request, plan and make the writes."""

    name: ClassVar[str]
    title: ClassVar[str]
    where: str = ""
    """The merge or pull request, as shown to the user (set by `connect`)."""

    @abstractmethod
    def connect(self, target: PostTarget) -> None:
        """Resolve and open the merge or pull request; ``ForgeConfigError`` when it is not
        known or cannot be posted to."""

    @abstractmethod
    def deliver(self, bundle: RunBundle, *, report_url: str | None, dry_run: bool
                ) -> Delivered:
        """Read what the request holds, plan, and apply unless ``dry_run``."""

    @abstractmethod
    def offline(self, bundle: RunBundle, report_url: str | None) -> Delivered:
        """The plan against an empty request with nothing in its diff (a dry run without
        access)."""

    @abstractmethod
    def plan_text(self, result: Delivered) -> str:
        """A readable listing of the writes (``--dry-run``)."""

    def done_lines(self, result: Delivered) -> list[str]:
        """What was written, one line each (its kind, where on the diff, its marker), then
        what the forge refused and what was skipped."""
        out = []
        for a in result.actions:
            where = self.placed(a)
            out.append(f"{a.kind}{f' at {where}' if where else ''} {a.marker}")
        out += [self.refused(r) for r in result.rejected]
        return out + [f"skipped: {s}" for s in result.skipped]

    @abstractmethod
    def placed(self, action: Any) -> str:
        """``path:line`` of an inline write on the diff, or "" for a note or comment."""

    @abstractmethod
    def refused(self, marker: str) -> str:
        """The line for an inline write the forge refused (moved to the fallback)."""

    def before(self, bundle: RunBundle) -> list[str]:
        """Files written before posting (not on a dry run); a line each."""
        return []

    def after(self, bundle: RunBundle) -> list[str]:
        """Files written after posting (not on a dry run); a line each."""
        return []

    def summary_only(self, bundle: RunBundle) -> str:
        """Only what needs no token and no API call (a job summary, a report file)."""
        raise ForgeConfigError(f"{self.title} has no job summary to write")


def forge_named(name: str) -> Forge:
    """A new `Forge` of that name, its module imported now."""
    if name not in FORGES:
        raise ForgeConfigError(f"unknown forge {name!r} (known: {', '.join(FORGES)})")
    module, _, cls = FORGES[name].partition(":")
    return getattr(importlib.import_module(module), cls)()


@dataclass
class Posted:
    """A run posted (or, ``dry_run``, only planned) on one forge."""

    forge: Forge
    result: Delivered
    notes: list[str] = field(default_factory=list)
    """Files written beside the posting ("wrote gl-code-quality.json")."""
    offline: str | None = None
    """Why a dry run had no access to the forge (the plan is against an empty request)."""

    def summary(self) -> str:
        return f"{self.forge.where}: {self.result.summary()}" if self.forge.where \
            else self.result.summary()

    def text(self) -> str:
        """What `aeval post` prints."""
        out: list[str] = []
        if self.offline is not None:
            out.append(f"-- no {self.forge.title} access ({self.offline}): showing the bodies "
                       "as if the request were empty and nothing were in its diff")
        if self.result.dry_run:
            out.append(self.forge.plan_text(self.result).rstrip("\n"))
        else:
            out += self.forge.done_lines(self.result)
        out += self.notes
        out.append(self.summary())
        return "\n".join(line for line in out if line) + "\n"


def post_to_forge(run: Path | str | RunBundle, target: PostTarget, *,
                  repo_root: Path | str | None = None, report_url: str | None = None,
                  dry_run: bool = False) -> Posted:
    """Post a finished run folder (or one already loaded) on its merge or pull request.

    Raises ``ForgeError`` (``ForgeConfigError`` when the request is unknown or refused;
    ``transient`` when the forge was unreachable or failing); a dry run without access plans
    against an empty request instead. ``report_url`` defaults to ``AEVAL_REPORT_URL``.
    """
    bundle = run if isinstance(run, RunBundle) else load_run(
        Path(run), Path(repo_root) if repo_root else None)
    report_url = report_url or os.environ.get(REPORT_URL_ENV)
    forge = forge_named(target.forge)
    try:
        forge.connect(target)
    except ForgeConfigError as exc:
        if not dry_run:
            raise
        return Posted(forge, forge.offline(bundle, report_url), offline=str(exc))
    notes = [] if dry_run else forge.before(bundle)
    result = forge.deliver(bundle, report_url=report_url, dry_run=dry_run)
    notes += [] if dry_run else forge.after(bundle)
    return Posted(forge, result, notes)
