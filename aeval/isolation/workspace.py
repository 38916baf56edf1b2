"""The workspace of one attempt, the skill manifest, Δ (skill edits) and the outputs O.

    <attempt-root>/workspace/                 cwd of every command; outputs are found here
    <attempt-root>/workspace/<skills_subdir>/<name>/   the skill COPY ($SKILL_DIR)
    <attempt-root>/home/                      a private, empty HOME

The original skill folder is only ever read. Δ compares the copy against the manifest taken
right after the copy was made, and the diff text comes from the untouched original.

Everything read from the attempt goes through `aeval.isolation.tree` (no symlink followed below the
attempt root, bounded walks and hashing). Outputs are bounded too: at most `MAX_OUTPUTS`
listed, each copied up to a size cap, what was left out said in `OutputsCut`. File names
that hold a declared secret are redacted like contents (on disk under ``outputs/`` and in
every path an artifact shows).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from aeval.errors import ContractError, Problem
from aeval.isolation.copying import copy_entry, skill_copy_rule
from aeval.isolation.redact import Redactor
from aeval.isolation.tree import (
    MAX_ENTRIES,
    HashBudget,
    Identity,
    Tree,
    open_file,
    open_folder,
    read_path,
    sha256_fd,
    tree,
    walk,
)

IGNORED_NAMES = frozenset({"__pycache__", ".git", ".DS_Store"})
MAX_OUTPUTS = 1000  # output files listed (and copied, within the byte caps) per attempt
# Without the skill (uplift's other arm), $SKILL_DIR is this empty folder of the workspace:
# nowhere a runtime discovers skills, and not named after the skill.
NO_SKILL_DIR = ".aeval-no-skill"


class FileChange(BaseModel):
    """One entry of the skill copy added, modified or deleted during execution."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path relative to the skill root.")
    change: str = Field(description="added | modified | deleted")
    diff: str = Field("", description="Unified diff, original -> after execution (text files); "
                                      "git-style mode and symlink lines for those changes.")
    after: str | None = Field(None, description="Full text after execution (text files).")
    detail: str = Field("", description="What changed, readable: 'content', 'mode 0644 -> "
                                        "0755', 'symlink -> ../../x (was y)', 'file -> "
                                        "symlink', 'added directory' ...")
    kind: str = Field("file", description="Type of the entry after the change (before it, for "
                                          "a deletion): file | dir | symlink | other.")
    at_s: float | None = Field(None, description="Seconds after the run started when the "
                                                 "watch first saw it change (also for an "
                                                 "edit later reverted); None: not seen.")


def shown_path(rel: str) -> str:
    """A path as artifacts show it: a file name that is not UTF-8 (the OS hands it over with
    surrogate escapes, which no JSON can hold) has its odd bytes written as ``\\xff``."""
    try:
        rel.encode("utf-8")
        return rel
    except UnicodeEncodeError:
        return os.fsencode(rel).decode("utf-8", "backslashreplace")


def restored_changes(baseline: dict[str, str], final: dict[str, str],
                     touches: list[tuple[str, str, float]]) -> list[FileChange]:
    """Entries the watch saw changed during the run that Δ does not show: they were put back.
    ``touches``: (path, what, seconds after the run started) in the order seen; only entries
    of the shipped copy (not folders) count."""
    seen: dict[str, list[tuple[str, float]]] = {}
    for path, what, at in touches:
        was = baseline.get(path)
        if was is None or was.startswith("dir ") or baseline.get(path) != final.get(path):
            continue  # not a shipped entry, a folder, or already in Δ
        seen.setdefault(path, []).append((what, at))
    return [FileChange(path=p, change="modified", kind=baseline[p].split(" ", 1)[0],
                       detail="modified and restored: " + ", ".join(
                           dict.fromkeys(w for w, _ in ev)) + " while the runtime ran",
                       at_s=round(ev[0][1], 3))
            for p, ev in sorted(seen.items(), key=lambda kv: kv[1][0][1])]


def _moved(what: str, at: float) -> FileChange:
    return FileChange(path=".", change="modified", kind="dir", at_s=round(at, 3),
                      detail=f"the skill folder or a folder above it was {what} while the "
                             "runtime ran (Δ is taken at its path)")


def path_changes(touches: list[tuple[str, str, float]]) -> list[FileChange]:
    """The watch's ``path`` touches (the skill copy, or a folder between the attempt root and
    it, renamed, moved or removed): one change, at the first."""
    seen = [(what, at) for path, what, at in touches if path == "."]
    return [_moved(seen[0][0], seen[0][1])] if seen else []


def incomplete_walks(before: Tree, after: Tree) -> list[FileChange]:
    """One change when a walk of the copy (after install, or after the run) stopped at a
    bound (`aeval.isolation.tree.MAX_ENTRIES`, `MAX_DEPTH`) or could not open it: what it did not
    see, Δ cannot vouch for, so the structural assertion must not pass. Files only described by
    size past the hashing bound are not a cut: their identity still shows a write."""
    cuts = [f"{when}: {c}" for when, t in (("after install", before), ("after the run", after))
            for c in t.cut if not c.startswith("hashing:")]
    if not cuts:
        return []
    return [FileChange(path=".", change="modified", kind="dir",
                       detail="the walk of the skill copy could not finish (" + "; ".join(
                           dict.fromkeys(cuts)) + "): Δ cannot vouch for what it did not see")]


def rewritten_changes(before: Tree, after: Tree, wall_start: float) -> list[FileChange]:
    """Entries whose manifest value is what it was, but whose identity is not
    (`aeval.isolation.tree`): a file rewritten, re-linked or chmod-ed and put back, a file or folder
    replaced by an equal copy, a folder renamed away and back. Seen by ctime and inode, so also in
    folders the watch did not cover. A folder whose entries changed (its mtime moved with its ctime)
    is not itself a change: what was added or removed in it shows as its own entry."""
    out = []

    def judge(rel: str, kind: str, old: Identity, new: Identity) -> None:
        (ino0, c0, m0), (ino1, c1, m1) = old, new
        if ino0 != ino1:
            what = "replaced by an equal copy (a new inode in its place)"
        elif c0 != c1 and (kind != "dir" or m0 == m1):
            what = ("renamed, moved or its attributes changed, and put back" if kind == "dir"
                    else "rewritten, re-linked or its attributes changed, and put back")
        else:
            return
        out.append(FileChange(path=shown_path(rel), change="modified", kind=kind,
                              detail=f"{what} while the runtime ran",
                              at_s=round(max(c1 / 1e9 - wall_start, 0.0), 3)))

    if before.root_id is not None and after.root_id is not None:
        judge(".", "dir", before.root_id, after.root_id)
    for rel, value in before.entries.items():
        if after.entries.get(rel) == value and rel in before.ids and rel in after.ids:
            judge(rel, value.split(" ", 1)[0], before.ids[rel], after.ids[rel])
    return out


class OutputsCut(BaseModel):
    """What the output bounds left out of one attempt's outputs (all zero: nothing)."""

    model_config = ConfigDict(extra="forbid")

    not_listed: int = Field(0, description="Changed files past the first MAX_OUTPUTS: "
                                           "neither listed nor copied.")
    not_copied: int = Field(0, description="Listed files not copied (over the per-file or "
                                           "total byte cap).")
    unhashed: int = Field(0, description="Listed files whose sha256 was not computed (over "
                                         "the hashing bound): their `sha256` is empty.")
    walk: list[str] = Field(default_factory=list,
                            description="Where the walk of the workspace stopped, if it did.")

    def lines(self) -> list[str]:
        """One readable line per bound that cut something."""
        out = [f"outputs: {self.not_listed} changed file(s) past the first {MAX_OUTPUTS} "
               "not listed"] if self.not_listed else []
        if self.not_copied:
            out.append(f"outputs: {self.not_copied} file(s) over the size cap not copied")
        if self.unhashed:
            out.append(f"outputs: {self.unhashed} file(s) over the hashing bound not hashed")
        return out + [f"workspace walk: {w}" for w in self.walk]


class OutputFile(BaseModel):
    """One file the run created or changed outside the skill copy (an output, O)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path relative to the workspace root.")
    size: int = Field(ge=0, description="Bytes (apparent size: a sparse file counts whole).")
    sha256: str = Field(description="Of the content; empty when over the hashing bound.")
    copied: bool = Field(description="Copied into the case's outputs/ (False: over the size cap).")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def _files(root: Path) -> list[Path]:
    """Regular files under ``root`` (ignored names and symlinks skipped): for outputs and the
    text walkers. The skill manifest uses `_entries`, which skips nothing."""
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if any(part in IGNORED_NAMES for part in rel.parts):
            continue
        if p.is_file() and not p.is_symlink():
            out.append(p)
    return out


def text_files(root: Path) -> list[tuple[Path, str]]:
    """(path, text) of every UTF-8 text file under ``root``, sorted; others are skipped."""
    out = []
    for p in _files(Path(root)):
        try:
            out.append((p, p.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return out


def manifest(root: Path, trusted: Path | None = None) -> dict[str, str]:
    """Type, mode, symlink target and content hash of every entry under ``root`` (nothing
    ignored: a planted ``__pycache__`` or ``.git`` is an entry like any other), by POSIX
    relative path, never through a symlink (``trusted``: the folder above which ``root``'s
    path is aeval's own, see `aeval.isolation.tree.open_folder`). Equal values, equal entries."""
    return tree(root, trusted).entries


def _text(path: Path, trusted: Path | None = None, limit: int = 2_000_000) -> str | None:
    """The text of a regular file (never through a symlink; None for binary or huge files)."""
    data = read_path(path, trusted or Path(path).parent, limit)
    if data is None or len(data) > limit or b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _parse(value: str | None) -> tuple[str, str, str]:
    """(kind, mode or target, sha256) of a manifest value; a bare hash is an old-style file."""
    if value is None:
        return "", "", ""
    kind, _, rest = value.partition(" ")
    if kind == "symlink":
        return kind, rest, ""
    if kind in ("file", "dir", "other"):
        mode, _, digest = rest.partition(" ")
        return kind, mode, digest
    return "file", "", value


def _detail(old: tuple[str, str, str], new: tuple[str, str, str]) -> str:
    (k0, m0, h0), (k1, m1, h1) = old, new
    if not k0:
        return f"added {k1}" + (f" -> {m1}" if k1 == "symlink" else "")
    if not k1:
        return f"deleted {k0}"
    if k0 != k1:
        return f"{k0} -> {k1}" + (f" ({m1})" if k1 == "symlink" else "")
    if k0 == "symlink":
        return f"symlink -> {m1} (was {m0})"
    parts = []
    if h0 != h1:
        parts.append("content")
    if m0 and m1 and m0 != m1:
        parts.append(f"mode {m0} -> {m1}")
    return ", ".join(parts) or "modified"


def _git_lines(rel: str, old: tuple[str, str, str], new: tuple[str, str, str]) -> str:
    """git-style lines for what a unified text diff cannot show: modes and symlink targets."""
    (k0, m0, _), (k1, m1, _) = old, new
    out = []
    if k0 == k1 == "file" and m0 and m1 and m0 != m1:
        out += [f"diff --git a/{rel} b/{rel}", f"old mode 10{m0}", f"new mode 10{m1}"]
    if "symlink" in (k0, k1):
        out += [f"diff --git a/{rel} b/{rel}", f"--- a/{rel}", f"+++ b/{rel}"]
        out += [f"-{'symlink -> ' + m0 if k0 == 'symlink' else k0 or '(absent)'}",
                f"+{'symlink -> ' + m1 if k1 == 'symlink' else k1 or '(absent)'}"]
    return "".join(line + "\n" for line in out)


def diff_skill(original: Path, copy: Path, before: dict[str, str],
               after: dict[str, str] | None = None, trusted: Path | None = None
               ) -> list[FileChange]:
    """Δ: what changed in the copy since the manifest ``before`` was taken: content, mode,
    type, symlink target, added and deleted entries (folders included). ``after``: the
    manifest now (taken here when not given); ``trusted``: see `manifest`."""
    after = manifest(copy, trusted) if after is None else after
    changes = []
    for rel in sorted(set(before) | set(after)):
        if before.get(rel) == after.get(rel):
            continue
        old, new = _parse(before.get(rel)), _parse(after.get(rel))
        kind = "added" if rel not in before else "deleted" if rel not in after else "modified"
        diff, text_after = _git_lines(rel, old, new), None
        if "file" in (old[0], new[0]) and old[2] != new[2]:
            old_text = _text(original / rel, original) if old[0] == "file" else ""
            new_text = _text(copy / rel, trusted or copy) if new[0] == "file" else ""
            if old_text is not None and new_text is not None:
                diff += "".join(difflib.unified_diff(
                    old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                    fromfile=f"a/{rel}", tofile=f"b/{rel}"))
            text_after = new_text if new[0] == "file" else None
        changes.append(FileChange(path=shown_path(rel), change=kind, diff=diff, after=text_after,
                                  detail=_detail(old, new), kind=new[0] or old[0]))
    return changes


def render_diff(changes: list[FileChange]) -> str:
    """skill.diff: every change as one patch (binary files and other entries named)."""
    parts = []
    for c in changes:
        parts.append(c.diff if c.diff else f"{c.kind} {c.change}: {c.path} ({c.detail})\n")
    return "".join(p if p.endswith("\n") else p + "\n" for p in parts)


@dataclass
class Workspace:
    root: Path  # the attempt root
    path: Path  # the workspace (cwd)
    home: Path
    skill_dir: Path  # the skill copy
    original_skill: Path
    skill_manifest: dict[str, str]
    excluded: list[Path] = field(default_factory=list)  # not outputs: skill copy, config dirs

    walk_cut: list[str] = field(default_factory=list)  # what the last snapshot's bound cut

    def _skipped(self) -> frozenset[str]:
        return frozenset(x.relative_to(self.path).as_posix() for x in self.excluded
                         if x.is_relative_to(self.path))

    def snapshot(self) -> dict[str, tuple[int, int, int, int]]:
        """(size, mtime_ns, ctime_ns, inode) of every workspace file that could be an output:
        regular files outside the skill copy and config folders, never through a symlink
        (the workspace swapped for a symlink has no outputs), at most `MAX_ENTRIES` entries
        looked at (``walk_cut`` says when the walk stopped)."""
        self.walk_cut = []
        try:
            fd = open_folder(self.path, self.root)
        except OSError as exc:
            self.walk_cut.append(f"the workspace could not be opened: {exc.strerror or exc}")
            return {}
        snap = {}
        skip = self._skipped()
        try:
            for rel, _, name, st in walk(fd, limit=MAX_ENTRIES, skip=skip,
                                         skip_names=IGNORED_NAMES, cut=self.walk_cut):
                if not stat.S_ISREG(st.st_mode) or name in IGNORED_NAMES:
                    continue
                snap[rel] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        finally:
            os.close(fd)
        return snap

    def tree(self) -> Tree:
        """The skill copy's manifest and identities, read beneath the attempt root."""
        return tree(self.skill_dir, self.root)


def prepare_workspace(attempt_root: Path, skill_dir: Path, skill_name: str,
                      skills_subdir: str | None, case_files: list[str],
                      config_dirs: tuple[str, ...] = (), install_skill: bool = True,
                      left_out: list[str] | None = None,
                      withheld: tuple[str, ...] = ()) -> Workspace:
    """A fresh workspace: case files copied to the root, the skill copied where the runtime
    discovers skills (``.agents/skills`` when the runtime has no place of its own). Without
    ``install_skill``, the skill is not copied at all: its place is the empty `NO_SKILL_DIR`
    (case files still come from the skill folder: they are the case's, not the skill's).
    ``left_out``: what the skill copy leaves out (`aeval.skill.skill_md.Skill.left_out`);
    ``withheld``: what it leaves out whatever git says (the case's contract: an agent that
    could read the assertions and the expected outcome could write them instead of running
    the skill)."""
    attempt_root = Path(attempt_root)
    if attempt_root.exists():
        shutil.rmtree(attempt_root)
    ws = attempt_root / "workspace"
    home = attempt_root / "home"
    ws.mkdir(parents=True)
    home.mkdir()
    for rel in case_files:  # the contract stays out of them too (`files: ["."]`)
        dest = ws / rel.rstrip("/")
        _copied(copy_entry(skill_dir, rel, dest, attempt_root,
                           depth=len(dest.relative_to(ws).parts),
                           left_out=frozenset(withheld)), skill_dir, f"files ({rel})")
    if install_skill:
        copy = ws / (skills_subdir or ".agents/skills") / skill_name
        _copied(copy_entry(skill_dir, ".", copy, attempt_root,
                           **skill_copy_rule(left_out, withheld)), skill_dir, "")
    else:
        copy = ws / NO_SKILL_DIR
        copy.mkdir()
    excluded = [copy] + [ws / d for d in config_dirs]
    return Workspace(root=attempt_root, path=ws, home=home, skill_dir=copy,
                     original_skill=Path(skill_dir), skill_manifest=manifest(copy),
                     excluded=excluded)


def _copied(problems: list[tuple[str, str]], skill: Path, what: str) -> None:
    """Raise the problems of a copy (examine refuses the same skills before anything runs:
    here they mean the skill changed since)."""
    if problems:
        raise ContractError([Problem(str(skill), what, f"{rel!r} {why}") for rel, why in problems])


def add_skills(ws: Workspace, skill_dirs: list[Path]) -> list[Path]:
    """Copy other skills beside the skill copy (distractors, `aeval trigger-accuracy`), each under
    its folder name; they are not outputs. Returns their copies."""
    copies = []
    for src in skill_dirs:
        dst = ws.skill_dir.parent / Path(src).name
        if dst == ws.skill_dir or dst.exists():
            continue
        # outside the run's skills, nothing is known to be tracked: the copy and the
        # fingerprint (`aeval.run.fingerprint.folder_digest`) leave out the same names
        _copied(copy_entry(Path(src), ".", dst, ws.root, **skill_copy_rule(None)), Path(src),
                "")
        ws.excluded.append(dst)
        copies.append(dst)
    return copies


def _unique(path: str, taken: set[str]) -> str:
    """``path``, or ``path~2``, ``path~3``... when two outputs redact to one name."""
    out, n = path, 1
    while out in taken:
        n += 1
        out = f"{path}~{n}"
    taken.add(out)
    return out


def collect_outputs(ws: Workspace, before: dict[str, tuple[int, int, int, int]], dest: Path,
                    redactor: Redactor | None = None, max_file_bytes: int = 1_000_000,
                    max_total_bytes: int = 20_000_000, cut: OutputsCut | None = None,
                    budget: HashBudget | None = None) -> list[OutputFile]:
    """Copy every file created or changed outside the skill copy into ``dest`` (size-capped,
    secrets redacted in contents and names). Returns one entry per output (path as shown and
    stored, size, sha256, copied): at most `MAX_OUTPUTS`, the rest counted in ``cut``. Files
    are read beneath the attempt root, never through a symlink."""
    redactor = redactor or Redactor()
    cut = cut if cut is not None else OutputsCut()
    budget = budget or HashBudget(total_bytes=1 << 30, seconds=20.0)
    after = ws.snapshot()
    cut.walk = list(ws.walk_cut)
    changed = [rel for rel in sorted(after) if before.get(rel) != after[rel]]
    cut.not_listed = max(len(changed) - MAX_OUTPUTS, 0)
    out, total, taken = [], 0, set()
    try:
        top = open_folder(ws.path, ws.root)
    except OSError:
        return []
    try:
        for rel in changed[:MAX_OUTPUTS]:
            size = after[rel][0]
            shown = _unique(redactor.text(shown_path(rel)), taken)
            copied = size <= max_file_bytes and total + size <= max_total_bytes
            digest = ""
            fd = _open_beneath(top, rel)
            if fd is None:
                continue  # gone, or no longer a regular file: nothing to show
            with os.fdopen(fd, "rb") as fh:
                if copied:
                    data = fh.read(max_file_bytes + 1)
                    copied = len(data) <= max_file_bytes
                    if copied:
                        digest = hashlib.sha256(data).hexdigest()
                        target = dest / shown
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(redactor.bytes(data))
                        total += len(data)
                    fh.seek(0)
                if not digest and budget.allows(size):
                    digest = sha256_fd(fh.fileno(), budget.file_bytes)
            cut.not_copied += not copied
            cut.unhashed += not digest
            out.append(OutputFile(path=shown, size=size, sha256=digest, copied=copied))
    finally:
        os.close(top)
    return out


def _open_beneath(top: int, rel: str) -> int | None:
    """A read descriptor of the regular file ``rel`` under the folder ``top``, every folder
    on the way opened without following a symlink."""
    *dirs, name = rel.split("/")
    fd = os.dup(top)
    try:
        for d in dirs:
            nxt = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                          dir_fd=fd)
            os.close(fd)
            fd = nxt
        return open_file(fd, name)
    except OSError:
        return None
    finally:
        os.close(fd)
