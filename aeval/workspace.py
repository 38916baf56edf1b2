"""The workspace of one attempt, the skill manifest, Δ (skill edits) and the outputs O.

    <attempt-root>/workspace/                 cwd of every command; outputs are found here
    <attempt-root>/workspace/<skills_subdir>/<name>/   the skill COPY ($SKILL_DIR)
    <attempt-root>/home/                      a private, empty HOME

The original skill folder is only ever read. Δ compares the copy against the manifest taken
right after the copy was made, and the diff text comes from the untouched original.
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

from aeval.redact import Redactor

IGNORED_NAMES = frozenset({"__pycache__", ".git", ".DS_Store"})
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


class OutputFile(BaseModel):
    """One file the run created or changed outside the skill copy (an output, O)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path relative to the workspace root.")
    size: int = Field(ge=0, description="Bytes.")
    sha256: str
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


def _describe(path: Path) -> str:
    """One manifest value: ``file <mode> <sha256>``, ``dir <mode>``, ``symlink <target>`` or
    ``other <mode>``. Never follows a symlink and never opens anything but a regular file
    (a planted FIFO must not hang aeval)."""
    st = path.lstat()
    mode = f"{stat.S_IMODE(st.st_mode):04o}"
    if stat.S_ISLNK(st.st_mode):
        return f"symlink {os.readlink(path)}"
    if stat.S_ISDIR(st.st_mode):
        return f"dir {mode}"
    if stat.S_ISREG(st.st_mode):
        return f"file {mode} {sha256_file(path)}"
    return f"other {mode}"


def _entries(root: Path) -> list[Path]:
    """Every entry under ``root`` (files, folders, symlinks, others), nothing ignored, symlinks
    not followed."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        out += [base / n for n in dirnames + filenames]
    return sorted(out)


def manifest(root: Path) -> dict[str, str]:
    """Type, mode, symlink target and content hash of every entry under ``root`` (nothing
    ignored: a planted ``__pycache__`` or ``.git`` is an entry like any other), by POSIX
    relative path. Values are `_describe` strings: equal values, equal entries."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): _describe(p) for p in _entries(root)}


def _text(path: Path, limit: int = 2_000_000) -> str | None:
    """The text of a regular file (never through a symlink; None for binary or huge files)."""
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
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


def diff_skill(original: Path, copy: Path, before: dict[str, str]) -> list[FileChange]:
    """Δ: what changed in the copy since the manifest ``before`` was taken: content, mode,
    type, symlink target, added and deleted entries (folders included)."""
    after = manifest(copy)
    changes = []
    for rel in sorted(set(before) | set(after)):
        if before.get(rel) == after.get(rel):
            continue
        old, new = _parse(before.get(rel)), _parse(after.get(rel))
        kind = "added" if rel not in before else "deleted" if rel not in after else "modified"
        diff, text_after = _git_lines(rel, old, new), None
        if "file" in (old[0], new[0]) and old[2] != new[2]:
            old_text = _text(original / rel) if old[0] == "file" else ""
            new_text = _text(copy / rel) if new[0] == "file" else ""
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

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """(size, mtime_ns) of every workspace file that could be an output."""
        snap = {}
        for p in _files(self.path):
            if any(p.is_relative_to(x) for x in self.excluded):
                continue
            st = p.stat()
            snap[p.relative_to(self.path).as_posix()] = (st.st_size, st.st_mtime_ns)
        return snap


def prepare_workspace(attempt_root: Path, skill_dir: Path, skill_name: str,
                      skills_subdir: str | None, case_files: list[str],
                      config_dirs: tuple[str, ...] = (), install_skill: bool = True
                      ) -> Workspace:
    """A fresh workspace: case files copied to the root, the skill copied where the runtime
    discovers skills (``.agents/skills`` when the runtime has no place of its own). Without
    ``install_skill``, the skill is not copied at all: its place is the empty `NO_SKILL_DIR`
    (case files still come from the skill folder: they are the case's, not the skill's)."""
    attempt_root = Path(attempt_root)
    if attempt_root.exists():
        shutil.rmtree(attempt_root)
    ws = attempt_root / "workspace"
    home = attempt_root / "home"
    ws.mkdir(parents=True)
    home.mkdir()
    for rel in case_files:
        src = skill_dir / rel
        dst = ws / rel.rstrip("/")
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    if install_skill:
        copy = ws / (skills_subdir or ".agents/skills") / skill_name
        shutil.copytree(skill_dir, copy, symlinks=True,
                        ignore=shutil.ignore_patterns(*IGNORED_NAMES))
    else:
        copy = ws / NO_SKILL_DIR
        copy.mkdir()
    excluded = [copy] + [ws / d for d in config_dirs]
    return Workspace(root=attempt_root, path=ws, home=home, skill_dir=copy,
                     original_skill=Path(skill_dir), skill_manifest=manifest(copy),
                     excluded=excluded)


def add_skills(ws: Workspace, skill_dirs: list[Path]) -> list[Path]:
    """Copy other skills beside the skill copy (distractors, `aeval triggers`), each under
    its folder name; they are not outputs. Returns their copies."""
    copies = []
    for src in skill_dirs:
        dst = ws.skill_dir.parent / Path(src).name
        if dst == ws.skill_dir or dst.exists():
            continue
        shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(*IGNORED_NAMES))
        ws.excluded.append(dst)
        copies.append(dst)
    return copies


def collect_outputs(ws: Workspace, before: dict[str, tuple[int, int]], dest: Path,
                    redactor: Redactor | None = None, max_file_bytes: int = 1_000_000,
                    max_total_bytes: int = 20_000_000) -> list[OutputFile]:
    """Copy every file created or changed outside the skill copy into ``dest`` (size-capped,
    secrets redacted). Returns one entry per output: path, size, sha256, copied."""
    after = ws.snapshot()
    out, total = [], 0
    for rel in sorted(after):
        if before.get(rel) == after[rel]:
            continue
        src = ws.path / rel
        size = after[rel][0]
        copied = size <= max_file_bytes and total + size <= max_total_bytes
        shown = shown_path(rel)
        if copied:
            target = dest / shown
            target.parent.mkdir(parents=True, exist_ok=True)
            data = src.read_bytes()
            target.write_bytes(redactor.bytes(data) if redactor else data)
            total += size
        out.append(OutputFile(path=shown, size=size, sha256=sha256_file(src), copied=copied))
    return out
