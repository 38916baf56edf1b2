"""The import graph, read from the source with `ast`: the floors import one way only
(deployments -> flows -> tasks -> adapters -> aeval), no two modules import each other round a
circle, and the domain (`aeval/`) imports neither Prefect nor a model SDK.

Nothing here is a list kept by hand: the modules are every ``.py`` file under the folders
pyproject.toml's ``[tool.setuptools.package-dir]`` maps into the ``aeval`` namespace, and a
module's floor is read from its dotted name (``aeval.adapters.*`` is adapters, ``aeval.x`` that
is none of the four upper floors is the domain), so the test reads a flat layout and a layout
grouped into subpackages alike.

What counts as an import: every ``import`` and ``from ... import`` statement anywhere in a
module (top level, inside functions, inside ``try`` or ``if``), relative ones resolved against
the module's package; ``from pkg import name`` is an import of ``pkg.name`` when that is a
module. Imports under ``if TYPE_CHECKING:`` count for the *direction* (a domain annotation that
names a task's type is a domain that knows its tasks) but not for *circles*: they never run, and
annotations naming each other's types are not a circle at import time. Imports under
``if __name__ == "__main__":`` are left out: they run only when the file is run as a script
(``python -m``), as the module ``__main__``, which nothing imports.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FLOORS = ("aeval", "adapters", "tasks", "flows", "deployments")
"""Lowest first: a module may import its own floor and the floors before it."""

DOMAIN_FORBIDDEN = ("prefect", "prefect_dask", "anthropic", "openai", "litellm",
                    "claude_agent_sdk", "gitlab", "github")
"""Top-level packages the domain floor must not import: the workflow engine and every model or
forge SDK (python-gitlab is ``gitlab``, PyGithub is ``github``)."""


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (or package), resolved
    where: str  # file:line, the file relative to the tree's root
    type_checking: bool


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """pyproject's package-dir mapping: dotted package -> folder, the floors' folders only
    (eval_skill is data with an empty ``__init__``; it is mapped but is no floor)."""
    data = tomllib.loads((root / "pyproject.toml").read_text())
    mapping = data["tool"]["setuptools"]["package-dir"]
    return {pkg: root / folder for pkg, folder in mapping.items()
            if floor_of(pkg) is not None}


def floor_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "aeval":
        return None
    if len(parts) > 1 and parts[1] in FLOORS[1:]:
        return parts[1]
    if len(parts) > 1 and parts[1] == "eval_skill":
        return None
    return "aeval"


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the five floors: dotted name -> file. A folder mapped to a package of
    its own (``adapters`` -> ``aeval.adapters``) is walked only under that name."""
    dirs = package_dirs(root)
    out: dict[str, Path] = {}
    for pkg, folder in dirs.items():
        others = [d for p, d in dirs.items() if p != pkg and d.is_relative_to(folder)]
        for path in sorted(folder.rglob("*.py")):
            if any(path.is_relative_to(o) for o in others):
                continue
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([pkg, *parts])] = path
    return out


def _lines_under(tree: ast.AST, matches) -> set[int]:
    """The lines of the bodies of the ``if`` statements whose test ``matches``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and matches(node.test):
            for child in node.body:
                for sub in ast.walk(child):
                    if hasattr(sub, "lineno"):
                        lines.add(sub.lineno)
    return lines


def _is_type_checking(test: ast.expr) -> bool:
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
    return name == "TYPE_CHECKING"


def _is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def imports_of(module: str, path: Path, known: set[str], root: Path = ROOT) -> list[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    tc = _lines_under(tree, _is_type_checking)
    script = _lines_under(tree, _is_main_guard)
    is_pkg = path.name == "__init__.py"
    package = module if is_pkg else module.rpartition(".")[0]
    found: list[Import] = []

    def add(target: str, node: ast.stmt) -> None:
        if node.lineno in script:
            return
        found.append(Import(module, target, f"{path.relative_to(root)}:{node.lineno}",
                            node.lineno in tc))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            for alias in node.names:
                full = f"{stem}.{alias.name}"
                add(full if full in known else stem, node)
    return found


@functools.cache
def graph(root: Path = ROOT) -> tuple[dict[str, Path], list[Import]]:
    """Every module and every import of the tree at ``root`` (read once per tree)."""
    mods = modules(root)
    known = set(mods)
    edges: list[Import] = []
    for name, path in mods.items():
        edges.extend(imports_of(name, path, known, root))
    return mods, edges


def resolve(target: str, known: set[str]) -> str | None:
    """The module of ours an import names (its longest known prefix), or None."""
    parts = target.split(".")
    while parts:
        name = ".".join(parts)
        if name in known:
            return name
        parts.pop()
    return None


def direction_violations(root: Path = ROOT) -> list[str]:
    mods, edges = graph(root)
    rank = {f: i for i, f in enumerate(FLOORS)}
    bad = []
    for e in edges:
        src, dst = floor_of(e.source), floor_of(e.target)
        if src is None or dst is None or resolve(e.target, set(mods)) is None:
            continue
        if rank[dst] > rank[src]:
            bad.append(f"{e.where}: {e.source} ({src}) imports {e.target} ({dst}): "
                       f"{' -> '.join(reversed(FLOORS))} runs the other way")
    return bad


def domain_sdk_imports(root: Path = ROOT) -> list[str]:
    _, edges = graph(root)
    return [f"{e.where}: {e.source} (the domain) imports {e.target}"
            for e in edges
            if floor_of(e.source) == "aeval" and e.target.split(".")[0] in DOMAIN_FORBIDDEN]


def circles(root: Path = ROOT) -> list[list[str]]:
    """The strongly connected components (Tarjan) of more than one module, or of one module
    that imports itself, among imports that run (TYPE_CHECKING ones left out)."""
    mods, edges = graph(root)
    known = set(mods)
    succ: dict[str, set[str]] = {m: set() for m in mods}
    for e in edges:
        if e.type_checking:
            continue
        dst = resolve(e.target, known)
        if dst is not None and dst != e.source:
            succ[e.source].add(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:  # iterative Tarjan would be longer; the graph is ~150 deep max
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(mods):
        if v not in index:
            visit(v)
    return found


def circle_report(comp: list[str], root: Path = ROOT) -> str:
    mods, edges = graph(root)
    members = set(comp)
    known = set(mods)
    lines = sorted({f"{e.where}: {e.source} imports {e.target}" for e in edges
                    if not e.type_checking and e.source in members
                    and resolve(e.target, known) in members - {e.source}})
    return "a circle of " + ", ".join(comp) + ":\n    " + "\n    ".join(lines)


def test_the_graph_is_read_from_every_floor():
    mods, edges = graph()
    floors = {floor_of(m) for m in mods}
    assert floors == set(FLOORS), floors
    assert len(mods) > 100 and len(edges) > 500, (len(mods), len(edges))
    # a function-level import is read: aeval's embedded server looks for the reused one
    # lazily (an import inside a function), and the command line's module is found
    assert any(e.target.startswith("aeval.deployments") for e in edges
               if floor_of(e.source) == "flows" or floor_of(e.source) == "deployments")


def test_imports_point_down_the_floors():
    bad = direction_violations()
    assert not bad, "imports against deployments -> flows -> tasks -> adapters -> aeval:\n" \
        + "\n".join(bad)


def test_no_import_circle():
    found = circles()
    assert not found, "\n".join(circle_report(c) for c in found)


def test_the_domain_imports_no_prefect_and_no_sdk():
    bad = domain_sdk_imports()
    assert not bad, "\n".join(bad)


# The checks themselves, on a planted copy of the tree: each must name the import it fails on.

def _planted(tmp_path: Path, file: str, text: str) -> Path:
    """A copy of pyproject.toml and the five floors' sources, with ``text`` appended to
    ``file``."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    for folder in package_dirs().values():
        for path in folder.rglob("*.py"):
            dst = tmp_path / path.relative_to(ROOT)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(path.read_text())
    with open(tmp_path / file, "a") as fh:
        fh.write(text)
    return tmp_path


def _module_file(name: str) -> str:
    return str(graph()[0][name].relative_to(ROOT))


def _some(floor: str) -> str:
    """A module of ``floor`` that is not a package's ``__init__``."""
    return next(m for m, p in sorted(graph()[0].items())
                if floor_of(m) == floor and p.name != "__init__.py")


def test_a_planted_upward_import_is_named(tmp_path):
    domain, task = _some("aeval"), _some("tasks")
    root = _planted(tmp_path, _module_file(domain),
                    f"\n\ndef _late():\n    import {task}  # planted\n")
    bad = direction_violations(root)
    assert len(bad) == 1 and f"{domain} (aeval) imports {task} (tasks)" in bad[0], bad


def test_a_planted_relative_upward_import_is_named(tmp_path):
    adapter = _some("adapters")
    # from an adapter, ``from ..tasks import x`` is aeval.tasks.x
    task = _some("tasks")
    depth = adapter.count(".") - 1  # aeval.adapters.x -> 1 dot up to aeval
    text = f"\nfrom {'.' * (depth + 1)}tasks import {task.split('.', 2)[2].split('.')[0]}\n"
    root = _planted(tmp_path, _module_file(adapter), text)
    bad = direction_violations(root)
    assert len(bad) == 1 and f"{adapter} (adapters) imports aeval.tasks" in bad[0], bad


def test_a_planted_type_checking_import_counts_for_the_direction(tmp_path):
    domain, flow = _some("aeval"), _some("flows")
    text = f"\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import {flow}\n"
    root = _planted(tmp_path, _module_file(domain), text)
    assert any(f"imports {flow} (flows)" in b for b in direction_violations(root))
    assert not circles(root)


def test_a_planted_circle_is_named(tmp_path):
    mods = graph()[0]
    a, b = sorted(m for m in mods if floor_of(m) == "tasks"
                  and mods[m].name != "__init__.py")[:2]
    root = _planted(tmp_path, _module_file(a), f"\n\ndef _late():\n    import {b}\n")
    with open(root / _module_file(b), "a") as fh:
        fh.write(f"\n\ndef _later():\n    from {a.rpartition('.')[0]} import "
                 f"{a.rpartition('.')[2]}\n")
    found = circles(root)
    assert [a, b] in found, found
    assert f"{a} imports {b}" in circle_report([a, b], root)


def test_a_planted_sdk_import_in_the_domain_is_named(tmp_path):
    domain = _some("aeval")
    root = _planted(tmp_path, _module_file(domain), "\n\ndef _late():\n    import litellm\n")
    bad = domain_sdk_imports(root)
    assert len(bad) == 1 and f"{domain} (the domain) imports litellm" in bad[0], bad
