"""What a failed block lacks, and whose it is: the reader's environment (a package, a host
tool: ``needs X``) or the skill's own code (an import of a module that exists nowhere).

**The rule for a module Python cannot find** (``No module named X``, raised in a file of the
skill). X is the *environment's* (``needs X``, untested) when it could be installed: the
skill declares or mentions it anywhere outside its import lines (SKILL.md, a reference, a
requirements file, the script's own install advice), or it is a module of the standard
library this Python lacks, or nothing marks it as a misspelling (``import pandas`` missing in
the sandbox is a package the reader installs). X is the *skill's defect* when it exists
nowhere:

- it is a near miss of a module the skill ships (``import wordcountr`` beside
  ``wordcounter.py``; `_near_own_module`), or
- it is one edit (a letter added, dropped, changed or two swapped) from a standard-library
  module S of four letters or more, keeping S's first letter and not merely adding a version
  number (``pathlib2``, ``json5``, ``urllib3``, ``ujson`` and ``httpx`` are real packages), and
  what the skill takes from X is all S has: ``from datetimes import datetime, timedelta``, or
  ``import jsno`` whose every use ``jsno.loads`` is an attribute of json.

A near name alone is no proof (PyPI has ``typer`` beside ``types``, ``times`` beside ``time``):
the imported names are the evidence. S's names are read from its source with `ast` (a module
of the standard library written in Python is never imported here) or, for a built-in or
compiled one, from the module itself.

**A script that says what to install** (``Error: rdkit is not installed. Install with: pip
install rdkit``) and exits non-zero without a traceback is asking for its environment:
``needs rdkit``, not a defect (`install_advice`).
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import importlib.util
import os
import pkgutil
import re
import sys
from pathlib import Path, PurePosixPath

from aeval.verdicts.doctest import Diagnosis, one_edit

_CMD_NOT_FOUND = re.compile(
    r"^(?:\S*(?:bash|sh|zsh|dash)(?::| -c:)? (?:line )?\d*:? ?)?([\w.+-]+): "
    r"(?:command )?not found\s*$", re.M)
_NO_MODULE = re.compile(r"No module named '?([A-Za-z_][\w.]*)'?")
# CommonJS ``Error: Cannot find module 'x'``, ESM ``Error [ERR_MODULE_NOT_FOUND]: Cannot find
# package 'x' imported from ...``
_NODE_NO_MODULE = re.compile(r"Error(?: \[ERR_MODULE_NOT_FOUND\])?: Cannot find "
                             r"(?:module|package) '([^'./][^']*)'")
# a program a script starts that is not installed: node, ruby, go
_NO_PROGRAM = re.compile(r"\bspawn(?:Sync)? ([\w.+-]+) ENOENT\b|"
                         r"Errno::ENOENT: No such file or directory - ([\w.+-]+)\b|"
                         r"exec: \"([\w.+-]+)\": executable file not found")
# uv could not get a package a script declares: offline (the provisioning phase did not fetch
# it) or not on the registry it asked: the reader's environment, never the skill's code
_UV_UNAVAILABLE = re.compile(r"Because ([A-Za-z0-9][\w.-]*)(?:\[[^\]]*\])? was not found in the "
                             r"(?:cache|package registry)")
# npm offline (``npx <tool>`` the provisioning phase did not fetch): the reader's registry
_NPM_NOT_CACHED = re.compile(r"request to https?://\S+?/((?:@[\w.-]+(?:/|%2[fF]))?[\w.-]+) "
                             r"failed: cache mode is 'only-if-cached'")
_FRAME = re.compile(r'^[^\S\n]*File "([^"]+)", line (\d+)', re.M)

_MAX_OWN_ENTRIES = 10_000  # a skill folder's entries read for its module names
_MAX_TEXT_FILES = 2_000  # a skill's files read for a mention of a module
_MAX_TEXT_BYTES = 512_000  # of each
_MAX_SOURCE_BYTES = 2_000_000  # a Python file parsed for its names


def frames_in_skill(output: str, skill_dir: Path) -> list[tuple[str, int]]:
    """The traceback frames of ``output`` that are in a file of the skill (path, line)."""
    root = skill_dir.resolve()
    frames = []
    for path, line in _FRAME.findall(output):
        p = Path(path)
        try:
            full = (p if p.is_absolute() else skill_dir / p).resolve()
        except (OSError, RuntimeError):
            continue
        if full.is_relative_to(root) and full.is_file():
            frames.append((full.relative_to(root).as_posix(), int(line)))
    return frames


def missing(output: str, skill_dir: Path, declared: frozenset[str] | set[str]
            ) -> Diagnosis | None:
    """`needs X` when the output says a module or command is not installed; a defect when
    the module exists nowhere (see the module's rule)."""
    m = _NO_MODULE.search(output) or _NODE_NO_MODULE.search(output)
    name = m.group(1).split(".")[0] if m else None
    if name is None:
        cm = _CMD_NOT_FOUND.search(output)
        if cm:
            name = cm.group(1)
    if name is None:
        pm = _NO_PROGRAM.search(output)
        if pm:
            name = next(g for g in pm.groups() if g)
    if name is None and (um := _UV_UNAVAILABLE.search(output)):
        return Diagnosis("missing_tool", f"needs {um.group(1)}", um.group(1))
    if name is None and (nm := _NPM_NOT_CACHED.search(output)):
        pkg = re.sub("%2[fF]", "/", nm.group(1))
        return Diagnosis("missing_tool", f"needs {pkg}", pkg)
    if name is None or (skill_dir / name).exists() or (skill_dir / f"{name}.py").exists():
        return None
    if m is not None and m.re is _NO_MODULE:
        near = _near_own_module(name, output, skill_dir) or _near_stdlib(name, output, skill_dir)
        if near is not None:
            return near
    if name in declared:
        return Diagnosis("inconclusive", f"declared host tool {name} is missing", name)
    return Diagnosis("missing_tool", f"needs {name}", name)


def _own_modules(skill_dir: Path) -> dict[str, str]:
    """The Python modules the skill ships: each ``.py`` file's stem and each package folder
    (one with ``__init__.py``), with the first path of that name. Bounded in entries read;
    symlinks are not followed; dot-folders and caches are skipped."""
    found: dict[str, str] = {}
    for e, rel in _walk(skill_dir, _MAX_OWN_ENTRIES):
        if e.is_dir(follow_symlinks=False):
            if os.path.isfile(os.path.join(e.path, "__init__.py")):
                found.setdefault(e.name, rel + "/")
        elif e.name.endswith(".py") and e.is_file(follow_symlinks=False):
            found.setdefault(e.name[:-3], rel)
    return found


def _walk(skill_dir: Path, limit: int):
    """(entry, skill-relative path) of the skill's files and folders, at most ``limit``
    entries read; symlinks not followed; dot-folders, caches and node_modules skipped."""
    seen = 0
    stack = [skill_dir]
    while stack and seen < limit:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            seen += 1
            if e.name.startswith(".") or e.name in ("__pycache__", "node_modules"):
                continue
            yield e, Path(e.path).relative_to(skill_dir).as_posix()
            if e.is_dir(follow_symlinks=False):
                stack.append(Path(e.path))


def shipped_named(skill_dir: Path, name: str) -> list[str]:
    """The skill's files called ``name``, wherever they are (bounded, as `_walk`)."""
    return [rel for e, rel in _walk(skill_dir, _MAX_OWN_ENTRIES)
            if e.name == name and e.is_file(follow_symlinks=False)]


def shipped_files(skill_dir: Path) -> list[str]:
    """Every file of the skill (skill-relative, sorted; bounded, as `_walk`)."""
    return sorted(rel for e, rel in _walk(skill_dir, _MAX_OWN_ENTRIES)
                  if e.is_file(follow_symlinks=False))


def _near_own_module(missing: str, output: str, skill_dir: Path) -> Diagnosis | None:
    """A defect when the module Python could not find is a near miss (difflib ratio >= 0.85)
    of one the skill ships, and the import is in the skill's own file: ``import wordcountr``
    beside ``wordcounter.py`` is the skill's typo, not a module the reader installs. A plural
    of the skill's module (``requests`` beside ``request.py``) is not a near miss: that is
    usually a real package of its own."""
    frames = frames_in_skill(output, skill_dir)
    if not frames or len(missing) < 4:
        return None
    own = _own_modules(skill_dir)
    if missing in own:
        return None  # the skill has it, the import path is the problem: not a typo
    close = [n for n in difflib.get_close_matches(missing, list(own), n=3, cutoff=0.85)
             if missing not in (n + "s", n + "es") and n not in (missing + "s", missing + "es")]
    file, line = frames[-1]
    if not close or PurePosixPath(file).stem == close[0] or _mentioned(missing, skill_dir):
        # feed_parser.py importing feedparser, a package SKILL.md says to install: the
        # reader's dependency, named like the skill's wrapper of it, not a typo of it
        return None
    return Diagnosis("defect", f"the skill's {file}:{line} imports {missing}, which is not "
                               f"installed, and the skill ships {close[0]} ({own[close[0]]}): "
                               "a misspelled import of the skill's own module", file=file,
                     own="file")


@functools.lru_cache(maxsize=64)
def _stdlib_names(module: str) -> frozenset[str] | None:
    """The public names a standard-library module defines (None: cannot tell). Python source
    is parsed, never run; a built-in or compiled module is imported (they run no user code)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    names: set[str] = set()
    origin = spec.origin or ""
    if origin.endswith(".py"):
        tree = _parse(Path(origin))
        if tree is None:
            return None
        for node in _top_level(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    elif origin in ("built-in", "frozen") or origin.endswith(".so"):
        try:
            names.update(dir(importlib.import_module(module)))
        except Exception:  # a module this build cannot load: cannot tell
            return None
    else:
        return None
    for loc in spec.submodule_search_locations or ():
        names.update(m.name for m in pkgutil.iter_modules([loc]))
    return frozenset(n for n in names if not n.startswith("_"))


def _top_level(body: list[ast.stmt]):
    """A module's top-level statements, those under a top-level ``if``, ``try`` or ``with``
    too (``try: from _collections import defaultdict``), never a function's or a class's."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.With, ast.Try, ast.TryStar)):
            for part in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])):
                yield from _top_level(part)
            for h in getattr(node, "handlers", []):
                yield from _top_level(h.body)


def _parse(path: Path) -> ast.Module | None:
    try:
        if path.stat().st_size > _MAX_SOURCE_BYTES:
            return None
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def _taken(tree: ast.Module, missing: str, line: int) -> list[str] | None:
    """What the import at ``line`` takes from ``missing``: the names of ``from X import a,
    b``, or for ``import X [as Y]`` every attribute the file reads from it (None: no
    evidence, e.g. ``from X import *`` or a dotted ``from X.sub import``)."""
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) != line:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == missing:
            names = [a.name for a in node.names]
            return None if "*" in names else names
        if isinstance(node, ast.Import):
            alias = next((a.asname or a.name for a in node.names if a.name == missing), None)
            if alias is None:
                return None
            used = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                           and isinstance(n.value, ast.Name) and n.value.id == alias})
            return used or None
    return None


def _mentioned(module: str, skill_dir: Path) -> bool:
    """Whether a text file of the skill names ``module`` on a line that is no import of it,
    other than as code reading its attributes (a requirement, an install command, prose, a
    string): the author knows it as a dependency."""
    # `jsno.loads(...)` is a use, not a mention
    word = re.compile(r"(?<![\w.-])" + re.escape(module).replace("_", "[-_]") +
                      r"(?![\w-]|\.\w)", re.I)
    imports = re.compile(r"^\s*(?:from\s+\S+\s+import|import)\s", re.M)
    read = 0
    for e, _rel in _walk(skill_dir, _MAX_OWN_ENTRIES):
        if read >= _MAX_TEXT_FILES or not e.is_file(follow_symlinks=False):
            continue
        read += 1
        try:
            with open(e.path, "rb") as fh:
                text = fh.read(_MAX_TEXT_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        for ln in text.splitlines():
            if word.search(ln) and not imports.match(ln):
                return True
    return False


def _near_stdlib(missing: str, output: str, skill_dir: Path) -> Diagnosis | None:
    """A defect when ``missing`` is a misspelled standard-library module (the module's
    rule): one edit from S, not mentioned by the skill, and all it takes is S's."""
    frames = frames_in_skill(output, skill_dir)
    if not frames or missing in sys.stdlib_module_names:
        return None
    near = sorted(s for s in sys.stdlib_module_names
                  if not s.startswith("_") and one_edit(missing, s))
    if not near:
        return None
    file, line = frames[-1]
    tree = _parse(skill_dir / file)
    taken = _taken(tree, missing, line) if tree is not None else None
    if not taken or _mentioned(missing, skill_dir):
        return None
    for s in near:
        have = _stdlib_names(s)
        if have is not None and all(n in have for n in taken):
            return Diagnosis("defect", f"the skill's {file}:{line} imports {missing}, a module "
                                       f"that exists nowhere (not installed, not in the "
                                       f"standard library, never named by the skill): a "
                                       f"misspelling of the standard library's {s}, which has "
                                       f"{', '.join(taken[:3])}", file=file, own="file")
    return None


# a script's advice to install something: `pip install rdkit`, `npm install -g @x/cli`
_ADVICE = re.compile(
    r"(?<![\w-])(?:(?:python3?\s+-m\s+)?pip3?|uv\s+pip|uv|conda|mamba|micromamba|pipx|npm|"
    r"pnpm|yarn|bun|brew|(?:sudo\s+)?apt(?:-get)?|dnf|yum|gem|cargo|go)\s+(?:install|add)"
    r"(?P<rest>(?:[ \t]+[^\s;|&)]+){0,8})", re.I)
_ADVICE_STOP = frozenset({"and", "or", "then", "first", "to", "with", "from", "if", "before"})
_ADVICE_VALUED = frozenset({"-c", "--channel", "-r", "--requirement", "-e", "--editable",
                            "--index-url", "-i", "--prefix", "-t", "--target"})
_ADVICE_LINES = 10  # the advice is among the last lines the script printed
# the script says something is missing: "rdkit is not installed", "requires pandas"
_LACKS = re.compile(r"\bnot (?:installed|found|available)\b|\bmissing\b|\brequire[sd]?\b|"
                    r"\binstall (?:it |them )?(?:with|using|via|by)\b|\bplease install\b|"
                    r"\b(?:could not|cannot|can't|unable to) (?:find|import|load)\b|"
                    r"\bno module\b|\bImportError\b", re.I)


def install_advice(output: str, exit_code: int | None, declared: frozenset[str] | set[str]
                   ) -> Diagnosis | None:
    """``needs X`` when a script that failed says how to install what it lacks (among its
    last lines): the reader's environment, not the skill's defect. A bare ``npm install``
    or ``pip install -r requirements.txt`` names no package: inconclusive, the reader's
    setup. The caller has already ruled out a traceback in the skill's code."""
    if exit_code is None or exit_code == 0 or exit_code > 128:
        return None
    lines = [ln.strip() for ln in output.strip().splitlines() if ln.strip()][-_ADVICE_LINES:]
    if not any(_LACKS.search(ln[:1000]) for ln in lines):
        return None  # a tip to install something, with no word that anything is missing
    for ln in lines:
        m = _ADVICE.search(ln[:1000])
        if m is None:
            continue
        packages: list[str] = []
        skip = False
        for w in m.group("rest").split():
            w = w.strip("'\"`").rstrip(".,:;!)")
            if skip:
                skip = False
                continue
            if w in _ADVICE_VALUED:
                skip = True
                continue
            if w.startswith("-") or not w:
                continue
            if w.lower() in _ADVICE_STOP:
                break
            name = re.split(r"[<>=!~\[]", w, maxsplit=1)[0]
            if re.fullmatch(r"@?[\w.+/-]{1,100}", name) and not name.endswith((".txt", ".toml")):
                packages.append(name)
        said = ln[:200]
        if not packages:
            return Diagnosis("inconclusive", f"the script asks the reader to install its "
                                             f"dependencies first: {said}")
        tool = packages[0]
        if tool in declared:
            return Diagnosis("inconclusive", f"declared host tool {tool} is missing", tool)
        return Diagnosis("missing_tool", f"needs {tool} (the script says: {said})", tool)
    return None
