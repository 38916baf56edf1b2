"""A CI that lacks a tool it installs is not green: under ``AEVAL_TESTS_STRICT_SKIPS=1`` (set by
.ci/run) a test skipped for want of bubblewrap fails with its reason; a skip no install can
lift (the reader's sandbox is offline) stays a skip. A real inner pytest run with the plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the inner suite: a skip for a missing install, one for a missing install in the test's
# body, one no install lifts, an expected failure and a pass (its skips are its subject)
TESTS = '''
import shutil
import pytest

BWRAP = shutil.which("bwrap-missing-on-this-runner")

@pytest.mark.skipif(BWRAP is None, reason="bubblewrap (bwrap) is not installed")
def test_a_sandboxed_case():
    pass

def test_prefect_on_postgres():
    pytest.skip("PostgreSQL is not installed (apt-get install postgresql): no initdb on PATH")

def test_a_documented_npx_tool():
    pytest.skip("P75 skills/thumbnail-brief/SKILL.md:11 runs a tool through npx/bunx: "
                "it needs the network")

@pytest.mark.xfail(reason="a known defect", strict=False)
def test_a_known_defect():
    assert False

def test_a_passing_one():
    pass
'''


def inner(tmp_path: Path, strict: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_inner.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k != "AEVAL_TESTS_STRICT_SKIPS"}
    env["PYTHONPATH"] = str(ROOT)
    if strict is not None:
        env["AEVAL_TESTS_STRICT_SKIPS"] = strict
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.strict_skips", "-rA",
                           "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path),
                           str(tmp_path / "test_inner.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_under_ci_a_missing_tool_fails_the_run_with_its_reason(tmp_path):
    r = inner(tmp_path, "1")
    assert r.returncode == 1, r.stdout + r.stderr
    # a skip mark is decided at set-up: pytest reports the set-up failed (an error)
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed, 1 error" in r.stdout, r.stdout
    failed = sorted(ln.split()[1] for ln in r.stdout.splitlines()
                    if ln.startswith(("FAILED", "ERROR")))
    assert failed == ["test_inner.py::test_a_sandboxed_case",
                      "test_inner.py::test_prefect_on_postgres"], r.stdout
    assert ("skipped, but AEVAL_TESTS_STRICT_SKIPS=1 (.ci/run installs what the tests need): "
            "bubblewrap (bwrap) is not installed") in r.stdout, r.stdout
    assert "SKIPPED" in r.stdout and "it needs the network" in r.stdout


def test_off_ci_the_same_skips_are_skips(tmp_path):
    for value in (None, "0"):
        r = inner(tmp_path, value)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "1 passed, 3 skipped, 1 xfailed" in r.stdout, r.stdout
