"""GitLab: the merge request aeval reports on, through python-gitlab.

Only calls live here; what to post (bodies, positions, which note to edit) is decided by the
pure functions of ``tasks/deliver/gitlab.py``.

- The MR comes from the CI variables ``CI_SERVER_URL``, ``CI_PROJECT_ID`` and
  ``CI_MERGE_REQUEST_IID``, or from explicit arguments (which win).
- The token comes from ``AEVAL_GITLAB_TOKEN`` (a project access token with scope ``api``:
  ``CI_JOB_TOKEN`` cannot post notes). It is read here, at posting time, and nowhere else: it is
  never a flow or task parameter, never stored, and scrubbed from every body that is posted.
- No line of a posted body starts a quick action: GitLab runs ``/merge``, ``/approve``,
  ``/close`` ... from any line that starts with "/" in a note posted with a token allowed to
  (``disarm_quick_actions``, applied to every body as it leaves; the bodies are built so that
  it changes nothing, see ``tasks/deliver/bodies.py``).
- python-gitlab retries transient errors (5xx, 429, connection) itself
  (``retry_transient_errors=True``); what still fails is raised as ``GitLabError``.
- MR diffs come from ``/merge_requests/:iid/diffs`` (the ``/changes`` endpoint is
  deprecated and python-gitlab has no manager for ``/diffs``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Literal

import gitlab
import requests
from pydantic import Field

from aeval.adapters.forges.diff import FileDiff, ForgeConfigError, ForgeError
from aeval.isolation.redact import Redactor
from aeval.isolation.text import escape_controls
from aeval.strict import StrictModel

TOKEN_ENV = "AEVAL_GITLAB_TOKEN"
TIMEOUT_S = 30.0
# Gitlab::QuickActions::Extractor matches `^\/cmd` at column 0 after deleting every "\r".
_QUICK_ACTION_LINE = re.compile(r"^/", re.M)


def disarm_quick_actions(body: str) -> str:
    """``body`` with one leading space before every line that starts with "/" (carriage
    returns dropped first, as GitLab does): the extractor does not match it, markdown does not
    show it. Control characters are escaped too (`aeval.isolation.text.escape_controls`)."""
    return _QUICK_ACTION_LINE.sub(" /", escape_controls(body.replace("\r", "")))


class GitLabError(ForgeError):
    """A GitLab call failed after python-gitlab's own retries, or cannot be made at all."""


class GitLabConfigError(GitLabError, ForgeConfigError):
    """What to post to is not known: no token, no MR, no project or no server URL."""


class GitLabTarget(StrictModel):
    """The merge request to post on."""

    url: str = Field(description="GitLab server URL (CI_SERVER_URL), without /api/v4.")
    project_id: str = Field(description="Project id or full path (CI_PROJECT_ID).")
    mr_iid: int = Field(description="Merge request IID within the project "
                                    "(CI_MERGE_REQUEST_IID).")

    @classmethod
    def resolve(cls, url: str | None = None, project_id: str | int | None = None,
                mr_iid: int | str | None = None, environ: Mapping[str, str] | None = None
                ) -> GitLabTarget:
        """Explicit values first, then the CI variables; raise ``GitLabConfigError`` naming
        whatever is still missing."""
        env = os.environ if environ is None else environ
        url = url or env.get("CI_SERVER_URL")
        project_id = project_id or env.get("CI_PROJECT_ID")
        mr_iid = mr_iid or env.get("CI_MERGE_REQUEST_IID")
        missing = [name for name, v in (("GitLab URL (--gitlab-url or CI_SERVER_URL)", url),
                                        ("project (--project or CI_PROJECT_ID)", project_id),
                                        ("merge request (--mr or CI_MERGE_REQUEST_IID)", mr_iid))
                   if not v]
        if missing:
            raise GitLabConfigError("unknown " + ", ".join(missing))
        try:
            iid = int(mr_iid)  # type: ignore[arg-type]
        except ValueError:
            raise GitLabConfigError(f"merge request IID must be a number, not {mr_iid!r}"
                                    ) from None
        return cls(url=str(url).rstrip("/"), project_id=str(project_id), mr_iid=iid)


class DiffRefs(StrictModel):
    """The three commits an inline position names (``mr.diff_refs``)."""

    base_sha: str
    start_sha: str
    head_sha: str


class InlinePosition(StrictModel):
    """Where an inline discussion sits: a line of the MR diff (GitLab's ``position``).

    An added line takes only ``new_line``; a context line both ``old_line`` and ``new_line``.
    """

    position_type: Literal["text"] = "text"
    base_sha: str
    start_sha: str
    head_sha: str
    old_path: str
    new_path: str
    new_line: int = Field(ge=1)
    old_line: int | None = Field(None, ge=1, description="Only for context lines.")


MRFileDiff = FileDiff  # GitLab's ``/merge_requests/:iid/diffs`` entries, as every forge's


class RemoteNote(StrictModel):
    """A note as read back from GitLab (only what delivery needs)."""

    id: int
    body: str
    author_id: int | None = None
    system: bool = False
    resolvable: bool = False
    resolved: bool = False
    position: dict[str, Any] | None = None


class RemoteDiscussion(StrictModel):
    """A discussion thread: its first note carries aeval's marker."""

    id: str
    individual_note: bool = False
    notes: list[RemoteNote] = Field(default_factory=list)

    @property
    def first(self) -> RemoteNote | None:
        return self.notes[0] if self.notes else None

    @property
    def resolved(self) -> bool:
        resolvable = [n for n in self.notes if n.resolvable]
        return bool(resolvable) and all(n.resolved for n in resolvable)


def token_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The project access token from ``AEVAL_GITLAB_TOKEN``; never printed, never stored."""
    token = (os.environ if environ is None else environ).get(TOKEN_ENV, "")
    if not token:
        raise GitLabConfigError(
            f"{TOKEN_ENV} is not set: create a project access token with scope `api` "
            "(CI_JOB_TOKEN cannot post merge request notes) and expose it to this job only")
    return token


def _note(d: dict[str, Any]) -> RemoteNote:
    return RemoteNote(id=d["id"], body=d.get("body") or "",
                      author_id=(d.get("author") or {}).get("id"), system=bool(d.get("system")),
                      resolvable=bool(d.get("resolvable")), resolved=bool(d.get("resolved")),
                      position=d.get("position"))


class GitLabMR:
    """One merge request. Every method is one or a few REST calls; errors become
    ``GitLabError``."""

    def __init__(self, target: GitLabTarget, token: str, *, timeout: float = TIMEOUT_S):
        self.target = target
        self._redactor = Redactor({TOKEN_ENV: token})
        self._gl = gitlab.Gitlab(target.url, private_token=token, timeout=timeout,
                                 retry_transient_errors=True,
                                 user_agent="aeval (python-gitlab)")
        self._project: Any = None
        self._mr: Any = None

    @classmethod
    def connect(cls, target: GitLabTarget, environ: Mapping[str, str] | None = None
                ) -> GitLabMR:
        """A client for ``target`` with the token from the environment."""
        return cls(target, token_from_env(environ))

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gitlab.exceptions.GitlabError as exc:
            msg = self._redactor.text(str(exc.error_message or exc))
            raise GitLabError(f"GitLab {what}: {exc.response_code} {msg}",
                              exc.response_code) from None
        except requests.RequestException as exc:
            raise GitLabError(f"GitLab {what}: {type(exc).__name__}: "
                              f"{self._redactor.text(str(exc))}") from None

    @property
    def mr(self) -> Any:
        """The python-gitlab MR object (fetched once: project, then MR)."""
        if self._mr is None:
            self._project = self._call("get project", self._gl.projects.get,
                                       self.target.project_id)
            self._mr = self._call("get merge request", self._project.mergerequests.get,
                                  self.target.mr_iid)
        return self._mr

    # ---- reads ------------------------------------------------------------------------------

    def user_id(self) -> int | None:
        """The id of the token's user (a project access token has a bot user); None when the
        token may not read it."""
        try:
            self._call("get current user", self._gl.auth)
        except GitLabError as exc:
            if exc.status_code in (403, 404):
                return None
            raise
        return int(self._gl.user.id) if self._gl.user else None

    def diff_refs(self) -> DiffRefs | None:
        """base/start/head of the MR's latest diff; None while GitLab is still preparing it."""
        refs = getattr(self.mr, "diff_refs", None)
        if not refs or not all(refs.get(k) for k in ("base_sha", "start_sha", "head_sha")):
            return None
        return DiffRefs(base_sha=refs["base_sha"], start_sha=refs["start_sha"],
                        head_sha=refs["head_sha"])

    def diffs(self) -> list[MRFileDiff]:
        """Every file of the MR diff, all pages."""
        pid = self.mr.project_id
        rows = self._call("list MR diffs", self._gl.http_list,
                          f"/projects/{pid}/merge_requests/{self.target.mr_iid}/diffs",
                          get_all=True)
        return [MRFileDiff(old_path=r["old_path"], new_path=r["new_path"],
                           diff=r.get("diff") or "", new_file=bool(r.get("new_file")),
                           renamed_file=bool(r.get("renamed_file")),
                           deleted_file=bool(r.get("deleted_file"))) for r in rows]

    def notes(self) -> list[RemoteNote]:
        """Every note of the MR (general and diff notes), all pages."""
        rows = self._call("list notes", self.mr.notes.list, get_all=True)
        return [_note(n.attributes) for n in rows]

    def discussions(self) -> list[RemoteDiscussion]:
        """Every discussion of the MR, all pages."""
        rows = self._call("list discussions", self.mr.discussions.list, get_all=True)
        return [RemoteDiscussion(id=d.id, individual_note=bool(d.attributes.get(
                    "individual_note")), notes=[_note(n) for n in d.attributes.get("notes", [])])
                for d in rows]

    # ---- writes (bodies are scrubbed of the token and disarmed) ------------------------------

    def _body(self, body: str) -> str:
        return disarm_quick_actions(self._redactor.text(body))

    def create_note(self, body: str) -> int:
        """Post a general MR note; its id."""
        note = self._call("create note", self.mr.notes.create,
                          {"body": self._body(body)})
        return int(note.id)

    def update_note(self, note_id: int, body: str) -> None:
        """Replace the body of a note."""
        self._call("update note", self.mr.notes.update, note_id,
                   {"body": self._body(body)})

    def create_discussion(self, body: str, position: InlinePosition | None = None
                          ) -> RemoteDiscussion:
        """Start a discussion; inline when ``position`` is given."""
        data: dict[str, Any] = {"body": self._body(body)}
        if position is not None:
            data["position"] = position.model_dump(exclude_none=True)
        d = self._call("create discussion", self.mr.discussions.create, data)
        return RemoteDiscussion(id=d.id, individual_note=bool(d.attributes.get(
            "individual_note")), notes=[_note(n) for n in d.attributes.get("notes", [])])

    def update_discussion_note(self, discussion_id: str, note_id: int, body: str) -> None:
        """Replace the body of a note inside a discussion."""
        disc = self.mr.discussions.get(discussion_id, lazy=True)
        self._call("update discussion note", disc.notes.update, note_id,
                   {"body": self._body(body)})

    def resolve_discussion(self, discussion_id: str, resolved: bool = True) -> None:
        """Resolve (or reopen) a discussion."""
        self._call("resolve discussion", self.mr.discussions.update, discussion_id,
                   {"resolved": resolved})
