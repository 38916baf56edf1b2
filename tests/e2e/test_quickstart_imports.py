"""The quickstart is fast where users are: `aeval run <marketplace> --runtime literal` imports
no model SDK (litellm, openai, anthropic, claude-agent-sdk and what they bring), and an
install without the ``models`` extra runs it; asking such an install for a model is one line
naming the extra, before anything starts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.e2e

# the provider SDKs and the heavy packages only they bring in
HEAVY = ("litellm", "openai", "anthropic", "claude_agent_sdk", "tiktoken", "tokenizers",
         "huggingface_hub", "boto3", "botocore", "aiohttp")
# `aeval` as its console script starts it, in this interpreter; at exit it writes which
# top-level modules the process imported
AEVAL = """
import atexit, json, sys
def modules():
    with open({out!r}, "w") as f:
        json.dump(sorted({{m.split(".")[0] for m, v in sys.modules.items() if v}}), f)
atexit.register(modules)
sys.modules.update(dict.fromkeys({blocked!r}))  # None: `import` fails as for a missing package
sys.argv = ["aeval", *{argv!r}]
from aeval.deployments.program import run
run()
"""


def aeval(tmp_path: Path, *argv: str, blocked: tuple[str, ...] = (),
          env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`aeval ARGV` in a fresh process (working folder tmp_path, no warm process); with
    ``blocked`` packages made uninstalled. Returns the process and the modules it imported."""
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    code = AEVAL.format(out=str(out), blocked=blocked, argv=list(argv))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=900,
                          env={**os.environ, "AEVAL_WARM": "0", "COLUMNS": "200",
                               **(env or {})})
    return proc, set(json.loads(out.read_text())) if out.exists() else set()


def test_the_literal_quickstart_imports_no_model_sdk(tmp_path):
    proc, imported = aeval(tmp_path, "run", str(EXAMPLES), "--runtime", "literal")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"^exit 1: 4 case\(s\) failed: invoice-totals/skill-md, ", proc.stdout,
                     re.M)
    assert re.search(r"^\S+ hello-docs/smoke \[literal\]: PASS$", proc.stdout, re.M)
    assert "prefect" in imported and "aeval" in imported  # the record is of the whole run
    assert sorted(imported & set(HEAVY)) == []


def test_an_install_without_the_models_extra_runs_the_literal_runtime(tmp_path):
    proc, imported = aeval(tmp_path, "run", str(EXAMPLES / "skills" / "csv-stats"),
                           "--runtime", "literal", blocked=HEAVY)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"^\S+ csv-stats/stats \[literal\]: PASS$", proc.stdout, re.M)
    assert "Traceback" not in proc.stderr
    assert "prefect" in imported and not imported & set(HEAVY)


@pytest.mark.parametrize("argv, option", [
    (["--runtime", "builtin", "--model", "openai/gpt-4o"], "--model openai/gpt-4o"),
    (["--runtime", "literal", "--grader-model", "anthropic/claude-sonnet-4-5"],
     "--grader-model anthropic/claude-sonnet-4-5"),
    (["--runtime", "claude-code", "--model", "claude-sonnet-4-5"], "--model claude-sonnet-4-5"),
])
def test_a_model_without_the_models_extra_is_one_line_naming_it(tmp_path, argv, option):
    """Refused as a usage error (exit 2) before Prefect starts: a retry cannot install it."""
    keys = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"}
    proc, imported = aeval(tmp_path, "run", str(EXAMPLES / "skills" / "hello-docs"), *argv,
                           blocked=("litellm",), env=keys)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"aeval run: {option} needs the model client (litellm), not installed: "
                     "pip install 'aeval-skills[models]'"], proc.stderr
    assert "prefect" not in imported and not (tmp_path / ".aeval").exists()


def test_runtimes_names_the_models_extra_for_the_builtin_agent(tmp_path):
    proc, _ = aeval(tmp_path, "runtimes", blocked=("litellm",))
    assert proc.returncode == 0, proc.stderr
    builtin = next(ln for ln in proc.stdout.splitlines() if ln.startswith("builtin "))
    assert "pip install 'aeval-skills[models]'" in builtin
    literal = next(ln for ln in proc.stdout.splitlines() if ln.startswith("literal "))
    assert "models" not in literal


def test_init_and_regrade_with_a_model_name_the_extra_too(tmp_path):
    skill = tmp_path / "hello-docs"
    shutil.copytree(EXAMPLES / "skills" / "hello-docs", skill)
    before = sorted(p.name for p in skill.iterdir())
    proc, _ = aeval(tmp_path, "init", str(skill), "--model", "openai/gpt-4o",
                    blocked=("litellm",), env={"OPENAI_API_KEY": "sk-test"})
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stderr.strip() == ("aeval init: --model openai/gpt-4o needs the model client "
                                   "(litellm), not installed: pip install 'aeval-skills[models]'")
    assert sorted(p.name for p in skill.iterdir()) == before  # nothing written
    proc, _ = aeval(tmp_path, "regrade", "latest", "--grader-model", "openai/gpt-4o",
                    blocked=("litellm",))
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stderr.strip() == ("aeval regrade: --grader-model openai/gpt-4o needs the model "
                                   "client (litellm), not installed: "
                                   "pip install 'aeval-skills[models]'")
