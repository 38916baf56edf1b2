"""A fake GitHub REST API on loopback: one repository, one pull request, its files (with
``patch``), issue comments, review comments made through reviews, and check runs. Standard
library only; thread-safe; every request is recorded (the token itself never is).

What it serves, as PyGithub calls it (the API root is ``url``, like ``api.github.com``)::

    GET   /user                                         403 for an Actions token (default)
    GET   /repos/:o/:r                                  the repository
    GET   /repos/:o/:r/pulls/:n                         the PR, with head and base sha
    GET   /repos/:o/:r/pulls/:n/files                   paged files, each with its ``patch``
    GET   /repos/:o/:r/issues/:n/comments               paged issue comments (oldest first)
    POST  /repos/:o/:r/issues/:n/comments               a comment
    PATCH /repos/:o/:r/issues/comments/:id              edit a comment's body
    GET   /repos/:o/:r/pulls/:n/comments                paged review comments
    POST  /repos/:o/:r/pulls/:n/reviews                 a review with comments (line/start_line)
    PATCH /repos/:o/:r/pulls/comments/:id               edit a review comment's body
    GET   /repos/:o/:r/commits/:sha/check-runs          check runs of a commit (?check_name=)
    POST  /repos/:o/:r/check-runs                       a check run with annotations
    PATCH /repos/:o/:r/check-runs/:id                   update one

Like GitHub, a review comment must name a line of the PR's diff on its side (``RIGHT``: an
added or a context line of the file's ``patch``; ``LEFT``: a removed or a context line), a
multi-line one a ``start_line`` before ``line`` in the same hunk, and the whole review is
refused with 422 ``Unprocessable Entity`` / ``Line could not be resolved`` when one is not.
``apply_suggestion`` does what "Commit suggestion" does with a comment's suggestion block.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.fake_gitlab import RecordedRequest, diff_from_texts

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
HUMAN = {"login": "octo-reviewer", "id": 7, "type": "User"}
_SUGGESTION = re.compile(r"^(`{3,})suggestion\n(.*?)^\1$", re.M | re.S)


def patch_from_texts(old: str, new: str, context: int = 3) -> str:
    """A GitHub ``patch`` (hunks only, like GitLab's diff) from two file texts."""
    return diff_from_texts(old, new, context).replace("\\ No newline at end of file\n", "")


def diff_sides(patch: str) -> dict[str, list[set[int]]]:
    """Per side, the lines a review comment may name, one set per hunk."""
    right: list[set[int]] = []
    left: list[set[int]] = []
    old = new = 0
    for line in patch.splitlines():
        if m := HUNK.match(line):
            old, new = int(m.group(1)), int(m.group(3))
            right.append(set())
            left.append(set())
            continue
        if not right:
            continue
        if line.startswith("+"):
            right[-1].add(new)
            new += 1
        elif line.startswith("-"):
            left[-1].add(old)
            old += 1
        elif line.startswith(" ") or line == "":
            right[-1].add(new)
            left[-1].add(old)
            old, new = old + 1, new + 1
    return {"RIGHT": right, "LEFT": left}


def apply_suggestion(text: str, comment: dict) -> str:
    """``text`` after "Commit suggestion" on ``comment``: lines start_line (or line) .. line
    replaced by the block's content (an empty block deletes them)."""
    m = _SUGGESTION.search(comment["body"])
    assert m, "the comment has no suggestion block"
    end = comment["line"]
    start = comment.get("start_line") or end
    lines = text.splitlines(keepends=True)
    new = m.group(2).splitlines(keepends=True)
    return "".join(lines[:start - 1] + new + lines[end:])


@dataclass
class _State:
    issue_comments: list[dict] = field(default_factory=list)
    review_comments: list[dict] = field(default_factory=list)
    reviews: list[dict] = field(default_factory=list)
    check_runs: list[dict] = field(default_factory=list)
    next_id: int = 5000
    clock: datetime = field(default_factory=lambda: datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    failures: list[int] = field(default_factory=list)


class FakeGitHub:
    """The fake server. Use as a context manager; ``url`` is the API root for PyGithub.

    ``files`` are PR file objects (``filename``, ``patch``, optional ``status``,
    ``previous_filename``). ``user``: what ``GET /user`` answers (None: 403, as for the
    Actions ``GITHUB_TOKEN``); posts are written by ``author``.
    """

    def __init__(self, *, files: list[dict], repo: str = "acme/skills", number: int = 12,
                 head_sha: str = "c" * 40, base_sha: str = "a" * 40,
                 head_repo: str | None = None, token: str | None = None, per_page: int = 30,
                 user: dict | None = None, author: dict | None = None):
        self.repo = repo
        self.number = number
        self.head_sha = head_sha
        self.base_sha = base_sha
        self.head_repo = head_repo or repo
        self.files = [{"status": "modified", "additions": 1, "deletions": 1, "changes": 2,
                       "sha": "f" * 40, **f} for f in files]
        self.token = token
        self.per_page = per_page
        self.user = user
        self.author = author or dict(BOT)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._state = _State()
        self._server: ThreadingHTTPServer | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # ---- inspection and seeding --------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def writes(self) -> list[RecordedRequest]:
        """POST/PATCH/PUT/DELETE requests, in order."""
        return [r for r in self.requests if r.method in ("POST", "PATCH", "PUT", "DELETE")]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def _copy(self, name: str) -> list[dict]:
        with self._lock:
            return json.loads(json.dumps(getattr(self._state, name)))

    @property
    def issue_comments(self) -> list[dict]:
        return self._copy("issue_comments")

    @property
    def review_comments(self) -> list[dict]:
        return self._copy("review_comments")

    @property
    def reviews(self) -> list[dict]:
        return self._copy("reviews")

    @property
    def check_runs(self) -> list[dict]:
        return self._copy("check_runs")

    def fail_next(self, status: int = 502, count: int = 1) -> None:
        with self._lock:
            self._state.failures += [status] * count

    def add_comment(self, body: str, user: dict | None = None) -> dict:
        """Seed an issue comment written by someone else (a human by default)."""
        with self._lock:
            return dict(self._comment(body, user or dict(HUMAN)))

    # ---- the model -----------------------------------------------------------------------

    def _now(self) -> str:
        self._state.clock += timedelta(seconds=1)
        return self._state.clock.isoformat().replace("+00:00", "Z")

    def _id(self) -> int:
        self._state.next_id += 1
        return self._state.next_id

    def _api(self, rest: str) -> str:
        return f"{self.url}/repos/{self.repo}{rest}"

    def _comment(self, body: str, user: dict) -> dict:
        cid, now = self._id(), self._now()
        c = {"id": cid, "node_id": f"IC_{cid}", "body": body, "user": user,
             "created_at": now, "updated_at": now, "author_association": "NONE",
             "url": self._api(f"/issues/comments/{cid}"),
             "html_url": f"{self.url}/{self.repo}/pull/{self.number}#issuecomment-{cid}",
             "issue_url": self._api(f"/issues/{self.number}")}
        self._state.issue_comments.append(c)
        return c

    def line_error(self, c: dict) -> str | None:
        """None when GitHub would accept the review comment's position."""
        f = next((f for f in self.files if f["filename"] == c.get("path")), None)
        if f is None or not f.get("patch"):
            return "Path could not be resolved"
        side = c.get("side") or "RIGHT"
        if side not in ("RIGHT", "LEFT") or (c.get("start_side") or side) != side:
            return "side is invalid"
        line, start = c.get("line"), c.get("start_line")
        if not isinstance(line, int) or (start is not None and not isinstance(start, int)):
            return "Line could not be resolved"
        if start is not None and start >= line:
            return "start_line must precede line"
        for hunk in diff_sides(f["patch"])[side]:
            if line in hunk and (start is None or start in hunk):
                return None
        return "Line could not be resolved" if start is None else \
            "Start line could not be resolved"

    # ---- dispatch ------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any,
               authorized: bool) -> tuple[int, Any, dict[str, str]]:
        rec = RecordedRequest(method, path, query, body, authorized=authorized)
        with self._lock:
            self._requests.append(rec)
            if self._state.failures:
                rec.status = self._state.failures.pop(0)
                return rec.status, {"message": "fake transient failure"}, {}
            if not authorized:
                rec.status = 401
                return 401, {"message": "Bad credentials", "status": "401"}, {}
            rec.status, payload, headers = self._route(method, path, query, body)
            return rec.status, payload, headers

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any
               ) -> tuple[int, Any, dict[str, str]]:
        not_found = (404, {"message": "Not Found", "status": "404"}, {})
        data = body if isinstance(body, dict) else {}
        if path == "/user" and method == "GET":
            if self.user is None:
                return 403, {"message": "Resource not accessible by integration",
                             "status": "403"}, {}
            return 200, dict(self.user), {}
        prefix = f"/repos/{self.repo}"
        if not path.startswith(prefix):
            return not_found
        rest = path[len(prefix):]
        if rest == "" and method == "GET":
            return 200, self._repository(self.repo), {}
        pr = f"/pulls/{self.number}"
        if rest == pr and method == "GET":
            return 200, self._pull(), {}
        if rest == pr + "/files" and method == "GET":
            return self._page(self.files, query, path)
        if rest == f"/issues/{self.number}/comments":
            if method == "GET":
                return self._page(self._state.issue_comments, query, path)
            if method == "POST":
                if not data.get("body"):
                    return 422, {"message": "Validation Failed",
                                 "errors": [{"field": "body", "code": "missing_field"}]}, {}
                return 201, self._comment(data["body"], self.author), {}
        if m := re.fullmatch(r"/issues/comments/(\d+)", rest):
            c = next((c for c in self._state.issue_comments if c["id"] == int(m.group(1))), None)
            if c is None:
                return not_found
            if method == "PATCH" and data.get("body"):
                c["body"], c["updated_at"] = data["body"], self._now()
            return 200, c, {}
        if rest == pr + "/comments" and method == "GET":
            return self._page(self._state.review_comments, query, path)
        if rest == pr + "/reviews" and method == "POST":
            return self._review(data)
        if m := re.fullmatch(r"/pulls/comments/(\d+)", rest):
            c = next((c for c in self._state.review_comments if c["id"] == int(m.group(1))),
                     None)
            if c is None:
                return not_found
            if method == "PATCH" and data.get("body"):
                c["body"], c["updated_at"] = data["body"], self._now()
            return 200, c, {}
        if (m := re.fullmatch(r"/commits/([0-9a-f]{40})/check-runs", rest)) and method == "GET":
            name = (query.get("check_name") or [None])[0]
            runs = [r for r in self._state.check_runs if r["head_sha"] == m.group(1)
                    and (name is None or r["name"] == name)]
            return 200, {"total_count": len(runs), "check_runs": runs}, {}
        if rest == "/check-runs" and method == "POST":
            return self._check_run(None, data)
        if (m := re.fullmatch(r"/check-runs/(\d+)", rest)) and method == "PATCH":
            return self._check_run(int(m.group(1)), data)
        return not_found

    def _repository(self, full_name: str) -> dict:
        owner, name = full_name.split("/", 1)
        return {"id": 1 if full_name == self.repo else 2, "name": name, "full_name": full_name,
                "owner": {"login": owner, "type": "Organization"}, "private": False,
                "fork": full_name != self.repo, "url": f"{self.url}/repos/{full_name}",
                "html_url": f"{self.url}/{full_name}"}

    def _pull(self) -> dict:
        return {"id": 900, "number": self.number, "state": "open",
                "title": "segmentation: document the train action",
                "url": self._api(f"/pulls/{self.number}"),
                "html_url": f"{self.url}/{self.repo}/pull/{self.number}",
                "issue_url": self._api(f"/issues/{self.number}"),
                "comments_url": self._api(f"/issues/{self.number}/comments"),
                "review_comments_url": self._api(f"/pulls/{self.number}/comments"),
                "head": {"sha": self.head_sha, "ref": "feature",
                         "repo": self._repository(self.head_repo)},
                "base": {"sha": self.base_sha, "ref": "main",
                         "repo": self._repository(self.repo)}}

    def _review(self, data: dict) -> tuple[int, Any, dict[str, str]]:
        if data.get("event") not in (None, "COMMENT", "APPROVE", "REQUEST_CHANGES"):
            return 422, {"message": "Unprocessable Entity", "errors": ["event is invalid"]}, {}
        if data.get("commit_id") not in (None, self.head_sha):
            return 422, {"message": "Unprocessable Entity",
                         "errors": ["commit_id is not part of the pull request"]}, {}
        comments = data.get("comments") or []
        errors = [e for c in comments if (e := self.line_error(c))]
        if errors or not all(c.get("body") for c in comments):
            return 422, {"message": "Unprocessable Entity", "status": "422",
                         "errors": errors or ["body is missing"]}, {}
        rid = self._id()
        review = {"id": rid, "node_id": f"PRR_{rid}", "user": self.author,
                  "body": data.get("body") or "", "state": "COMMENTED",
                  "commit_id": data.get("commit_id") or self.head_sha,
                  "submitted_at": self._now(),
                  "pull_request_url": self._api(f"/pulls/{self.number}")}
        self._state.reviews.append(review)
        for c in comments:
            cid, now = self._id(), self._now()
            self._state.review_comments.append({
                "id": cid, "node_id": f"PRRC_{cid}", "pull_request_review_id": rid,
                "path": c["path"], "line": c["line"], "original_line": c["line"],
                "start_line": c.get("start_line"), "original_start_line": c.get("start_line"),
                "side": c.get("side") or "RIGHT", "start_side": c.get("start_side"),
                "commit_id": review["commit_id"], "original_commit_id": review["commit_id"],
                "body": c["body"], "user": self.author, "created_at": now, "updated_at": now,
                "url": self._api(f"/pulls/comments/{cid}"),
                "html_url": f"{self.url}/{self.repo}/pull/{self.number}#discussion_r{cid}",
                "pull_request_url": self._api(f"/pulls/{self.number}")})
        return 200, review, {}

    def _check_run(self, run_id: int | None, data: dict) -> tuple[int, Any, dict[str, str]]:
        output = data.get("output") or {}
        notes = output.get("annotations") or []
        if len(notes) > 50:
            return 422, {"message": "Validation Failed",
                         "errors": ["only 50 annotations per request"]}, {}
        for a in notes:
            if a.get("annotation_level") not in ("notice", "warning", "failure") or not all(
                    a.get(k) for k in ("path", "start_line", "end_line", "message")):
                return 422, {"message": "Validation Failed", "errors": [f"bad annotation {a}"]}, {}
        if output and not (output.get("title") and output.get("summary")):
            return 422, {"message": "Validation Failed", "errors": ["output needs title, "
                                                                    "summary"]}, {}
        if run_id is None:
            if not data.get("name") or not re.fullmatch(r"[0-9a-f]{40}",
                                                        str(data.get("head_sha"))):
                return 422, {"message": "Validation Failed", "errors": ["name, head_sha"]}, {}
            run = {"id": self._id(), "name": data["name"], "head_sha": data["head_sha"],
                   "annotations": []}
            self._state.check_runs.append(run)
        else:
            run = next((r for r in self._state.check_runs if r["id"] == run_id), None)
            if run is None:
                return 404, {"message": "Not Found"}, {}
        for k in ("status", "conclusion", "details_url", "external_id"):
            if k in data:
                run[k] = data[k]
        if output:
            run["output"] = {k: v for k, v in output.items() if k != "annotations"}
            run["annotations"] = run["annotations"] + notes  # GitHub appends annotations
        run["url"] = self._api(f"/check-runs/{run['id']}")
        return (201 if run_id is None else 200), run, {}

    def _page(self, items: list[dict], query: dict[str, list[str]], path: str
              ) -> tuple[int, Any, dict[str, str]]:
        per_page = int((query.get("per_page") or [self.per_page])[0])
        page = int((query.get("page") or [1])[0])
        pages = max(1, -(-len(items) // per_page))
        headers = {}
        if page < pages:
            headers["Link"] = (f'<{self.url}{path}?page={page + 1}&per_page={per_page}>; '
                               f'rel="next", <{self.url}{path}?page={pages}&per_page='
                               f'{per_page}>; rel="last"')
        return 200, items[(page - 1) * per_page: page * per_page], headers


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        auth = self.headers.get("Authorization") or ""
        token = auth.split(" ", 1)[1] if " " in auth else ""
        authorized = self.fake.token is None or token == self.fake.token
        status, payload, headers = self.fake.handle(self.command, parts.path,
                                                    parse_qs(parts.query), body, authorized)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _dispatch
