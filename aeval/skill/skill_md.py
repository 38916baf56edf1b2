"""SKILL.md: frontmatter parsing and the Agent Skills lint rules.

A skill is `invalid` only when it cannot be loaded at all (no SKILL.md, no parseable
frontmatter, no name or description). The letter of the Agent Skills spec (name format and
length, description length, name equal to the folder, known keys) gives lint *warnings*:
real skills bend it, and aeval must still test them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from aeval.errors import ContractError, Problem, yaml_error_text
from aeval.skill import markdown
from aeval.skill.markdown import Fence
from aeval.skill.safe_data import UnsafeData, load_yaml

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
NAME_MAX = 64
# 1 MiB: the largest SKILL.md files of public marketplaces are tens of KB (the Agent Skills
# guidance asks for under 500 lines, since an agent loads it whole); a larger file is refused
# (`invalid`), not cut, so no check ever runs on half a document.
SKILL_MD_MAX_BYTES = 1 << 20
DESCRIPTION_MAX = 1024
KNOWN_KEYS = frozenset(
    {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}
)
_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class Skill(BaseModel):
    """A loaded skill: where it is and what its SKILL.md says."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The frontmatter `name` (the skill's identity in every report).")
    description: str = Field(description="The frontmatter `description`.")
    path: Path = Field(description="The skill root: the folder holding SKILL.md.")
    body: str = Field(description="SKILL.md after the frontmatter.")
    body_offset: int = Field(
        description="Number of SKILL.md lines before the body (to map body lines to file lines)."
    )
    warnings: list[str] = Field(
        default_factory=list, description="Agent Skills lint warnings, `path:field: problem`."
    )
    left_out: list[str] | None = Field(
        None, description="What the skill's copy (and its fingerprint) leaves out, relative to "
                          "the skill root, a folder with a trailing '/': the untracked entries "
                          "git's ignore rules exclude, and untracked caches and installs "
                          "(`aeval.isolation.copying.UNTRACKED_JUNK`). Every tracked file "
                          "counts. None: not in a git work tree (the copy leaves out entries "
                          "named in UNTRACKED_JUNK).")

    @property
    def skill_md(self) -> Path:
        return self.path / SKILL_FILE

    def fences(self) -> list[Fence]:
        """Every fenced block of the body (indented ones in list items too), with its
        SKILL.md line."""
        return markdown.parse(self.body, self.body_offset)[0]

    def prose(self) -> str:
        """The body without its fenced blocks: what SKILL.md says in words."""
        return "\n".join(text for _, text in markdown.parse(self.body, self.body_offset)[1])

    def shell_blocks(self) -> list[tuple[int, str]]:
        """Fenced bash/sh/shell/zsh blocks of the body, with the SKILL.md line each starts
        on (the line of the opening fence)."""
        return [(f.line, f.code.strip()) for f in self.fences() if f.shell and f.code.strip()]


def _read_skill_md(skill_dir: Path, skill_md: Path, where: str) -> str:
    """SKILL.md's text, read only when it is the skill's own: a link may point to another
    file of the skill, never out of it (aeval often runs as root: a SKILL.md linked to
    ``/proc/self/environ`` or another team's file would be read with aeval's rights, before
    the copy check refuses the link). At most `SKILL_MD_MAX_BYTES` are read, whatever the
    size the file claims (a /proc file says 0)."""
    try:
        real, home = skill_md.resolve(strict=True), skill_dir.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ContractError([Problem(where, "", f"cannot be read: {exc}")]) from None
    if not real.is_relative_to(home):
        raise ContractError([Problem(where, "", f"is a symlink to {os.readlink(skill_md)}, "
                                                "outside the skill folder: not read (a skill "
                                                "is copied alone)")])
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            size, chunks, got = os.fstat(fd).st_size, [], 0
            while size <= SKILL_MD_MAX_BYTES and got <= SKILL_MD_MAX_BYTES:
                chunk = os.read(fd, min(1 << 16, SKILL_MD_MAX_BYTES + 1 - got))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
        finally:
            os.close(fd)
        if size > SKILL_MD_MAX_BYTES or got > SKILL_MD_MAX_BYTES:
            said = f"{size:,} bytes" if size > SKILL_MD_MAX_BYTES else \
                f"over {SKILL_MD_MAX_BYTES:,} bytes read"
            raise ContractError([Problem(where, "", f"{said}, larger than the "
                                                    f"{SKILL_MD_MAX_BYTES:,}-byte (1 MiB) "
                                                    "limit for SKILL.md")])
        return b"".join(chunks).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError([Problem(where, "", f"cannot be read: {exc}")]) from exc


def load_skill(skill_dir: Path) -> Skill:
    """Parse ``skill_dir/SKILL.md``. Raises ContractError naming every problem found."""
    skill_dir = Path(skill_dir)
    skill_md = skill_dir / SKILL_FILE
    where = str(skill_md)
    if not skill_md.is_file():
        raise ContractError([Problem(str(skill_dir), "", f"no {SKILL_FILE} in this folder")])
    text = _read_skill_md(skill_dir, skill_md, where)
    m = _FRONTMATTER_RE.match(text)
    if not m:
        raise ContractError(
            [Problem(where, "frontmatter", "missing: SKILL.md must start with a '---' YAML block")]
        )
    try:
        front = load_yaml(m.group(1), line_offset=1) or {}
    except UnsafeData as exc:
        field = f"frontmatter.{exc.field}" if exc.field else "frontmatter"
        raise ContractError([Problem(where, field, exc.message)]) from None
    except yaml.YAMLError as exc:
        raise ContractError([Problem(where, "frontmatter", "not valid YAML: "
                                     + yaml_error_text(exc, line_offset=1))]) from None
    if not isinstance(front, dict):
        raise ContractError([Problem(where, "frontmatter", "must be a YAML mapping")])

    problems = []
    for key in ("name", "description"):
        value = front.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(where, key, "required, must be a non-empty string"))
    if not problems:
        unsafe = unsafe_name(front["name"].strip())
        if unsafe:
            problems.append(Problem(where, "name", unsafe))
    if problems:
        raise ContractError(problems)

    name, description = front["name"].strip(), " ".join(front["description"].split())
    warnings = [str(w) for w in lint_frontmatter(where, front, skill_dir.name)]
    body = text[m.end():]
    return Skill(
        name=name,
        description=description,
        path=skill_dir.resolve(),
        body=body,
        body_offset=text[: m.end()].count("\n"),
        warnings=warnings,
    )


def unsafe_name(name: str) -> str | None:
    """Why ``name`` cannot be a path segment of the run store (None when it can).

    The name names folders of every report; ``..``, an absolute path or a ``/`` would place
    files outside the run store, and a NUL or control character breaks every file API.
    """
    if name in {".", ".."}:
        return f"{name!r} is not a usable name (it names a folder above or at the run store)"
    if "/" in name or "\\" in name:
        return f"{name!r} contains a path separator; a name must be one path segment"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return f"{name!r} contains a NUL or control character"
    if len(name.encode("utf-8", "surrogatepass")) > 255:
        return "longer than 255 bytes, too long for a folder name"
    return None


def lint_frontmatter(where: str, front: dict, folder: str) -> list[Problem]:
    """The Agent Skills rules, as warnings."""
    out = []
    name = str(front.get("name", "")).strip()
    if not NAME_RE.match(name):
        out.append(Problem(where, "name", f"{name!r} should be lowercase letters, digits and "
                                          "single hyphens"))
    if len(name) > NAME_MAX:
        out.append(Problem(where, "name", f"{len(name)} characters, at most {NAME_MAX}"))
    if name != folder:
        out.append(Problem(where, "name", f"{name!r} differs from the folder name {folder!r}"))
    desc = str(front.get("description", ""))
    if len(desc) > DESCRIPTION_MAX:
        out.append(Problem(where, "description", f"{len(desc)} characters, at most "
                                                 f"{DESCRIPTION_MAX}"))
    for key in sorted(set(front) - KNOWN_KEYS):
        out.append(Problem(where, key, "unknown frontmatter key"))
    return out


MAX_WALK_DEPTH = 16
# Folders discovery never searches, the same for validate, run, sweep and --changed-since:
# version control, dependencies, virtual environments, caches, aeval's own store. Every other
# folder is searched, dot-folders included (`.curated`, `.system`, `.claude/skills`, ...).
SKIPPED_FOLDERS = frozenset({
    ".git", ".hg", ".svn", ".jj", ".bzr",  # version control
    "node_modules", "bower_components", ".pnpm-store", "site-packages", ".eggs",  # dependencies
    ".venv", "venv", ".virtualenv", ".tox", ".nox", ".conda",  # virtual environments
    "__pycache__", ".cache", ".mypy_cache", ".pytest_cache", ".ruff_cache",  # caches
    ".ipynb_checkpoints", ".gradle", ".terraform",
    ".aeval",  # aeval's run store (and the per-name contracts, which are not skills)
})


def skipped_folder(folder: Path) -> str | None:
    """Why discovery does not search ``folder`` (None: it does): a named folder, or a
    virtual environment under any name (it holds a ``pyvenv.cfg``)."""
    if folder.name in SKIPPED_FOLDERS or folder.name.endswith(".egg-info"):
        return folder.name
    try:
        if (folder / "pyvenv.cfg").is_file():
            return f"{folder.name} (a virtual environment)"
    except OSError:
        return None
    return None


@dataclass
class Discovery:
    """Skill roots found under a path, and what was passed over (one warning line each)."""

    roots: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # folders not searched, by rule

    def nothing_found(self, path: Path) -> str:
        """The one line that says nothing was found, and where aeval did not look."""
        shown = sorted(set(self.skipped))
        where = (f" (not searched: {', '.join(shown[:8])}"
                 f"{f' and {len(shown) - 8} more' if len(shown) > 8 else ''})") if shown else ""
        return f"{path}: no {SKILL_FILE} found{where}"


def _utf8_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
        return False
    return True


def scan_skill_roots(path: Path) -> Discovery:
    """Skill roots at or under ``path`` (folders holding SKILL.md), sorted; never raises.

    Every folder is searched, dot-folders included (``skills/.curated``, ``.claude/skills``),
    but the `SKIPPED_FOLDERS` and virtual environments; a skill's own sub-folders are not
    searched for nested skills. Symlinked folders are followed at most
    once each (by device and inode), so a link to an ancestor or to itself cannot loop; the
    walk stops at ``MAX_WALK_DEPTH``. A folder whose name is not UTF-8 cannot name a report,
    so it is passed over with a warning instead of failing the whole run.
    """
    path = Path(path)
    found = Discovery()
    seen: set[tuple[int, int]] = set()

    def is_skill(d: Path) -> bool:
        try:
            return (d / SKILL_FILE).is_file()
        except OSError:
            return False

    def walk(d: Path, depth: int) -> None:
        try:
            st = d.stat()
        except OSError:
            return
        if (st.st_dev, st.st_ino) in seen:
            return
        seen.add((st.st_dev, st.st_ino))
        if depth > MAX_WALK_DEPTH:
            found.warnings.append(f"{d}: deeper than {MAX_WALK_DEPTH} folders, not searched")
            return
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            found.warnings.append(f"{d}: cannot be listed: {exc.strerror or exc}")
            return
        for e in entries:
            try:
                if not e.is_dir():  # follows symlinks; a looping link is not a dir
                    continue
            except OSError:
                continue
            child = Path(e.path)
            why = skipped_folder(child)
            if why is not None:
                found.skipped.append(why)
                continue
            if not _utf8_name(e.name):
                found.warnings.append(
                    f"{os.fsencode(e.path)!r}: folder name is not UTF-8, not searched")
                continue
            if is_skill(child):
                try:
                    cst = child.stat()
                except OSError:
                    continue
                if (cst.st_dev, cst.st_ino) not in seen:
                    seen.add((cst.st_dev, cst.st_ino))
                    found.roots.append(child)
            else:
                walk(child, depth + 1)

    if not _utf8_name(str(path)):
        found.warnings.append(f"{os.fsencode(path)!r}: path is not UTF-8, not searched")
    elif is_skill(path):
        found.roots.append(path)
    else:
        walk(path, 0)
    return found


def discover(paths: list[str] | list[Path]) -> tuple[list[Path], str | None]:
    """The skill roots under every path, and, when there is none, the one line that says so
    (naming the folders not searched)."""
    roots: list[Path] = []
    empty: list[str] = []
    for p in paths:
        found = scan_skill_roots(Path(p))
        roots += found.roots
        if not found.roots:
            empty.append(found.nothing_found(Path(p)))
    return roots, ("; ".join(empty) if not roots else None)


def find_skill_roots(path: Path) -> list[Path]:
    """The roots of `scan_skill_roots` (its warnings dropped)."""
    return scan_skill_roots(path).roots


def nearest_skill_root(path: Path, stop: Path) -> Path | None:
    """The nearest folder at or above ``path`` (not above ``stop``) that holds SKILL.md."""
    path, stop = Path(path), Path(stop)
    for d in [path, *path.parents]:
        if (d / SKILL_FILE).is_file():
            return d
        if d == stop:
            break
    return None
