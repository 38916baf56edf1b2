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


def _imports(py: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(py.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
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


def test_tool_processes_cannot_read_the_harness_environment(tmp_path):
    """As an unprivileged user, a child process (a tool call) cannot read the environment of
    the hardened aeval process, where the model key lives."""
    import os
    import shutil
    import subprocess
    import sys

    if not shutil.which("setpriv") or os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user with setpriv")
    code = ("import os, subprocess, sys; from aeval.hardening import harden_process; "
            "harden and harden_process(); "
            "r = subprocess.run(['cat', f'/proc/{os.getpid()}/environ'], capture_output=True); "
            "sys.exit(0 if b'sk-canary' in r.stdout else 7)")
    base = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
    env = {"PATH": os.environ["PATH"], "OPENAI_API_KEY": "sk-canary", "HOME": str(tmp_path),
           "PYTHONPATH": str(ROOT)}
    unhardened = subprocess.run([*base, "harden = False; " + code], env=env, cwd=tmp_path)
    hardened = subprocess.run([*base, "harden = True; " + code], env=env, cwd=tmp_path)
    assert unhardened.returncode == 0  # the leak is real without hardening
    assert hardened.returncode == 7


def test_runtimes_command_lists_every_runtime_with_its_install_command(capsys):
    from adapters import RUNTIMES, runtime_class
    from deployments.cli import main

    assert main(["runtimes"]) == 0
    out = capsys.readouterr().out
    for name in RUNTIMES:
        assert name in out
        assert runtime_class(name).install_hint.split()[0] in out
    assert "pip install 'aeval[claude]'" in out
