"""No aeval module reads a setting or the environment when it is imported: the warm process
(`aeval.deployments.servers.warm`) imports them once, with a scrubbed environment, and forks a child
per invocation, whose settings (AEVAL_MODEL_CONCURRENCY, AEVAL_SANDBOX, ...) exist only after
the fork. A value read at import would be the warm process's, not the user's: the model
semaphore made at import ran a `AEVAL_MODEL_CONCURRENCY=8` run with 4 slots."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("aeval", "adapters", "tasks", "flows", "deployments")
ALLOWED = {
    # a default the warm process's children set again (`_Warm.defaults`)
    ("adapters/llm.py", "os.environ.setdefault('LITELLM_LOCAL_MODEL_COST_MAP', 'True')"),
}


def import_time_nodes(tree: ast.Module):
    """The statements that run at import: the module's and its classes' bodies, not
    functions'."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.ClassDef):
            todo.extend(node.body)
            todo.extend(node.decorator_list)
            continue
        yield node


def reads(node: ast.AST) -> list[str]:
    """``Settings()``, ``os.environ`` and ``os.getenv`` in ``node``, outside function bodies."""
    found, todo = [], [node]
    while todo:
        sub = todo.pop()
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        called = ast.unparse(sub.func) if isinstance(sub, ast.Call) else ""
        if called in ("Settings", "os.getenv") or (
                isinstance(sub, ast.Attribute) and ast.unparse(sub) == "os.environ"):
            found.append(ast.unparse(sub))
        todo.extend(ast.iter_child_nodes(sub))
    return found


def test_no_module_reads_settings_or_the_environment_at_import():
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            for node in import_time_nodes(ast.parse(path.read_text())):
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                    continue  # a docstring
                for hit in reads(node):
                    if (rel, ast.unparse(node)) not in ALLOWED:
                        offenders.append(f"{rel}:{node.lineno}: {hit}")
    assert not offenders, "read at import (a warm child would get the warm process's):\n" \
        + "\n".join(sorted(set(offenders)))


def test_the_rule_sees_a_setting_read_at_import():
    tree = ast.parse("import os\nfrom aeval.settings import Settings\n"
                     "LIMIT = Settings().model_concurrency\nHOME = os.environ.get('HOME')\n"
                     "def later():\n    return Settings()\n")
    hits = [h for n in import_time_nodes(tree) for h in reads(n)]
    assert "Settings()" in hits and any("os.environ" in h for h in hits)
    assert len([h for h in hits if h == "Settings()"]) == 1  # not the one in later()
