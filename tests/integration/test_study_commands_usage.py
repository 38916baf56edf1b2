"""`aeval uplift`, `aeval triggers` and `aeval regrade` as a user meets them, in real
subprocesses: a runtime name that does not exist is one usage line (exit 2) before anything
runs, and `--help` says what each exits with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration

AEVAL = str(Path(sys.executable).parent / "aeval")
TEST_ONLY = ("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "PREFECT_SERVER_LOGGING_LEVEL", "COLUMNS")


def user_env(**extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k not in TEST_ONLY}
    env.update(AEVAL_RETRIES="0", OPENAI_API_KEY="placeholder", **extra)
    return env


def aeval(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([AEVAL, *args], capture_output=True, text=True, timeout=timeout,
                          env=user_env())


@pytest.mark.parametrize("command", ["uplift", "triggers"])
def test_an_unknown_runtime_is_one_usage_line_before_anything_runs(command, tmp_path):
    """It used to run every case against the missing runtime, retry each as an environment
    error, and exit 3 minutes later with one `unknown runtime` line per case."""
    proc = aeval(command, str(EXAMPLES / "skills" / "csv-stats"), "--runtime", "buitlin",
                 "--model", "openai/scripted", "--out", str(tmp_path / "s"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "buitlin" in lines[0] and "unknown runtime" in lines[0]
    assert "builtin" in lines[0]  # the valid names, to pick from
    assert not (tmp_path / "s").exists()  # nothing ran


@pytest.mark.parametrize("command, codes", [("uplift", "01234"), ("triggers", "0234"),
                                            ("regrade", "0234")])
def test_help_says_what_each_command_exits_with(command, codes):
    proc = aeval(command, "--help", timeout=60)
    assert proc.returncode == 0
    text = proc.stdout
    assert "%%" not in text  # argparse leaves a doubled percent sign as is in a raw text
    assert "exit codes" in text
    block = text[text.index("exit codes"):]
    for code in codes:
        assert f"\n  {code}  " in block, (code, block)



@pytest.mark.parametrize(("args", "flag"), [
    (["uplift", "--epochs", "101"], "--epochs"),
    (["triggers", "--epochs", "101"], "--epochs"),
    (["triggers", "--max-turns", "51"], "--max-turns"),
])
def test_a_value_out_of_range_is_one_usage_line(args, flag, tmp_path):
    """These were `aeval: internal error: ValidationError` (exit 4): a bug report for a typo."""
    proc = aeval(*args, str(EXAMPLES / "skills" / "csv-stats"), "--model", "openai/scripted",
                 "--out", str(tmp_path / "s"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert flag in line and ("100" in line or "50" in line), line
    assert "internal error" not in line


def test_triggers_with_a_distractors_folder_holding_no_skill_is_a_usage_error(tmp_path):
    """It ran every prompt with the skill alone and reported precision and recall that no
    distractor ever challenged."""
    (tmp_path / "empty").mkdir()
    proc = aeval("triggers", str(EXAMPLES / "skills" / "csv-stats"), "--distractors",
                 str(tmp_path / "empty"), "--model", "openai/scripted", "--out",
                 str(tmp_path / "s"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "--distractors" in line and "no SKILL.md" in line
