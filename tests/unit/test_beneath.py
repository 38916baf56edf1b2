"""aeval's own process reads an attempt's files without following a path the attempt made:
a workspace, a folder above the skill copy or an output swapped for a symlink (to a host
folder, or to the hidden original skill) is refused, never followed. And the domain's
modules import each other one way (no import circle, TYPE_CHECKING imports included)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from aeval.isolation.workspace import collect_outputs, diff_skill, prepare_workspace
from aeval.skill import contract as c
from aeval.verdicts.checks import CheckContext, run_check
from tests.conftest import EXAMPLES, ROOT


def attempt(tmp_path: Path):
    original = tmp_path / "marketplace" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", original)
    ws = prepare_workspace(tmp_path / "attempt-1", original, "segmentation", ".agents/skills",
                           ["fixtures/"])
    host = tmp_path / "host"
    host.mkdir()
    (host / "shadow.txt").write_text("root:HOST-SECRET:0:0\n")
    return ws, original, host


def test_a_workspace_swapped_for_a_symlink_has_no_outputs(tmp_path):
    ws, _, host = attempt(tmp_path)
    before = ws.snapshot()
    (ws.root / "workspace").rename(ws.root / "aside")
    (ws.root / "workspace").symlink_to(host)
    out = collect_outputs(ws, before, tmp_path / "collected")
    assert out == [] and not (tmp_path / "collected" / "shadow.txt").exists()
    assert ws.walk_cut and "could not be opened" in ws.walk_cut[0]


def test_an_output_folder_swapped_for_a_symlink_is_not_followed(tmp_path):
    ws, _, host = attempt(tmp_path)
    before = ws.snapshot()
    (ws.path / "outputs").symlink_to(host)
    (ws.path / "result.txt").write_text("mine\n")
    out = collect_outputs(ws, before, tmp_path / "collected")
    assert [o.path for o in out] == ["result.txt"]
    assert not list((tmp_path / "collected").rglob("shadow.txt"))


def test_the_skill_path_swapped_for_a_link_to_the_original_is_not_read_as_the_copy(tmp_path):
    """The real copy is moved away and edited; `.agents/skills` now points at the original
    skill, which is unchanged. Following it, Δ would be empty."""
    ws, original, _ = attempt(tmp_path)
    skills = ws.path / ".agents" / "skills"
    skills.rename(ws.path / "aside")
    (ws.path / "aside" / "segmentation" / "SKILL.md").write_text("edited\n")
    skills.symlink_to(original.parent)
    t = ws.tree()
    assert t.entries == {} and t.root_id is None and "not a folder" in t.cut[0]
    changes = diff_skill(original, ws.skill_dir, ws.skill_manifest, t.entries, ws.root)
    assert {ch.change for ch in changes} == {"deleted"} and len(changes) == len(
        ws.skill_manifest)


def test_file_checks_resolve_inside_the_workspace_only(tmp_path):
    ws, _, host = attempt(tmp_path)
    (ws.path / "outputs").mkdir()
    (ws.path / "outputs" / "model.json").write_text('{"epochs": 2}')
    (ws.path / "latest.json").symlink_to("outputs/model.json")  # inside: followed
    (ws.path / "abs.json").symlink_to(ws.path / "outputs" / "model.json")
    (ws.path / "escape.txt").symlink_to(host / "shadow.txt")
    ctx = CheckContext(workspace=ws.path, events=[], env={})
    ok = run_check(json_path("latest.json", query="$.epochs", equals=2), ctx)
    assert ok.passed, ok.evidence
    assert run_check(json_path("abs.json", query="$.epochs", equals=2), ctx).passed
    r = run_check(contains("escape.txt", pattern="HOST-SECRET"), ctx)
    assert not r.passed and "HOST-SECRET" not in r.evidence
    # the workspace itself swapped for a symlink to a folder holding what the checks want
    (host / "outputs").mkdir()
    (host / "outputs" / "model.json").write_text('{"epochs": 2}')
    (ws.root / "workspace").rename(ws.root / "aside")
    (ws.root / "workspace").symlink_to(host)
    for check in (exists("outputs/model.json"),
                  contains("shadow.txt", pattern="HOST-SECRET"),
                  json_path("outputs/model.json", query="$.epochs", equals=2)):
        r = run_check(check, ctx)
        assert not r.passed and "HOST-SECRET" not in r.evidence, (check, r)


def json_path(path: str, **kw) -> c.JsonPath:
    return c.JsonPath(type="json_path", path=path, **kw)


def contains(path: str, **kw) -> c.FileContains:
    return c.FileContains(type="file_contains", path=path, **kw)


def exists(path: str) -> c.FileExists:
    return c.FileExists(type="file_exists", path=path)


def _domain_imports(py: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(py.read_text())):  # TYPE_CHECKING blocks included
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("aeval."):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("aeval.")}
    return out


def test_the_domain_has_no_import_circle():
    modules = {}
    for py in (ROOT / "aeval").rglob("*.py"):
        name = ".".join(("aeval", *py.relative_to(ROOT / "aeval").with_suffix("").parts))
        modules[name.removesuffix(".__init__")] = _domain_imports(py)

    def owner(mod: str) -> str | None:
        while mod not in modules and "." in mod:
            mod = mod.rsplit(".", 1)[0]
        return mod if mod in modules else None

    graph = {m: {o for d in deps if (o := owner(d)) and o != m} for m, deps in modules.items()}
    assert "aeval.isolation.shell" not in graph["aeval.isolation.sandbox"] or \
        "aeval.isolation.sandbox" not in graph["aeval.isolation.shell"]
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            assert state.get(d) != 1, "import circle: " + " -> ".join([*path, d])
            if d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
