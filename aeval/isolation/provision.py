"""What a skill declares it needs from the package registries, and what was provisioned.

A skill's documented commands run ``uv run scripts/report.py``, whose PEP 723 header
(``# /// script`` ... ``# ///``) lists the packages it needs; or ``python scripts/report.py``
with a ``requirements.txt`` beside the script (or at the skill root, or named by a documented
``pip install -r``), or a ``pyproject.toml`` whose ``[project].dependencies`` the skill's
scripts sit under. A case's attempt is offline
(unless it declares ``network: true``), so those packages are fetched before it, in a
provisioning phase that reaches only the package registries
(`aeval.adapters.sandbox.provision`), into a wheelhouse cached by content; the attempt then
installs from that wheelhouse, offline, and plain ``python`` imports what a
``requirements.txt`` or ``pyproject.toml`` declares from a folder the wheelhouse was
installed into (``PYTHONPATH``).

This module only reads: which declaration files the documented commands lead to
(`declarations`), and the record of what was provisioned (`Provisioning`).
"""

from __future__ import annotations

import hashlib
import json
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
# any ``.py`` word of a command (``python3 "$SKILL_DIR/scripts/x.py"``, ``uv run``, a direct run)
_ANY_PY = re.compile(r"[\"']?([^\s\"';|&()<>=]+\.py)\b")
# ``pip install -r path``, ``--requirement=path``: a requirements file the commands name
_REQ_FLAG = re.compile(r"\b(?:pip3?|uv\s+pip|python3?\s+-m\s+pip)\s+install\b[^\n;&|]*?\s"
                       r"(?:-r|--requirement)(?:[ =]|(?=[^\s-]))[\"']?([^\s\"';|&()]+)")
# a requirement on the registry: a name, extras, versions, markers (not a URL or a path)
_NAMED = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?\s*(?:\[[^\]]*\])?\s*"
                    r"(?:[<>=!~;(].*)?$")
_MAX_REQUIREMENT_FILES = 16  # nested ``-r`` files followed
# the reference regular expression of PEP 723 (packaging.python.org, inline script metadata)
_PEP723 = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
_MAX_DECLARATION_BYTES = 256_000


class Provisioning(BaseModel):
    """What the provisioning phase fetched for an attempt (eval_metadata.json, per attempt)."""

    model_config = ConfigDict(extra="forbid")

    declared: list[str] = Field(
        description="The declaration files, skill-relative, with their kind: "
                    "``scripts/report.py (PEP 723)``, ``requirements.txt (requirements.txt)``, "
                    "``pyproject.toml (pyproject)``.")
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
        """One short line for a report: ``provisioned 3 package(s) (cached)``, and what was
        left out: ``provisioned 1 package(s) (built); not provisioned: needs X (not on the
        package registry)``."""
        if self.outcome == "not provisioned":
            return f"not provisioned: {self.reason}"
        lacking = f"; not provisioned: {self.reason}" if self.reason else ""
        return f"provisioned {len(self.packages)} package(s) ({self.outcome}){lacking}"

    def lacking(self) -> str | None:
        """``not provisioned: needs X (not on the package registry)`` when something declared
        could not be fetched (a case left untested by it names this), else None."""
        return f"not provisioned: {self.reason}" if self.reason else None

    @property
    def importable(self) -> bool:
        """Whether plain ``python`` is to import the packages (a ``requirements.txt`` or a
        ``pyproject.toml`` declared them; a PEP 723 header is read by ``uv run`` alone)."""
        return any(not d.endswith("(PEP 723)") for d in self.declared)


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


def requirements_file(path: Path, skill_dir: Path, seen: set[Path] | None = None) -> list[str]:
    """The requirements a ``requirements.txt`` lists that the registry can serve: names with
    extras, versions and markers; nested ``-r`` files of the skill followed; options
    (``-e``, ``--index-url``, ``--hash``), URLs and local paths left to the reader."""
    seen = set() if seen is None else seen
    if path in seen or len(seen) >= _MAX_REQUIREMENT_FILES:
        return []
    seen.add(path)
    out: list[str] = []
    for raw in _read(path).replace("\\\n", " ").splitlines():
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        nested = re.match(r"(?:-r|--requirement)(?:[ =]|(?=[^\s-]))\s*(\S+)$", line)
        if nested:
            inner = _within(skill_dir, (PurePosixPath(path.relative_to(skill_dir)).parent
                                        / nested.group(1)).as_posix())
            if inner is not None:
                out += requirements_file(inner, skill_dir, seen)
            continue
        line = re.split(r"\s--?[a-z]", line, maxsplit=1)[0].strip()  # ``pkg==1 --hash=...``
        if _NAMED.match(line) and "://" not in line:
            out.append(line)
    return out


def project_requirements(text: str) -> list[str] | None:
    """``[project].dependencies`` of a ``pyproject.toml`` (None: none, or a broken file)."""
    try:
        deps = tomllib.loads(text).get("project", {}).get("dependencies")
    except (tomllib.TOMLDecodeError, AttributeError):
        return None
    if not isinstance(deps, list):
        return None
    return [d.strip() for d in deps if isinstance(d, str) and _NAMED.match(d.strip())
            and "://" not in d]


def _nearest(script: Path, skill_dir: Path, name: str) -> Path | None:
    """The file ``name`` beside ``script`` or in a folder above it, up to the skill root."""
    folder = script.parent
    while True:
        if (folder / name).is_file():
            return folder / name
        if folder == skill_dir or not folder.is_relative_to(skill_dir):
            return None
        folder = folder.parent


def declarations(skill_dir: Path, commands: list[str]) -> tuple[list[str], list[str]]:
    """(declaration files, requirements) that ``commands`` (SKILL.md's blocks, a contract's
    setup and steps) lead to, each file with its kind:

    - ``PEP 723``: the header of each script of the skill they ``uv run``, or run directly
      when its ``#!`` line runs it through ``uv run`` (``--with`` packages too);
    - ``requirements.txt``: the nearest ``requirements.txt`` beside (or above, up to the
      skill root) each Python script of the skill they name, and one they ``-r``;
    - ``pyproject``: the ``[project].dependencies`` of the nearest ``pyproject.toml`` above
      such a script.

    ``$SKILL_DIR/``, ``{baseDir}/`` and the like in front of a path are read through.
    Nothing when they lead to no declaration."""
    skill_dir = Path(skill_dir)
    declared: list[str] = []
    reqs: list[str] = []
    scripts: list[Path] = []
    text = "\n".join(commands)

    def declare(path: Path, kind: str, deps: list[str] | None) -> None:
        label = f"{path.relative_to(skill_dir).as_posix()} ({kind})"
        if deps and label not in declared:
            declared.append(label)
            reqs.extend(deps)

    for m in _UV_RUN.finditer(text):
        path = _within(skill_dir, m.group(2))
        if path is None:
            continue
        for w in _WITH.findall(m.group(1)):  # ``--with rich,httpx``: uv fetches those too
            reqs += [r for r in w.split(",") if r]
        if path in scripts:
            continue
        scripts.append(path)
        declare(path, "PEP 723", script_requirements(_read(path)))
    for m in _PY_PATH.finditer(text):  # run directly: ``#!... uv run --script``
        path = _within(skill_dir, m.group(1))
        if path is None or path in scripts:
            continue
        head = _read(path)
        if not (head.startswith("#!") and "uv run" in head.split("\n", 1)[0]):
            continue
        scripts.append(path)
        declare(path, "PEP 723", script_requirements(head))
    for m in _REQ_FLAG.finditer(text):  # ``pip install -r $SKILL_DIR/requirements.txt``
        path = _within(skill_dir, m.group(1))
        if path is not None:
            declare(path, "requirements.txt", requirements_file(path, skill_dir))
    python = [p for m in _ANY_PY.finditer(text)
              if (p := _within(skill_dir, m.group(1))) is not None]
    for path in dict.fromkeys(python):  # ``python scripts/x.py`` and every other run of it
        found = _nearest(path, skill_dir, "requirements.txt")
        if found is not None:
            declare(found, "requirements.txt", requirements_file(found, skill_dir))
        found = _nearest(path, skill_dir, "pyproject.toml")
        if found is not None:
            declare(found, "pyproject", project_requirements(_read(found)))
    return declared, list(dict.fromkeys(reqs))


def provision_key(requirements: list[str], python: str, platform: str, uv: str) -> str:
    """The cache key of a wheelhouse: what it holds depends on nothing else."""
    blob = "\n".join(["aeval-provision-2", python, platform, uv, *requirements])
    return hashlib.sha256(blob.encode()).hexdigest()


# ---- npm: a package.json beside the JS/TS scripts the commands run, and npx tools ---------

_ANY_JS = re.compile(r"[\"']?([^\s\"';|&()<>=]+\.(?:js|mjs|cjs|ts|mts|cts|jsx|tsx))\b")
_NPX = re.compile(r"(?:^|[;&|(`]|\$\()[^\S\n]*(?:\w+=\S*[^\S\n]+)*(?:npx|npm\s+exec)[^\S\n]+"
                  r"([^\n;&|)`]*)", re.M)
# a package spec the registry serves: ``semver``, ``@scope/name@^2``
_NPM_SPEC = re.compile(r"^(?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*(?:@[\w.^~<>=*|-]+)?$")
_NPM_NAME = re.compile(r"^(?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*$")
_NPX_FLAGS = frozenset({"-y", "--yes", "-q", "--quiet", "--silent", "--no-install",
                        "--prefer-offline", "--prefer-online", "--ignore-existing"})


def npx_tools(text: str) -> list[str]:
    """The package specs ``npx`` / ``npm exec`` commands of ``text`` fetch: the first word
    after the options (``npx -y semver -i minor 1.4.2``: ``semver``), or each ``-p`` /
    ``--package`` given. Placeholders and paths are not specs."""
    specs: list[str] = []
    for m in _NPX.finditer(text):
        words = m.group(1).split()
        given: list[str] = []
        i = 0
        while i < len(words):
            w = words[i]
            if w.startswith("--package="):
                given.append(w.split("=", 1)[1])
            elif w in ("-p", "--package") and i + 1 < len(words):
                given.append(words[i + 1])
                i += 1
            elif w == "--" or not w.startswith("-"):
                if not given and w != "--":
                    given.append(w)
                elif not given and i + 1 < len(words):
                    given.append(words[i + 1])
                break
            elif w not in _NPX_FLAGS and "=" not in w:
                break  # an option npx has no meaning for: read no further
            i += 1
        specs += [g.strip("\"'") for g in given if _NPM_SPEC.match(g.strip("\"'"))]
    return list(dict.fromkeys(specs))


def package_dependencies(text: str) -> dict[str, str] | None:
    """``dependencies`` and ``devDependencies`` of a ``package.json`` that the registry serves
    (a reader's ``npm install`` installs both); ``file:``, ``link:``, git and URL ones are
    the reader's. None: no such object, or a broken file."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, str] = {}
    for field in ("dependencies", "devDependencies"):
        deps = data.get(field)
        if not isinstance(deps, dict):
            continue
        for name, spec in deps.items():
            if (isinstance(name, str) and isinstance(spec, str) and _NPM_NAME.match(name)
                    and not re.match(r"^(?:file|link|git|git\+\w+|https?|workspace|github):|"
                                     r"^[\w.-]+/[\w.-]+(?:#.*)?$|^[./~]", spec.strip())):
                out.setdefault(name, spec.strip() or "*")
    return out or None


def npm_declarations(skill_dir: Path, commands: list[str]
                     ) -> tuple[list[str], dict[str, str], list[str], list[str]]:
    """(declarations, dependencies, npx tools, package.json folders) that ``commands`` lead
    to: the nearest ``package.json`` beside (or above, up to the skill root) each JS/TS
    script of the skill they name (kind ``package.json``), and the packages their ``npx``
    fetches (kind ``npx``). The folders (skill-relative) are where a reader's
    ``npm install`` puts ``node_modules``."""
    skill_dir = Path(skill_dir)
    text = "\n".join(commands)
    declared: list[str] = []
    deps: dict[str, str] = {}
    folders: list[str] = []
    scripts = [p for m in _ANY_JS.finditer(text)
               if (p := _within(skill_dir, m.group(1))) is not None]
    for path in dict.fromkeys(scripts):
        found = _nearest(path, skill_dir, "package.json")
        label = f"{found.relative_to(skill_dir).as_posix()} (package.json)" if found else ""
        if found is None or label in declared:
            continue
        listed = package_dependencies(_read(found))
        if listed:
            declared.append(label)
            folders.append(found.parent.relative_to(skill_dir).as_posix())
            for name, spec in listed.items():
                deps.setdefault(name, spec)
    tools = npx_tools(text)
    declared += [f"npx {t} (npx)" for t in tools]
    return declared, deps, tools, folders
