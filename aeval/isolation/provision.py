"""What a skill declares it needs from the package registries, and what was provisioned.

A skill's documented commands run ``uv run scripts/report.py``, whose PEP 723 header
(``# /// script`` ... ``# ///``) lists the packages it needs. A case's attempt is offline
(unless it declares ``network: true``), so those packages are fetched before it, in a
provisioning phase that reaches only the package registries
(`aeval.adapters.sandbox.provision`), into a wheelhouse cached by content; the attempt then
installs from that wheelhouse, offline.

This module only reads: which declaration files the documented commands lead to
(`declarations`), and the record of what was provisioned (`Provisioning`).
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# ``uv run [options] path/to/x.py``: the script a documented command runs through uv
_UV_RUN = re.compile(r"\buv\s+run\b((?:\s+-{1,2}[\w-]+(?:[ =](?!\S*\.py\b)\S+)?)*)\s+"
                     r"[\"']?([^\s\"';|&()]+\.py)\b")
# a ``.py`` file a command starts directly (through its ``#!`` line): the command's first word
_PY_PATH = re.compile(r"(?:^|[;&|(])[^\S\n]*(?:\w+=\S*[^\S\n]+)*[\"']?([^\s\"';|&()]+\.py)\b",
                      re.M)
_WITH = re.compile(r"--with[ =]([^\s\"']+)")
# the reference regular expression of PEP 723 (packaging.python.org, inline script metadata)
_PEP723 = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
_MAX_DECLARATION_BYTES = 256_000


class Provisioning(BaseModel):
    """What the provisioning phase fetched for an attempt (eval_metadata.json, per attempt)."""

    model_config = ConfigDict(extra="forbid")

    declared: list[str] = Field(
        description="The declaration files, skill-relative, with their kind: "
                    "``scripts/report.py (PEP 723)``.")
    requirements: list[str] = Field(description="The requirements they declare, in order.")
    outcome: Literal["built", "cached", "not provisioned"] = Field(
        description="built: fetched now; cached: an earlier build with the same key was "
                    "used; not provisioned: it could not be (`reason`), and the attempt ran "
                    "without it.")
    key: str = Field(description="sha256 of the requirements, Python version, platform and "
                                 "uv version: the cache entry's name.")
    packages: list[str] = Field(
        default_factory=list, description="What the wheelhouse holds (distribution files).")
    reason: str | None = Field(
        None, description="Why it was not provisioned: ``needs X (not on the package "
                          "registry)``, a resolver's error, the registry unreachable.")

    def line(self) -> str:
        """One short line for a report: ``provisioned 3 package(s) (cached)``."""
        if self.outcome == "not provisioned":
            return f"not provisioned: {self.reason}"
        lacking = f"; {self.reason}" if self.reason else ""
        return f"provisioned {len(self.packages)} package(s) ({self.outcome}{lacking})"


def _within(skill_dir: Path, ref: str) -> Path | None:
    """The skill file a documented path names, however it is prefixed (``$SKILL_DIR/``,
    ``{baseDir}/``, an install path): the longest tail of it that is a file of the skill."""
    parts = PurePosixPath(ref).parts
    root = skill_dir.resolve()
    for i in range(len(parts)):
        tail = PurePosixPath(*parts[i:])
        if not tail.parts or tail.parts[0] in ("/", "..") or "$" in str(tail) or "{" in str(tail):
            continue
        path = skill_dir / tail
        try:
            if path.is_file() and path.resolve().is_relative_to(root):
                return path
        except OSError:
            continue
    return None


def _read(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(_MAX_DECLARATION_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def script_requirements(text: str) -> list[str] | None:
    """The ``dependencies`` of a script's PEP 723 block (None: no block, or a broken one)."""
    blocks = [m for m in _PEP723.finditer(text) if m.group("type") == "script"]
    if len(blocks) != 1:
        return None
    content = "".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in blocks[0].group("content").splitlines(keepends=True))
    try:
        deps = tomllib.loads(content).get("dependencies", [])
    except tomllib.TOMLDecodeError:
        return None
    return [d for d in deps if isinstance(d, str) and d.strip()] if isinstance(deps, list) \
        else None


def declarations(skill_dir: Path, commands: list[str]) -> tuple[list[str], list[str]]:
    """(declaration files, requirements) that ``commands`` (SKILL.md's blocks, a contract's
    setup and steps) lead to: the PEP 723 header of each script of the skill they ``uv run``,
    or run directly when its ``#!`` line runs it through ``uv run`` (``$SKILL_DIR/``,
    ``{baseDir}/`` and the like in front of its path are read through).
    Nothing when they ``uv run`` no script of the skill with a header."""
    declared: list[str] = []
    reqs: list[str] = []
    scripts: list[Path] = []
    for m in _UV_RUN.finditer("\n".join(commands)):
        path = _within(skill_dir, m.group(2))
        if path is None:
            continue
        for w in _WITH.findall(m.group(1)):  # ``--with rich,httpx``: uv fetches those too
            reqs += [r for r in w.split(",") if r]
        if path in scripts:
            continue
        scripts.append(path)
        deps = script_requirements(_read(path))
        if deps:
            declared.append(f"{path.relative_to(skill_dir).as_posix()} (PEP 723)")
            reqs += deps
    for m in _PY_PATH.finditer("\n".join(commands)):  # run directly: ``#!... uv run --script``
        path = _within(skill_dir, m.group(1))
        if path is None or path in scripts:
            continue
        text = _read(path)
        if not (text.startswith("#!") and "uv run" in text.split("\n", 1)[0]):
            continue
        scripts.append(path)
        deps = script_requirements(text)
        if deps:
            declared.append(f"{path.relative_to(skill_dir).as_posix()} (PEP 723)")
            reqs += deps
    return declared, list(dict.fromkeys(reqs))


def provision_key(requirements: list[str], python: str, platform: str, uv: str) -> str:
    """The cache key of a wheelhouse: what it holds depends on nothing else."""
    blob = "\n".join(["aeval-provision-1", python, platform, uv, *requirements])
    return hashlib.sha256(blob.encode()).hexdigest()
