"""SKILL.md: frontmatter parsing and the Agent Skills lint rules.

A skill is `invalid` only when it cannot be loaded at all (no SKILL.md, no parseable
frontmatter, no name or description). The letter of the Agent Skills spec (name format and
length, description length, name equal to the folder, known keys) gives lint *warnings*:
real skills bend it, and aeval must still test them.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from aeval.errors import ContractError, Problem

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
KNOWN_KEYS = frozenset(
    {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}
)
_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FENCE_RE = re.compile(r"^```[ \t]*(bash|sh|shell)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


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

    @property
    def skill_md(self) -> Path:
        return self.path / SKILL_FILE

    def shell_blocks(self) -> list[tuple[int, str]]:
        """Fenced bash/sh/shell blocks of the body, with the SKILL.md line each starts on."""
        blocks = []
        for m in _FENCE_RE.finditer(self.body):
            line = self.body_offset + self.body.count("\n", 0, m.start()) + 1
            code = m.group(2).strip()
            if code:
                blocks.append((line, code))
        return blocks


def load_skill(skill_dir: Path) -> Skill:
    """Parse ``skill_dir/SKILL.md``. Raises ContractError naming every problem found."""
    skill_dir = Path(skill_dir)
    skill_md = skill_dir / SKILL_FILE
    where = str(skill_md)
    if not skill_md.is_file():
        raise ContractError([Problem(str(skill_dir), "", f"no {SKILL_FILE} in this folder")])
    try:
        text = skill_md.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError([Problem(where, "", f"cannot be read: {exc}")]) from exc
    m = _FRONTMATTER_RE.match(text)
    if not m:
        raise ContractError(
            [Problem(where, "frontmatter", "missing: SKILL.md must start with a '---' YAML block")]
        )
    try:
        front = yaml.safe_load(m.group(1)) or {}
    except yaml.YAMLError as exc:
        raise ContractError([Problem(where, "frontmatter", f"not valid YAML: {exc}")]) from exc
    if not isinstance(front, dict):
        raise ContractError([Problem(where, "frontmatter", "must be a YAML mapping")])

    problems = []
    for key in ("name", "description"):
        value = front.get(key)
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(where, key, "required, must be a non-empty string"))
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


def find_skill_roots(path: Path) -> list[Path]:
    """Skill roots at or under ``path`` (folders holding SKILL.md), sorted.

    Hidden folders (``.git``, ``.aeval``, ``.agents`` ...) are not searched, and a skill's
    own sub-folders are not searched for nested skills.
    """
    path = Path(path)
    if (path / SKILL_FILE).is_file():
        return [path]
    roots: list[Path] = []

    def walk(d: Path) -> None:
        try:
            children = sorted(c for c in d.iterdir() if c.is_dir())
        except OSError:
            return
        for c in children:
            if c.name.startswith(".") or c.name in {"node_modules", "__pycache__"}:
                continue
            if (c / SKILL_FILE).is_file():
                roots.append(c)
            else:
                walk(c)

    walk(path)
    return roots


def nearest_skill_root(path: Path, stop: Path) -> Path | None:
    """The nearest folder at or above ``path`` (not above ``stop``) that holds SKILL.md."""
    path, stop = Path(path), Path(stop)
    for d in [path, *path.parents]:
        if (d / SKILL_FILE).is_file():
            return d
        if d == stop:
            break
    return None
