"""git: the repository root and which skills a change touched."""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from aeval.skill.skill_md import SKILL_FILE, skipped_folder


class GitError(RuntimeError):
    """git failed (not a repository, unknown ref ...). The message is git's own."""


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


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
    """Nearest folder at or above ``rel`` (in the working tree) that holds SKILL.md; None
    inside a folder discovery skips (a dependency, a virtual environment, aeval's store)."""
    p = repo / rel
    if any(skipped_folder(repo.joinpath(*Path(rel).parts[:i + 1]))
           for i in range(len(Path(rel).parts) - 1)):
        return None
    for d in [p if p.is_dir() else p.parent, *p.parents]:
        if not d.is_relative_to(repo):
            break
        if (d / SKILL_FILE).is_file():
            return d
        if d == repo:
            break
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
    out = git(repo, "diff", "--name-status", "-M", "-z", *span)
    fields = out.split("\0")
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
                if gone not in changes.deleted:
                    changes.deleted.append(gone)
            elif rel not in changes.ignored:
                changes.ignored.append(rel)
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
                          env=env, timeout=timeout, stdin=subprocess.DEVNULL)


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
