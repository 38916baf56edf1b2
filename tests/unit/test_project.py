"""Project invariants: shipped schemas match the models, prompts exist, layers point one way."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from aeval.artifacts import SCHEMA_NAMES, json_schema
from aeval.prompts import PROMPTS, load_prompt

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["deployments", "flows", "tasks", "adapters", "aeval"]  # each imports only later ones


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_shipped_schema_is_generated_from_the_model(name):
    shipped = json.loads((ROOT / "eval_skill" / "schemas" / f"{name}.schema.json").read_text())
    assert shipped == json_schema(name), "run `aeval schema --write eval_skill/schemas`"


@pytest.mark.parametrize("name", PROMPTS)
def test_every_prompt_exists_and_is_not_empty(name):
    assert len(load_prompt(name)) > 200


def test_every_prompt_a_code_path_names_exists():
    names = set()
    for py in (p for layer in LAYERS for p in (ROOT / layer).rglob("*.py")):
        for node in ast.walk(ast.parse(py.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "load_prompt":
                arg = node.args[0]
                if isinstance(arg, ast.Constant):
                    names.add(arg.value)
    assert names and names <= set(PROMPTS)


def _layer(module: str) -> str:
    """The layer an absolute module name belongs to: ``aeval.flows.x`` -> flows, ``aeval.x``
    -> aeval (the domain), ``prefect.x`` -> prefect."""
    parts = module.split(".")
    if parts[0] == "aeval" and len(parts) > 1 and parts[1] in [*LAYERS, "eval_skill"]:
        return parts[1]
    return parts[0]


def _imports(py: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(py.read_text())):
        if isinstance(node, ast.Import):
            out |= {_layer(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(_layer(node.module))
            if node.module == "aeval":
                out |= {_layer(f"aeval.{a.name}") for a in node.names}
    return out


@pytest.mark.parametrize("layer", LAYERS)
def test_dependencies_point_one_way(layer):
    forbidden = set(LAYERS[: LAYERS.index(layer)])
    if layer == "aeval":
        forbidden |= {"prefect", "litellm", "openai", "anthropic", "gitlab", "claude_agent_sdk",
                      "pandas"}
    for py in (ROOT / layer).rglob("*.py"):
        bad = _imports(py) & forbidden
        assert not bad, f"{py.relative_to(ROOT)} imports {bad}"


ENGINE = ROOT / "tasks" / "_engine"
ENGINE_TOOLS = {"queue", "threading", "httpx", "distributed", "dask", "prefect_dask",
                "prefect.context", "prefect.client", "prefect.futures.wait"}
"""What the engine (`aeval.tasks._engine`) schedules, throttles and classifies with: a flow
that imports one of these is doing the engine's work instead of composing."""


def _modules_imported(py: Path) -> set[str]:
    """Every module ``py`` imports, by full dotted name (``from a import b`` is ``a.b`` too)."""
    out = set()
    for node in ast.walk(ast.parse(py.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_the_engine_sits_at_the_bottom_of_the_tasks_floor():
    """The case chain needs the engine (its API failure classification, its throttle), so the
    engine imports no other part of the tasks floor: no circle between it and a phase."""
    for py in ENGINE.rglob("*.py"):
        theirs = {m for m in _modules_imported(py)
                  if m.startswith("aeval.tasks.") and not m.startswith("aeval.tasks._engine")}
        assert not theirs, f"{py.relative_to(ROOT)} imports {theirs}"


def test_the_flows_compose_and_leave_the_engines_work_to_it():
    for py in (ROOT / "flows").rglob("*.py"):
        imported = _modules_imported(py)
        tools = {t for t in ENGINE_TOOLS if any(m == t or m.startswith(t + ".")
                                                for m in imported)}
        assert not tools, f"{py.relative_to(ROOT)} imports {tools}: the engine's tools"


def test_the_engine_and_its_servers_import_no_prefect_until_a_name_is_used():
    """The command line finds or starts aeval's Prefect server before Prefect is imported
    (its import costs seconds), so the engine's package and its servers import none."""
    import subprocess
    import sys

    code = ("import sys\nimport aeval.tasks._engine as engine\n"
            "import aeval.tasks._engine.servers.embedded, aeval.tasks._engine.servers.reused\n"
            "assert 'prefect' not in sys.modules, 'imported prefect'\n"
            "assert set(engine.__all__) <= set(dir(engine))\n"
            "engine.task_runner\nassert 'prefect' in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_layer_check_sees_namespaced_imports(tmp_path):
    py = tmp_path / "m.py"
    py.write_text("from aeval.flows.evaluate import evaluate\nimport aeval.tasks.case.grade\n"
                  "from aeval import adapters\nfrom aeval.run.store import RunStore\n")
    assert _imports(py) == {"flows", "tasks", "adapters", "aeval"}


def _unit(module: str, root: Path = ROOT) -> str | None:
    """The subpackage an absolute module name belongs to, within its floor: ``aeval.verdicts.
    judge`` -> ``aeval.verdicts``, ``aeval.tasks.case.grade`` -> ``aeval.tasks.case``; a module
    at the top of a floor (``aeval.errors``, ``aeval.tasks.progress``) is the floor itself.
    None outside aeval."""
    parts = module.split(".")
    if parts[0] != "aeval":
        return None
    floor = parts[:2] if len(parts) > 1 and parts[1] in [*LAYERS, "eval_skill"] else parts[:1]
    rest = parts[len(floor):]
    folder = root / (floor[1] if len(floor) > 1 else "aeval")
    if rest and (folder / rest[0]).is_dir():
        return ".".join([*floor, rest[0]])
    return ".".join(floor)


def _module_of(py: Path, root: Path = ROOT) -> str:
    parts = [p for p in py.relative_to(root).with_suffix("").parts if p != "__init__"]
    return ".".join(parts if parts[0] == "aeval" else ["aeval", *parts])


def _unit_edges(files: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """Which subpackage imports which, from every import in ``files`` (inside functions too;
    relative ones resolved; ``from a import b`` is an import of ``a`` and of ``a.b``). A
    program's entry (``__main__.py``, an ``if __name__ == "__main__":`` block) is imported by
    nothing, so what it imports closes no circle."""
    edges: dict[str, set[str]] = {}
    for py in (f for f in files if f.name != "__main__.py"):
        module = _module_of(py, root)
        package = module if py.name == "__init__.py" else module.rpartition(".")[0]
        src = _unit(module, root)
        tree = ast.parse(py.read_text())
        tree.body = [n for n in tree.body if not _main_guard(n)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            for dst in (_unit(name, root) for name in names):
                if src and dst and dst != src:
                    edges.setdefault(src, set()).add(dst)
    return edges


def _main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":``"""
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__"
                    for c in node.test.comparators))


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one subpackage, sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                found.append(sorted([*group, v]))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_circles_between_subpackages():
    """Within each floor the subpackages form a DAG: the domain's root modules (errors, events,
    exit_codes, prompts, settings) <- isolation <- skill <- artifacts <- verdicts <- runtime
    <- run, stats; a circle would make two concepts one."""
    files = [p for layer in LAYERS for p in (ROOT / layer).rglob("*.py")]
    assert _circles(_unit_edges(files)) == []


def test_the_circle_check_sees_a_circle(tmp_path):
    for name, text in {"aeval/skill/a.py": "from aeval.verdicts import b\n",
                       "aeval/verdicts/b.py": "from ..skill.a import x\n",
                       "aeval/errors.py": "import aeval.skill.a\n",
                       "aeval/verdicts/__main__.py": "import aeval.errors\n",
                       "aeval/verdicts/c.py": "if __name__ == '__main__':\n    import aeval\n"
                       }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = _unit_edges(sorted(tmp_path.rglob("*.py")), tmp_path)
    assert edges == {"aeval.skill": {"aeval.verdicts"}, "aeval.verdicts": {"aeval.skill"},
                     "aeval": {"aeval.skill"}}
    assert _circles(edges) == [["aeval.skill", "aeval.verdicts"]]


@pytest.mark.parametrize("name", ["adapters", "tasks", "flows", "deployments", "eval_skill"])
def test_the_install_adds_only_the_aeval_namespace(name, tmp_path):
    """Outside the checkout (whose folders are importable from its own root), the generic
    names belong to other projects: the install maps them under `aeval.` only."""
    import subprocess
    import sys

    code = (f"import importlib, sys\ntry:\n    importlib.import_module({name!r})\n"
            f"except ModuleNotFoundError:\n    pass\nelse:\n    sys.exit(3)\n"
            f"importlib.import_module('aeval.{name}')\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr or f"`import {name}` works: a top-level package leaked"


def test_the_distribution_has_a_free_name_and_the_command_stays_aeval():
    from importlib.metadata import distribution

    dist = distribution("aeval-skills")
    assert [ep.value for ep in dist.entry_points if ep.name == "aeval"] == [
        "aeval.deployments.program:run"]
    top = (dist.read_text("top_level.txt") or "aeval").split()
    assert top == ["aeval"]


def test_tool_processes_cannot_read_the_harness_environment(tmp_path):
    """As an unprivileged user, a child process (a tool call) cannot read the environment of
    the hardened aeval process, where the model key lives."""
    import os
    import shutil
    import subprocess
    import sys

    if not shutil.which("setpriv") or os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user with setpriv")
    # the unprivileged user may not reach the checkout (a clone under a 0700 folder): it gets
    # aeval's hardening module, as is, in a folder it can read
    import tempfile

    from aeval.isolation import hardening

    shared = Path(tempfile.mkdtemp(prefix="aeval-hardening-"))
    shared.chmod(0o755)
    shutil.copy(hardening.__file__, shared / "aeval_hardening.py")
    (shared / "aeval_hardening.py").chmod(0o644)
    code = ("import os, subprocess, sys; from aeval_hardening import harden_process; "
            "harden and harden_process(); "
            "r = subprocess.run(['cat', f'/proc/{os.getpid()}/environ'], capture_output=True); "
            "sys.exit(0 if b'sk-canary' in r.stdout else 7)")
    base = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
            sys._base_executable, "-c"]
    env = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-canary", "HOME": str(shared),
           "PYTHONPATH": str(shared)}
    try:
        unhardened = subprocess.run([*base, "harden = False; " + code], env=env, cwd=shared)
        hardened = subprocess.run([*base, "harden = True; " + code], env=env, cwd=shared)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    assert unhardened.returncode == 0  # the leak is real without hardening
    assert hardened.returncode == 7


def test_runtimes_command_lists_every_runtime_with_its_install_command(capsys):
    from aeval.adapters import RUNTIMES, runtime_class
    from aeval.deployments.cli.main import main

    assert main(["runtimes"]) == 0
    out = capsys.readouterr().out
    for name in RUNTIMES:
        line = next(ln for ln in out.splitlines() if ln.startswith(name + "  "))
        assert runtime_class(name).install_hint in line
    assert "pip install 'aeval-skills[claude]'" in out


def test_runtimes_command_imports_no_sdk():
    """`aeval runtimes` answers at once: it finds the SDKs without importing them (litellm
    and claude-agent-sdk each take seconds to import)."""
    import subprocess
    import sys

    code = ("import sys, io, contextlib\nfrom aeval.deployments.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['runtimes']) == 0\n"
            "heavy = {'litellm', 'claude_agent_sdk', 'prefect', 'pandas'} & set(sys.modules)\n"
            "sys.exit(f'imported {sorted(heavy)}' if heavy else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
