"""Misconfiguration is a usage error before anything runs: exit 2, one line, in under 5 s,
through the installed `aeval` command (it was 7 "environment errors" after ~27 s, exit 3,
retried by the CI template and then allowed to fail)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration
AEVAL = str(Path(sys.executable).parent / "aeval")
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AEVAL_MODEL", "AEVAL_GRADER_MODEL",
        "AEVAL_API_BASE")


@pytest.mark.parametrize(("args", "expected"), [
    (["run", "MP", "--runtime", "builtin"], "aeval run: --runtime builtin needs a model"),
    (["run", "MP", "--model", "openai/gpt-4o"],
     "aeval run: --model openai/gpt-4o: OPENAI_API_KEY is not set"),
    (["run", "MP", "--runtime", "claude-code", "--model", "claude-sonnet-4-5"],
     "aeval run: --model claude-sonnet-4-5: ANTHROPIC_API_KEY is not set"),
    (["run", "MP", "--grader-model", "anthropic/claude-haiku-4-5"],
     "aeval run: --grader-model anthropic/claude-haiku-4-5: ANTHROPIC_API_KEY is not set"),
    (["sweep", "MP", "--runtime", "literall"], "aeval sweep: --runtime literall: unknown"),
    (["sweep", "MP", "--runtime", "codex"], "aeval sweep: --runtime codex needs a model"),
    (["compare", "MP", "--runtime", "builtin", "--runtime", "codex", "--model",
      "openai/gpt-4o"], "aeval compare: --model openai/gpt-4o: OPENAI_API_KEY is not set"),
    (["uplift", "MP", "--model", "openai/gpt-4o"], "aeval uplift: --model openai/gpt-4o: "
                                                   "OPENAI_API_KEY is not set"),
    (["trigger-accuracy", "MP", "--model", "openai/gpt-4o"],
     "aeval trigger-accuracy: --model openai/gpt-4o"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_misconfiguration_exits_2_in_one_line_under_5_seconds(args, expected, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    argv = [str(EXAMPLES) if a == "MP" else a for a in args] + ["--out", str(tmp_path / "s")]
    t0 = time.monotonic()
    proc = subprocess.run([AEVAL, *argv], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), proc.stderr
    assert took < 5, f"{took:.1f} s"
    assert not (tmp_path / "s" / "runs").exists(), "nothing may run"
