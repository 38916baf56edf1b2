"""git: the repository root and which skills a change touched."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from aeval.isolation.copying import UNTRACKED_JUNK, text_path
from aeval.skill.skill_md import SKILL_FILE, skipped_folder


class GitError(RuntimeError):
    """git failed (not a repository, unknown ref ...). The message is git's own."""


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          errors="surrogateescape")  # a path need not be UTF-8
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def git_bytes(repo: Path, *args: str) -> bytes:
    """git's output as bytes: file names are bytes, and a name that is not UTF-8 is still a
    name (`os.fsdecode` gives it as Python's paths carry it)."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).decode(errors="replace").strip()
        raise GitError(f"git {' '.join(args)}: {err}")
    return proc.stdout


def _names(out: bytes) -> list[str]:
    """The paths of a ``-z`` listing, as `os.fsdecode` gives them."""
    return [os.fsdecode(n) for n in out.split(b"\0") if n]


def left_out(skill_dir: Path) -> list[str] | None:
    """What a copy of ``skill_dir`` leaves out (`aeval.skill.skill_md.Skill.left_out`): the
    untracked entries git's own ignore rules exclude (``.gitignore`` files, the repository's
    ``info/exclude``, the user's excludes file), and untracked `UNTRACKED_JUNK` (a local
    ``__pycache__``, an installed ``node_modules``). A tracked file is never left out, under an
    ignored or a junk folder too. None outside a git work tree (or without git)."""
    d = Path(skill_dir)
    try:
        if git(d, "rev-parse", "--is-inside-work-tree").strip() != "true":
            return None
        ignored = _names(git_bytes(d, "ls-files", "-z", "--others", "--ignored",
                                   "--exclude-standard", "--directory"))
        others = _names(git_bytes(d, "ls-files", "-z", "--others", "--exclude-standard"))
        tracked = _names(git_bytes(d, "ls-files", "-z"))
    except (GitError, OSError):
        return None
    holds_tracked = {"/".join(t.split("/")[:i]) for t in tracked
                     for i in range(1, t.count("/") + 1)}
    out = set(ignored)
    for rel in others:
        parts = rel.split("/")
        junk = next((i for i, part in enumerate(parts) if part in UNTRACKED_JUNK), None)
        if junk is None:
            continue
        folder = "/".join(parts[:junk + 1])
        out.add(rel if folder in holds_tracked or junk == len(parts) - 1 else folder + "/")
    return sorted(text_path(p) for p in out)


def git_toplevel(path: Path) -> Path:
    """The root of the repository holding ``path``."""
    p = Path(path)
    return Path(git(p if p.is_dir() else p.parent, "rev-parse", "--show-toplevel").strip())


def find_toplevel(path: Path) -> Path | None:
    """Like git_toplevel, but None outside a repository (or without git)."""
    try:
        return git_toplevel(path)
    except (GitError, OSError):
        return None


def rev(repo: Path, ref: str) -> str:
    return git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()


_PARENT_STEPS = re.compile(r"^(?P<start>.+?)(?P<steps>(?:~\d*|\^1?)+)$")


def empty_tree(repo: Path) -> str:
    """The id of the empty tree in this repository's hash (sha1 or sha256)."""
    return git(repo, "hash-object", "-t", "tree", os.devnull).strip()


def _past_root(repo: Path, ref: str) -> bool:
    """True when ``ref`` walks first parents (``X~N``, ``X^``) beyond a root commit: ``X``
    resolves, but it has fewer than N ancestors. Any other unresolvable ref is not."""
    m = _PARENT_STEPS.match(ref)
    if not m:
        return False
    steps = 0
    for tok in re.findall(r"~\d*|\^1?", m["steps"]):
        steps += int(tok[1:]) if tok.startswith("~") and tok[1:] else 1
    try:
        start = rev(repo, m["start"])
    except GitError:
        return False
    depth = int(git(repo, "rev-list", "--first-parent", "--count", start).strip())
    return steps >= depth  # depth counts start itself: N steps need N+1 commits


def resolve_base(repo: Path, base: str) -> str:
    """The commit ``base`` names, or the empty tree when it names the parent of a root commit
    (``--changed-since HEAD~1`` in a repository's first commit): then every file is new."""
    try:
        return rev(repo, base)
    except GitError as exc:
        if git(repo, "rev-parse", "--is-shallow-repository").strip() == "true":
            # The history is cut, not over: the empty tree would select every skill.
            raise GitError(f"{exc}\n(this clone is shallow: fetch the history, e.g. GitLab "
                           f"CI `GIT_DEPTH: 0` or `git fetch --unshallow`)") from exc
        if _past_root(repo, base):
            return empty_tree(repo)
        raise


@dataclass
class ChangeSet:
    """The skills a diff touched, and what was set aside, with why."""

    base: str
    head: str
    skills: list[Path] = field(default_factory=list)  # skill roots to evaluate, sorted
    deleted: list[str] = field(default_factory=list)  # skill folders removed by the change
    ignored: list[str] = field(default_factory=list)  # changed paths outside any skill
    from_empty_tree: bool = False  # base was before the first commit: everything is new

    def notes(self) -> list[str]:
        out = ["the base is before the repository's first commit: compared with the empty "
               "tree, so every file counts as changed"] if self.from_empty_tree else []
        out += [f"skipped deleted skill {d}" for d in self.deleted]
        if self.ignored:
            out.append(f"{len(self.ignored)} changed file(s) outside any skill ignored")
        return out


def _skill_root(repo: Path, rel: str) -> Path | None:
    """The skill ``rel`` (a path git names) belongs to in the working tree, as discovery finds
    it: the topmost folder on its way down from the repository root that holds SKILL.md, so a
    file deep in a skill (under its ``__pycache__``, its vendored ``site-packages``) is that
    skill's. None when the way passes a folder discovery skips before any skill (a dependency,
    a virtual environment, aeval's store), or a folder name that is not UTF-8."""
    parts = rel.split("/")
    for i in range(len(parts)):
        d = repo.joinpath(*parts[:i])
        if i and (skipped_folder(d) is not None or text_path(parts[i - 1]) != parts[i - 1]):
            return None
        try:
            if (d / SKILL_FILE).is_file():
                return d
        except OSError:
            return None
    return None


def _was_skill(repo: Path, base: str, rel: str) -> str | None:
    """The skill folder ``rel`` belonged to at ``base``, if any."""
    parts = Path(rel).parts
    for n in range(len(parts) - 1, -1, -1):
        folder = "/".join(parts[:n])
        spec = f"{base}:{folder + '/' if folder else ''}{SKILL_FILE}"
        if subprocess.run(["git", "-C", str(repo), "cat-file", "-e", spec],
                          capture_output=True).returncode == 0:
            return folder or "."
    return None


def changed_skills(repo: Path, base: str, head: str = "HEAD") -> ChangeSet:
    """Skills touched by ``git diff base...head`` (the merge-base form, as an MR shows it).

    A change anywhere under a skill maps to its root (nearest folder with SKILL.md); renamed
    files follow their new path; a skill whose SKILL.md is gone at head is reported deleted;
    changes outside skills are ignored. Skills are taken from the working tree, which must be
    at ``head``. A ``base`` before the first commit (``HEAD~1`` at a root commit) compares
    with the empty tree: every skill at ``head`` is changed.
    """
    repo = git_toplevel(Path(repo))
    b, h = resolve_base(repo, base), rev(repo, head)
    # From the empty tree (base before a root commit) a plain two-tree diff: there is no
    # merge base, and every file at head is added.
    from_empty = b == empty_tree(repo)
    span = [b, h] if from_empty else [f"{b}...{h}"]
    # bytes: a file name need not be UTF-8
    fields = [os.fsdecode(f) for f in
              git_bytes(repo, "diff", "--name-status", "-M", "-z", *span).split(b"\0")]
    changes = ChangeSet(base=b, head=h, from_empty_tree=from_empty)
    roots: set[Path] = set()
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status[0] in "RC":  # renamed or copied: follow the new path
            paths = [fields[i + 2]]
            i += 3
        else:
            paths = [fields[i + 1]]
            i += 2
        for rel in paths:
            root = _skill_root(repo, rel)
            if root is not None:
                roots.add(root)
                continue
            gone = _was_skill(repo, b, rel)
            if gone is not None:
                if text_path(gone) not in changes.deleted:
                    changes.deleted.append(text_path(gone))
            elif text_path(rel) not in changes.ignored:
                changes.ignored.append(text_path(rel))
    changes.deleted = sorted(d for d in changes.deleted if not (repo / d / SKILL_FILE).is_file())
    changes.skills = sorted(roots)
    return changes


_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def without_credentials(url: str) -> str:
    """``https://user:token@host/x.git`` as ``https://***@host/x.git``: a URL fit for a log."""
    return _USERINFO.sub("***@", url)


def _git_quiet(repo: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """git that never prompts for credentials (a CI or served process has no terminal)."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          errors="surrogateescape", env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _commit_of(repo: Path, ref: str) -> str | None:
    for candidate in (ref, f"origin/{ref}"):
        proc = _git_quiet(repo, "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}")
        if proc.returncode == 0:
            return proc.stdout.strip()
    return None


def clone_at(source: str, into: Path, head: str, base: str | None = None,
             mr_iid: int | None = None) -> tuple[str, str | None]:
    """Clone ``source`` (a git URL or a local repository) into the new folder ``into`` and
    check out ``head`` there, detached: a checkout of this run's own, whatever ``source``'s
    working tree holds. A ``head`` (or ``base``) the clone lacks is fetched from the source by
    name, then from GitLab's ``refs/merge-requests/<mr_iid>/head`` and ``.../merge`` (forks
    and merged-results pipelines name commits no branch holds). Returns the commits of head
    and base. Raises GitError with one line when either cannot be had."""
    shown = without_credentials(source)
    if "://" not in source and not source.startswith("git@"):
        local = Path(source).expanduser()
        if not local.is_dir():
            raise GitError(f"{shown}: no such folder")
        source = str(local.resolve())
    into.parent.mkdir(parents=True, exist_ok=True)
    proc = _git_quiet(into.parent, "clone", "--quiet", "--no-checkout", source, str(into))
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines() or ["git clone failed"]
        raise GitError(f"cannot clone {shown}: {without_credentials(lines[-1])}")
    wanted = {"head": head, **({"base": base} if base else {})}
    found: dict[str, str | None] = {k: _commit_of(into, ref) for k, ref in wanted.items()}
    if any(v is None for v in found.values()):
        refspecs = [ref for k, ref in wanted.items() if found[k] is None]
        if mr_iid is not None:
            refspecs += [f"+refs/merge-requests/{mr_iid}/head:refs/aeval/mr-head",
                         f"+refs/merge-requests/{mr_iid}/merge:refs/aeval/mr-merge"]
        for spec in refspecs:  # one at a time: a ref the server lacks must not stop the rest
            _git_quiet(into, "fetch", "--quiet", "origin", spec)
        found = {k: _commit_of(into, ref) for k, ref in wanted.items()}
    for k, ref in wanted.items():
        if found[k] is None:
            where = f" nor in refs/merge-requests/{mr_iid}/*" if mr_iid is not None else ""
            raise GitError(f"{k} {ref} is not in {shown} (fetched by name{where}): push it, "
                           "or pass a commit the repository has")
    proc = _git_quiet(into, "checkout", "--quiet", "--detach", found["head"] or head)
    if proc.returncode != 0:
        raise GitError(f"cannot check out {head} in a clone of {shown}: "
                       f"{proc.stderr.strip()[:300]}")
    return found["head"] or head, found.get("base")
def merge_base(repo: Path, base: str, head: str) -> str:
    """The commit an MR's diff starts from (``git diff base...head``); ``base`` itself when it
    is the empty tree or has no common ancestor with ``head``."""
    try:
        return git(repo, "merge-base", base, head).strip()
    except GitError:
        return base


def export_tree(repo: Path, commit: str, paths: list[str], dest: Path) -> list[str]:
    """Write the files of ``paths`` (folders from the repository root) as they are at
    ``commit`` under ``dest`` (never through a link, never outside it). Returns the paths
    that existed there; the others are left out."""
    import io
    import tarfile

    present = [p for p in paths if subprocess.run(
        ["git", "-C", str(repo), "cat-file", "-e", f"{commit}:{'' if p == '.' else p}"],
        capture_output=True).returncode == 0]
    if not present:
        return []
    proc = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit, "--",
                           *present], capture_output=True)
    if proc.returncode != 0:
        raise GitError(f"git archive {commit}: {proc.stderr.decode(errors='replace').strip()}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return present
