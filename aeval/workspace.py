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
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from aeval.redact import Redactor

IGNORED_NAMES = frozenset({"__pycache__", ".git", ".DS_Store"})


class FileChange(BaseModel):
    """One skill file added, modified or deleted during execution."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="Path relative to the skill root.")
    change: str = Field(description="added | modified | deleted")
    diff: str = Field("", description="Unified diff, original -> after execution (text files).")
    after: str | None = Field(None, description="Full text after execution (text files).")


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


def manifest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``, by POSIX relative path."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in _files(root)}


def _text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def diff_skill(original: Path, copy: Path, before: dict[str, str]) -> list[FileChange]:
    """Δ: what changed in the copy since the manifest ``before`` was taken."""
    after = manifest(copy)
    changes = []
    for rel in sorted(set(before) | set(after)):
        if rel in before and rel in after and before[rel] == after[rel]:
            continue
        kind = "added" if rel not in before else "deleted" if rel not in after else "modified"
        old = _text(original / rel) if kind != "added" else ""
        new = _text(copy / rel) if kind != "deleted" else ""
        diff = ""
        if old is not None and new is not None:
            diff = "".join(difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True),
                fromfile=f"a/{rel}", tofile=f"b/{rel}"))
        changes.append(FileChange(path=rel, change=kind, diff=diff,
                                  after=new if kind != "deleted" else None))
    return changes


def render_diff(changes: list[FileChange]) -> str:
    """skill.diff: every change as one patch (binary files named)."""
    parts = []
    for c in changes:
        parts.append(c.diff if c.diff else f"Binary or unreadable file {c.change}: {c.path}\n")
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
                      config_dirs: tuple[str, ...] = ()) -> Workspace:
    """A fresh workspace: case files copied to the root, the skill copied where the runtime
    discovers skills (``.agents/skills`` when the runtime has no place of its own)."""
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
    copy = ws / (skills_subdir or ".agents/skills") / skill_name
    shutil.copytree(skill_dir, copy, symlinks=True,
                    ignore=shutil.ignore_patterns(*IGNORED_NAMES))
    excluded = [copy] + [ws / d for d in config_dirs]
    return Workspace(root=attempt_root, path=ws, home=home, skill_dir=copy,
                     original_skill=Path(skill_dir), skill_manifest=manifest(copy),
                     excluded=excluded)


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
        if copied:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = src.read_bytes()
            target.write_bytes(redactor.bytes(data) if redactor else data)
            total += size
        out.append(OutputFile(path=rel, size=size, sha256=sha256_file(src), copied=copied))
    return out
