"""The options a command runs with: its flag when given, else the AEVAL_* setting, else the
setting's default — the same for every command (`aeval.deployments.cli.options`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval.deployments.cli.main import build_parser
from aeval.deployments.cli.options import resolve


@pytest.fixture(autouse=True)
def no_aeval_settings(monkeypatch):
    import os

    for name in [n for n in os.environ if n.startswith("AEVAL_")]:
        monkeypatch.delenv(name)


def options(*argv: str, **kw):
    return resolve(build_parser().parse_args(list(argv)), **kw)


def test_a_flag_wins_over_its_setting(monkeypatch):
    monkeypatch.setenv("AEVAL_MODEL", "env/model")
    monkeypatch.setenv("AEVAL_HOME", "/env/home")
    monkeypatch.setenv("AEVAL_CONCURRENCY", "9")
    monkeypatch.setenv("AEVAL_SANDBOX", "none")
    o = options("run", "--model", "flag/model", "--out", "/flag/out", "--concurrency", "2",
                "--sandbox", "require")
    assert (o.model, o.store, o.concurrency, o.sandbox) == (
        "flag/model", Path("/flag/out"), 2, "require")


def test_without_flags_the_settings_apply_and_then_their_defaults(monkeypatch):
    o = options("run")
    assert (o.model, o.store, o.concurrency, o.sandbox, o.keep_workspaces) == (
        None, Path(".aeval"), 4, "auto", False)
    assert o.runtimes == ["literal"] and o.grader_model is None
    monkeypatch.setenv("AEVAL_MODEL", "env/model")
    monkeypatch.setenv("AEVAL_KEEP_WORKSPACES", "1")
    o = options("run")
    assert o.runtimes == ["builtin"] and o.grader_model == "env/model" and o.keep_workspaces


def test_the_grader_is_the_one_named_else_the_model_and_none_with_no_grader(monkeypatch):
    monkeypatch.setenv("AEVAL_GRADER_MODEL", "env/grader")
    assert options("run", "--model", "m").grader_model == "env/grader"
    assert options("run", "--model", "m", "--grader-model", "g").grader_model == "g"
    no = options("sweep", "--model", "m", "--grader-model", "g", "--no-grader")
    assert no.grader_model is None and no.named_grader is None
    monkeypatch.delenv("AEVAL_GRADER_MODEL")
    assert options("run", "--model", "m").grader_model == "m"


def test_compare_has_a_row_per_model_and_agent_commands_default_to_builtin(monkeypatch):
    assert options("compare", ".", "--model", "a", "--model", "b").models == ["a", "b"]
    monkeypatch.setenv("AEVAL_MODEL", "env/model")
    assert options("compare", ".").models == ["env/model"]
    monkeypatch.delenv("AEVAL_MODEL")
    assert options("uplift", ".", default_runtimes=["builtin"]).runtimes == ["builtin"]
    assert options("show").store == Path(".aeval")
    regrade = options("regrade", "latest", "--grader-model", "a", "--grader-model", "b")
    assert regrade.named_grader is None  # its graders are the list it re-grades with
