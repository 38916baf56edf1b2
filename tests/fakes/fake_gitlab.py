"""A fake GitLab REST API on loopback: one project, one merge request, its diffs, notes and
discussions. Standard library only; thread-safe; every request is recorded.

What it serves (under ``/api/v4``), as python-gitlab calls it::

    GET  /user                                           the token's user
    GET  /projects/:id                                   project (numeric id or url-encoded path)
    GET  /projects/:id/merge_requests/:iid               the MR, with ``diff_refs``
    GET  /projects/:id/merge_requests/:iid/diffs         paged file diffs (unified hunks)
    GET  /projects/:id/merge_requests/:iid/notes         paged notes (diff notes included)
    POST /projects/:id/merge_requests/:iid/notes         a general note
    PUT  /projects/:id/merge_requests/:iid/notes/:nid    edit a note's body
    GET  /projects/:id/merge_requests/:iid/discussions   paged discussions
    POST /projects/:id/merge_requests/:iid/discussions   a discussion, inline with ``position``
    PUT  /projects/:id/merge_requests/:iid/discussions/:did             resolve / unresolve
    PUT  /projects/:id/merge_requests/:iid/discussions/:did/notes/:nid  edit a note

Like GitLab, an inline position must name the MR's diff refs and a line of the diff, with the
right combination: an added line takes only ``new_line``, a removed line only ``old_line``, a
context line both (and they must agree). Anything else answers 400
``{"message": {"base": ["line_code ... must be a valid line code"]}}``.

With ``git_repos`` (``{"tools/aeval": Path("bare.git")}``) it also serves those repositories
read-only over git's "dumb" HTTP protocol at ``/<path>.git/...``, as a GitLab instance
serves ``git clone``: HTTP basic auth with ``gitlab-ci-token`` and ``job_token`` (401 with
a Basic challenge otherwise, so git sends the URL's credentials).

Pages follow GitLab: ``page``/``per_page`` query parameters, ``Link: <...>; rel="next"`` and the
``X-Page``/``X-Total-Pages``/... headers.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
LINE_CODE_ERROR = "line_code {code} must be a valid line code"


@dataclass
class RecordedRequest:
    """One request as the fake saw it. The token itself is never stored, only whether it was
    right."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    status: int = 0
    authorized: bool = True

    @property
    def is_write(self) -> bool:
        return self.method in ("POST", "PUT", "DELETE")


def diff_from_texts(old: str, new: str, context: int = 3) -> str:
    """A GitLab-style diff (hunks only, no ``---``/``+++`` header) from two file texts."""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 n=context)
    out = [ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n"
           for ln in list(lines)[2:]]
    return "".join(out)


def valid_positions(diff: str) -> set[tuple[int | None, int | None]]:
    """(old_line, new_line) pairs GitLab accepts for one file's diff."""
    valid: set[tuple[int | None, int | None]] = set()
    old = new = 0
    for line in diff.splitlines():
        m = HUNK.match(line)
        if m:
            old, new = int(m.group(1)), int(m.group(3))
            continue
        if line.startswith("+"):
            valid.add((None, new))
            new += 1
        elif line.startswith("-"):
            valid.add((old, None))
            old += 1
        elif line.startswith(" ") or line == "":
            valid.add((old, new))
            old += 1
            new += 1
    return valid


@dataclass
class _State:
    discussions: list[dict] = field(default_factory=list)
    next_note_id: int = 1000
    clock: datetime = field(default_factory=lambda: datetime(2026, 11, 30, 9, 0, tzinfo=UTC))
    failures: list[int] = field(default_factory=list)


class FakeGitLab:
    """The fake server. Use as a context manager; ``url`` is the base URL for python-gitlab.

    ``diffs`` are GitLab MR diff objects (``old_path``, ``new_path``, ``diff`` and the
    ``new_file``/``renamed_file``/``deleted_file`` flags; missing flags default to False).
    """

    def __init__(self, *, diffs: list[dict], project_id: int = 42,
                 project_path: str = "group/marketplace", mr_iid: int = 7,
                 diff_refs: dict[str, str] | None = None, token: str | None = None,
                 per_page: int = 20, username: str = "aeval-bot",
                 git_repos: dict[str, Any] | None = None, job_token: str | None = None):
        self.project_id = project_id
        self.project_path = project_path
        self.mr_iid = mr_iid
        self.diffs = [{"a_mode": "100644", "b_mode": "100644", "new_file": False,
                       "renamed_file": False, "deleted_file": False, **d} for d in diffs]
        self.diff_refs = diff_refs or {"base_sha": "a" * 40, "start_sha": "b" * 40,
                                       "head_sha": "c" * 40}
        self.token = token
        self.per_page = per_page
        self.user = {"id": 1, "username": username, "name": username, "bot": True}
        self.git_repos = dict(git_repos or {})
        self.job_token = job_token
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._state = _State()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeGitLab:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGitLab:
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
        """POST/PUT/DELETE requests, in order."""
        return [r for r in self.requests if r.is_write]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    @property
    def discussions(self) -> list[dict]:
        with self._lock:
            return json.loads(json.dumps(self._state.discussions))

    @property
    def notes(self) -> list[dict]:
        return [n for d in self.discussions for n in d["notes"]]

    def fail_next(self, status: int = 502, count: int = 1) -> None:
        """Answer the next ``count`` requests with ``status`` (transient-error tests)."""
        with self._lock:
            self._state.failures += [status] * count

    def add_note(self, body: str, *, username: str = "human", position: dict | None = None
                 ) -> dict:
        """Seed a note (a discussion of its own) written by someone else."""
        with self._lock:
            d = self._new_discussion(body, position, {"id": 2, "username": username,
                                                      "name": username})
            return json.loads(json.dumps(d))

    # ---- the model -----------------------------------------------------------------------

    def _now(self) -> str:
        self._state.clock += timedelta(seconds=1)
        return self._state.clock.isoformat().replace("+00:00", "Z")

    def _new_discussion(self, body: str, position: dict | None, author: dict) -> dict:
        s = self._state
        s.next_note_id += 1
        now = self._now()
        note = {
            "id": s.next_note_id, "type": "DiffNote" if position else None, "body": body,
            "author": author, "created_at": now, "updated_at": now, "system": False,
            "noteable_id": 900, "noteable_type": "MergeRequest", "noteable_iid": self.mr_iid,
            "resolvable": bool(position), "resolved": False, "resolved_by": None,
        }
        if position:
            note["position"] = position
        disc = {"id": hashlib.sha1(str(s.next_note_id).encode()).hexdigest(),
                "individual_note": not position, "notes": [note]}
        s.discussions.append(disc)
        return disc

    def _find_discussion(self, did: str) -> dict | None:
        return next((d for d in self._state.discussions if d["id"] == did), None)

    def _find_note(self, nid: int) -> dict | None:
        return next((n for d in self._state.discussions for n in d["notes"] if n["id"] == nid),
                    None)

    def position_error(self, pos: Any) -> str | None:
        """None when GitLab would accept the position, else the error message."""
        if not isinstance(pos, dict):
            return "position is invalid"
        if pos.get("position_type") != "text":
            return "position_type is invalid"
        for k in ("base_sha", "start_sha", "head_sha"):
            if pos.get(k) != self.diff_refs[k]:
                return f"{k} does not match the merge request's diff refs"
        old_line, new_line = pos.get("old_line"), pos.get("new_line")
        code = f"{hashlib.sha1(str(pos.get('new_path')).encode()).hexdigest()}_" \
               f"{old_line}_{new_line}"
        fd = next((d for d in self.diffs if d["new_path"] == pos.get("new_path")), None)
        if fd is None or fd["old_path"] != pos.get("old_path"):
            return LINE_CODE_ERROR.format(code=code)
        try:
            pair = (None if old_line is None else int(old_line),
                    None if new_line is None else int(new_line))
        except (TypeError, ValueError):
            return LINE_CODE_ERROR.format(code=code)
        if pair not in valid_positions(fd["diff"]):
            return LINE_CODE_ERROR.format(code=code)
        return None

    # ---- request dispatch (called by the handler, under the lock) ------------------------

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any,
               authorized: bool) -> tuple[int, Any, dict[str, str]]:
        rec = RecordedRequest(method, path, query, body, authorized=authorized)
        with self._lock:
            self._requests.append(rec)
            if self._state.failures:
                rec.status = self._state.failures.pop(0)
                return rec.status, {"message": f"{rec.status} fake transient failure"}, {}
            if not authorized:
                rec.status = 401
                return 401, {"message": "401 Unauthorized"}, {}
            status, payload, headers = self._route(method, path, query, body)
            rec.status = status
            return status, payload, headers

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any
               ) -> tuple[int, Any, dict[str, str]]:
        not_found = (404, {"message": "404 Not found"}, {})
        if path == "/api/v4/user" and method == "GET":
            return 200, dict(self.user), {}
        m = re.match(r"^/api/v4/projects/([^/]+)(/.*)?$", path)
        if not m or unquote(m.group(1)) not in (str(self.project_id), self.project_path):
            return not_found
        rest = m.group(2) or ""
        if rest == "" and method == "GET":
            return 200, {"id": self.project_id, "path_with_namespace": self.project_path,
                         "web_url": f"{self.url}/{self.project_path}"}, {}
        m = re.match(r"^/merge_requests/(\d+)(/.*)?$", rest)
        if not m or int(m.group(1)) != self.mr_iid:
            return not_found
        sub = m.group(2) or ""
        data = body if isinstance(body, dict) else {}
        if sub == "" and method == "GET":
            return 200, self._mr(), {}
        if sub == "/diffs" and method == "GET":
            return self._page(self.diffs, query, path)
        if sub == "/notes" and method == "GET":
            notes = [n for d in self._state.discussions for n in d["notes"]]
            return self._page(sorted(notes, key=lambda n: -n["id"]), query, path)
        if sub == "/notes" and method == "POST":
            if not data.get("body"):
                return 400, {"message": {"note": ["can't be blank"]}}, {}
            return 201, self._new_discussion(data["body"], None, self.user)["notes"][0], {}
        if sub == "/discussions" and method == "GET":
            return self._page(self._state.discussions, query, path)
        if sub == "/discussions" and method == "POST":
            if not data.get("body"):
                return 400, {"message": {"note": ["can't be blank"]}}, {}
            pos = data.get("position")
            if pos is not None:
                err = self.position_error(pos)
                if err:
                    return 400, {"message": {"base": [err]}}, {}
                pos = {**pos, "line_range": None}
            return 201, self._new_discussion(data["body"], pos, self.user), {}
        m = re.match(r"^/notes/(\d+)$", sub)
        if m and method == "PUT":
            note = self._find_note(int(m.group(1)))
            if note is None:
                return not_found
            if "body" in data:
                note["body"], note["updated_at"] = data["body"], self._now()
            return 200, note, {}
        m = re.match(r"^/discussions/([0-9a-f]+)(?:/notes/(\d+))?$", sub)
        if m and method == "PUT":
            disc = self._find_discussion(m.group(1))
            if disc is None:
                return not_found
            resolved = data.get("resolved", (query.get("resolved") or [None])[0])
            if m.group(2) is None:
                if resolved is None:
                    return 400, {"message": "resolved is missing"}, {}
                flag = resolved in (True, "true", "1")
                for n in disc["notes"]:
                    if n["resolvable"]:
                        n["resolved"] = flag
                        n["resolved_by"] = self.user if flag else None
                return 200, disc, {}
            note = next((n for n in disc["notes"] if n["id"] == int(m.group(2))), None)
            if note is None:
                return not_found
            if "body" in data:
                note["body"], note["updated_at"] = data["body"], self._now()
            return 200, note, {}
        return not_found

    def _mr(self) -> dict:
        return {"id": 900, "iid": self.mr_iid, "project_id": self.project_id,
                "title": "Update segmentation skill", "state": "opened",
                "sha": self.diff_refs["head_sha"], "diff_refs": dict(self.diff_refs),
                "web_url": f"{self.url}/{self.project_path}/-/merge_requests/{self.mr_iid}"}

    def _page(self, items: list[dict], query: dict[str, list[str]], path: str
              ) -> tuple[int, Any, dict[str, str]]:
        per_page = int((query.get("per_page") or [self.per_page])[0])
        page = int((query.get("page") or [1])[0])
        total_pages = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        headers = {"X-Page": str(page), "X-Per-Page": str(per_page), "X-Total": str(len(items)),
                   "X-Total-Pages": str(total_pages),
                   "X-Next-Page": str(page + 1) if page < total_pages else "",
                   "X-Prev-Page": str(page - 1) if page > 1 else ""}
        if page < total_pages:
            headers["Link"] = f'<{self.url}{path}?page={page + 1}&per_page={per_page}>; ' \
                              f'rel="next"'
        return 200, chunk, headers


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitLab
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = None
        if raw:
            ctype = self.headers.get("Content-Type", "")
            if "json" in ctype:
                body = json.loads(raw)
            else:
                body = {k: v[-1] for k, v in parse_qs(raw.decode()).items()}
        token = self.headers.get("PRIVATE-TOKEN")
        authorized = self.fake.token is None or token == self.fake.token
        status, payload, headers = self.fake.handle(self.command, parts.path, query, body,
                                                    authorized)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _git_file(self) -> bool:
        """A file of a served bare repository (dumb HTTP), with job-token basic auth."""
        import base64
        from pathlib import Path

        path = urlsplit(self.path).path
        m = re.match(r"^/(.+?)\.git/(.*)$", path)
        if self.command != "GET" or not m or m.group(1) not in self.fake.git_repos:
            return False
        root = Path(self.fake.git_repos[m.group(1)]).resolve()
        expected = base64.b64encode(f"gitlab-ci-token:{self.fake.job_token}".encode()).decode()
        ok = self.headers.get("Authorization") == f"Basic {expected}"
        rec = RecordedRequest("GET", path, {}, None, authorized=ok)
        target = (root / m.group(2)).resolve()
        if not ok:
            rec.status, data = 401, b"HTTP Basic: Access denied\n"
        elif target.is_relative_to(root) and target.is_file():
            rec.status, data = 200, target.read_bytes()
        else:
            rec.status, data = 404, b"not found\n"
        with self.fake._lock:
            self.fake._requests.append(rec)
        self.send_response(rec.status)
        if rec.status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="GitLab"')
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return True

    def do_GET(self) -> None:
        if not self._git_file():
            self._dispatch()

    do_POST = do_PUT = do_DELETE = _dispatch
