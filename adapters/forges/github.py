"""GitHub: the pull request aeval reports on, through PyGithub (the ``github`` extra).

Only calls live here; what to post is decided by ``tasks/deliver/github.py`` on the shared
plan of ``tasks/deliver/placement.py``.

- The pull request comes from explicit arguments, else the Actions environment:
  ``GITHUB_REPOSITORY``, ``GITHUB_API_URL`` and the event at ``GITHUB_EVENT_PATH``
  (``pull_request.number`` for a ``pull_request`` event; for ``workflow_run``, the run's
  pull request, or the number given, which must then have the run's ``head_sha``: a run
  folder from an untrusted job cannot point the post at another pull request).
- The token comes from ``AEVAL_GITHUB_TOKEN`` (in Actions: ``${{ github.token }}`` with
  ``pull-requests: write``, ``issues: write`` and ``checks: write``, given to the posting
  step only). It is read here, at posting time, and nowhere else: never a parameter, never
  stored, scrubbed from every body and error message.
- PyGithub retries 5xx and rate limits itself (``GithubRetry``); what still fails is raised
  as ``GitHubError``. Writes are spaced by ``WRITE_INTERVAL_S`` (GitHub asks for one second
  between content-creating requests).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from aeval.adapters.forges.diff import FileDiff, ForgeConfigError, ForgeError
from aeval.isolation.redact import Redactor
from aeval.isolation.text import escape_controls
from aeval.strict import StrictModel

TOKEN_ENV = "AEVAL_GITHUB_TOKEN"
DEFAULT_API_URL = "https://api.github.com"
TIMEOUT_S = 30
WRITE_INTERVAL_S = 1.0
CHECK_NAME = "aeval"
MAX_ANNOTATIONS = 50  # per request, GitHub's limit


class GitHubError(ForgeError):
    """A GitHub call failed after PyGithub's own retries, or cannot be made at all."""


class GitHubConfigError(GitHubError, ForgeConfigError):
    """What to post to is not known, or must not be posted to: no token, no repository, no
    pull request, or a pull request whose head is not the run's."""


def _event(environ: Mapping[str, str]) -> dict[str, Any]:
    path = environ.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GitHubConfigError(f"GITHUB_EVENT_PATH {path}: cannot read the event "
                                f"({type(exc).__name__})") from None
    return data if isinstance(data, dict) else {}


class GitHubTarget(StrictModel):
    """The pull request to post on."""

    api_url: str = Field(description="REST API root (GITHUB_API_URL), e.g. "
                                     "https://api.github.com.")
    repository: str = Field(description="owner/name (GITHUB_REPOSITORY).")
    number: int = Field(ge=1, description="Pull request number.")
    expected_head: str | None = Field(
        None, description="The head sha the pull request must have (a workflow_run's).")

    @classmethod
    def resolve(cls, repository: str | None = None, number: int | str | None = None,
                api_url: str | None = None, environ: Mapping[str, str] | None = None
                ) -> GitHubTarget:
        """Explicit values first, then the Actions environment; raise ``GitHubConfigError``
        naming whatever is still missing."""
        env = os.environ if environ is None else environ
        event = _event(env)
        run = event.get("workflow_run") if isinstance(event.get("workflow_run"), dict) else None
        repository = repository or env.get("GITHUB_REPOSITORY")
        api_url = api_url or env.get("GITHUB_API_URL") or DEFAULT_API_URL
        expected = None
        if number in (None, ""):
            pr = event.get("pull_request")
            if isinstance(pr, dict):
                number = pr.get("number")
            elif run is not None:
                prs = [p for p in run.get("pull_requests") or [] if isinstance(p, dict)]
                number = prs[0].get("number") if prs else None
        if run is not None:
            expected = run.get("head_sha") or None
        missing = [name for name, v in (("repository (--repo or GITHUB_REPOSITORY)", repository),
                                        ("pull request (--pr, or GITHUB_EVENT_PATH of a "
                                         "pull_request event)", number)) if not v]
        if missing:
            raise GitHubConfigError("unknown " + ", ".join(missing))
        if str(repository).count("/") != 1:
            raise GitHubConfigError(f"repository must be owner/name, not {repository!r}")
        try:
            n = int(number)  # type: ignore[arg-type]
        except ValueError:
            raise GitHubConfigError(f"pull request must be a number, not {number!r}") from None
        if n < 1:
            raise GitHubConfigError(f"pull request must be a number, not {number!r}")
        return cls(api_url=str(api_url).rstrip("/"), repository=str(repository), number=n,
                   expected_head=expected)


class PullInfo(StrictModel):
    """What delivery needs of the pull request itself."""

    head_sha: str
    base_sha: str
    head_repository: str | None = None


class RemoteComment(StrictModel):
    """An issue comment or a review comment as read back (only what delivery needs)."""

    id: int
    body: str
    login: str | None = None
    user_type: str | None = None
    path: str | None = None
    line: int | None = None
    start_line: int | None = None
    side: str | None = None


class ReviewComment(StrictModel):
    """One comment of a new review: on ``line`` (the last line it spans) of ``path`` at the
    PR head; ``start_line`` for a multi-line one."""

    path: str
    line: int = Field(ge=1)
    start_line: int | None = Field(None, ge=1)
    side: Literal["RIGHT"] = "RIGHT"
    body: str

    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "line": self.line, "side": self.side,
                                "body": self.body}
        if self.start_line is not None and self.start_line < self.line:
            data.update(start_line=self.start_line, start_side=self.side)
        return data


class Annotation(StrictModel):
    """A check-run annotation on lines of a file."""

    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    annotation_level: Literal["notice", "warning", "failure"]
    title: str = ""
    message: str


class RemoteCheck(StrictModel):
    """An ``aeval`` check run as read back."""

    id: int
    conclusion: str | None = None
    title: str | None = None
    summary: str | None = None


def token_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The token from ``AEVAL_GITHUB_TOKEN``; never printed, never stored."""
    token = (os.environ if environ is None else environ).get(TOKEN_ENV, "")
    if not token:
        raise GitHubConfigError(
            f"{TOKEN_ENV} is not set: give the posting step `${{{{ github.token }}}}` (with "
            "pull-requests: write, issues: write, checks: write) and no other step")
    return token


def _status(patch_status: str | None) -> dict[str, bool]:
    return {"new_file": patch_status == "added", "renamed_file": patch_status == "renamed",
            "deleted_file": patch_status == "removed"}


class GitHubPR:
    """One pull request. Every method is one or a few REST calls; errors become
    ``GitHubError``."""

    def __init__(self, target: GitHubTarget, token: str, *, timeout: int = TIMEOUT_S):
        try:
            import github
        except ImportError:  # pragma: no cover - the extra is missing
            raise GitHubConfigError("posting to GitHub needs PyGithub: pip install "
                                    "'aeval-skills[github]'") from None
        self._github = github
        self.target = target
        self._redactor = Redactor({TOKEN_ENV: token})
        self._gh = github.Github(
            auth=github.Auth.Token(token), base_url=target.api_url, timeout=timeout,
            user_agent="aeval (PyGithub)", seconds_between_requests=None,
            seconds_between_writes=WRITE_INTERVAL_S or None, lazy=True,
            retry=github.GithubRetry(total=4, backoff_factor=0.5, max_rate_limit_wait=120))
        self._repo = self._gh.get_repo(target.repository)
        self._pr: Any = None
        self._objects: dict[tuple[str, int], Any] = {}

    @classmethod
    def connect(cls, target: GitHubTarget, environ: Mapping[str, str] | None = None
                ) -> GitHubPR:
        """A client for ``target`` with the token from the environment."""
        return cls(target, token_from_env(environ))

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import requests

        try:
            return fn(*args, **kwargs)
        except self._github.GithubException as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            detail = data.get("message") or str(exc)
            if data.get("errors"):
                detail += f" {json.dumps(data['errors'])[:300]}"
            raise GitHubError(f"GitHub {what}: {exc.status} "
                              f"{escape_controls(self._redactor.text(str(detail)), keep='')}",
                              exc.status) from None
        except (requests.RequestException, OSError) as exc:
            raise GitHubError(f"GitHub {what}: {type(exc).__name__}: "
                              f"{self._redactor.text(str(exc))[:300]}") from None

    def _list(self, what: str, paged: Any) -> list[Any]:
        return self._call(what, list, paged)

    @property
    def pr(self) -> Any:
        if self._pr is None:
            self._pr = self._call("get pull request", self._repo.get_pull, self.target.number)
        return self._pr

    # ---- reads ------------------------------------------------------------------------------

    def pull(self) -> PullInfo:
        """Head and base of the pull request; ``GitHubConfigError`` when the target expects
        another head (a workflow_run whose run was not of this pull request's head)."""
        pr = self.pr  # lazy: the attributes below fetch it
        info = self._call("get pull request", lambda: PullInfo(
            head_sha=pr.head.sha, base_sha=pr.base.sha,
            head_repository=getattr(pr.head.repo, "full_name", None)))
        if self.target.expected_head and info.head_sha != self.target.expected_head:
            raise GitHubConfigError(
                f"pull request #{self.target.number} has head {info.head_sha[:12]}, not the "
                f"workflow run's {self.target.expected_head[:12]}: refusing to post a run of "
                "another commit on it")
        return info

    def me(self) -> str | None:
        """The token's login; None for an Actions token (``GET /user`` is refused)."""
        try:
            user = self._call("get user", lambda: self._gh.get_user().login)
        except GitHubError as exc:
            if exc.status_code in (401, 403, 404):
                return None
            raise
        return str(user) if user else None

    def files(self) -> list[FileDiff]:
        """Every file of the pull request, with its patch (empty when GitHub has none)."""
        rows = self._list("list pull request files", self.pr.get_files())
        return [FileDiff(old_path=f.previous_filename or f.filename, new_path=f.filename,
                         diff=f.patch or "", **_status(f.status)) for f in rows]

    def _comment(self, kind: str, c: Any) -> RemoteComment:
        self._objects[(kind, c.id)] = c
        user = c.user
        extra = {}
        if kind == "review":
            extra = {"path": c.path, "line": c.line, "start_line": c.start_line,
                     "side": c.side}
        return RemoteComment(id=c.id, body=c.body or "", login=getattr(user, "login", None),
                             user_type=getattr(user, "type", None), **extra)

    def issue_comments(self) -> list[RemoteComment]:
        """The pull request's conversation comments, oldest first."""
        return [self._comment("issue", c) for c in
                self._list("list comments", self.pr.get_issue_comments())]

    def review_comments(self) -> list[RemoteComment]:
        """The pull request's review (diff) comments, oldest first."""
        return [self._comment("review", c) for c in
                self._list("list review comments", self.pr.get_review_comments())]

    # ---- writes (bodies scrubbed of the token) ----------------------------------------------

    def _body(self, body: str) -> str:
        return self._redactor.text(body)

    def create_issue_comment(self, body: str) -> int:
        c = self._call("create comment", self.pr.create_issue_comment, self._body(body))
        return int(c.id)

    def update_issue_comment(self, comment_id: int, body: str) -> None:
        c = self._objects.get(("issue", comment_id)) or self._call(
            "get comment", self._repo.get_issue_comment, comment_id)
        self._call("update comment", c.edit, self._body(body))

    def update_review_comment(self, comment_id: int, body: str) -> None:
        c = self._objects.get(("review", comment_id)) or self._call(
            "get review comment", self.pr.get_review_comment, comment_id)
        self._call("update review comment", c.edit, self._body(body))

    def create_review(self, head_sha: str, body: str, comments: list[ReviewComment]) -> int:
        """One review (event COMMENT) of ``head_sha`` carrying ``comments``; its id. A
        comment GitHub cannot place fails the whole review with 422."""
        commit = self._repo.get_commit(head_sha)
        review = self._call("create review", self.pr.create_review, commit=commit,
                            body=self._body(body), event="COMMENT",
                            comments=[c.model_copy(update={"body": self._body(c.body)}
                                                   ).payload() for c in comments])
        return int(review.id)

    def check_runs(self, head_sha: str) -> list[RemoteCheck]:
        """The ``aeval`` check runs of ``head_sha``, newest first."""
        commit = self._repo.get_commit(head_sha)
        runs = self._list("list check runs", commit.get_check_runs(check_name=CHECK_NAME))
        out = []
        for r in runs:
            output = r.output
            out.append(RemoteCheck(id=r.id, conclusion=r.conclusion,
                                   title=getattr(output, "title", None),
                                   summary=getattr(output, "summary", None)))
        return sorted(out, key=lambda r: -r.id)

    def create_check_run(self, head_sha: str, *, conclusion: str, title: str, summary: str,
                         annotations: list[Annotation], details_url: str | None = None
                         ) -> int:
        """A completed ``aeval`` check run of ``head_sha`` with its annotations (sent in
        batches of 50, GitHub's limit per request); its id. A new run rather than an edit
        of the last: GitHub appends an edit's annotations to the old ones."""
        batches = [annotations[i:i + MAX_ANNOTATIONS]
                   for i in range(0, len(annotations), MAX_ANNOTATIONS)] or [[]]
        extra = {"details_url": details_url} if details_url else {}

        def output(batch: list[Annotation]) -> dict[str, Any]:
            return {"title": self._body(title), "summary": self._body(summary),
                    "annotations": [a.model_copy(update={"message": self._body(a.message)}
                                                 ).model_dump() for a in batch]}

        run = self._call("create check run", self._repo.create_check_run, CHECK_NAME,
                         head_sha, status="completed", conclusion=conclusion,
                         output=output(batches[0]), **extra)
        for batch in batches[1:]:
            self._call("update check run", run.edit, output=output(batch))
        return int(run.id)
