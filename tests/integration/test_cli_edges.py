"""The command line as a new user meets it, in real subprocesses with a real embedded Prefect:
a run whose reader went away still exits with its gate code; a model that cannot be reached
is one line per case, not Prefect's ERROR lines and tracebacks; piped output is the same at
any COLUMNS, and a narrow terminal folds instead of cutting."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration

AEVAL = str(Path(sys.executable).parent / "aeval")
# What the conftest sets for in-process tests; a user's shell has none of it.
TEST_ONLY = ("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "PREFECT_SERVER_LOGGING_LEVEL", "COLUMNS")


def user_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in TEST_ONLY}
    env.update(AEVAL_RETRIES="0", **extra)
    return env


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """`aeval run` of the example segmentation skill (its docs name an action its runner does
    not know: both cases fail, gate 1) with stdout's reader already gone, as in
    `aeval run ... | head -1` once head has exited."""
    root = tmp_path_factory.mktemp("cli-edges")
    skill = root / "mp" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", skill)
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([AEVAL, "run", str(skill), "--out", str(root / "store")],
                              stdout=w, stderr=subprocess.PIPE, text=True, timeout=600,
                              env=user_env())
    finally:
        os.close(w)
    return proc, root / "store"


def test_a_run_whose_stdout_closed_finishes_and_exits_with_its_gate_code(failed_run):
    proc, store = failed_run
    assert "Traceback" not in proc.stderr and "Logging error" not in proc.stderr, proc.stderr
    assert "BrokenPipe" not in proc.stderr
    (run_dir,) = (store / "runs").iterdir()
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "finished" and run["gate"]["exit_code"] == 1
    assert proc.returncode == 1
    assert (run_dir / "segmentation" / "literal" / "train" / "grading.json").is_file()


def show(store: Path, columns: str) -> str:
    proc = subprocess.run([AEVAL, "show", "--out", str(store)], capture_output=True, text=True,
                          timeout=120, env=user_env(COLUMNS=columns))
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    return proc.stdout


def test_piped_output_is_the_same_at_any_width_and_never_wraps(failed_run):
    _, store = failed_run
    narrow, wide = show(store, "60"), show(store, "250")
    assert narrow == wide
    lines = narrow.splitlines()
    # each table row whole on one line, every evidence line whole, the gate on one line
    assert any(re.search(r"segmentation .*train .*literal .*fail, 1 ungraded .*per-skill", ln)
               for ln in lines)
    evidence = [ln for ln in lines if "KeyError: 'segment_train'" in ln]
    # A3 (commands_succeeded) and S2 (the documented command) of each of the two cases
    assert len(evidence) == 4 and all("segment_train --data" in ln for ln in evidence)
    assert "exit 1: 2 case(s) failed: segmentation/inference, segmentation/train" in lines
    assert all(ln == ln.rstrip() for ln in lines)  # no padding to a console width
    assert "segmentation/train [literal] A3" in narrow  # the runtime is not eaten as markup


def test_a_narrow_terminal_folds_the_table_instead_of_cutting_it(failed_run):
    _, store = failed_run
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 60, 0, 0))
    env = user_env(TERM="xterm", NO_COLOR="1")
    proc = subprocess.Popen([AEVAL, "show", "--out", str(store)], stdout=slave, stderr=slave,
                            env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=120) == 1
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode()).replace("\r", "")
    lines = text.splitlines()
    assert lines and max(len(ln) for ln in lines) <= 60
    rows = [ln for ln in lines if ln.startswith(("│", "┃"))]
    assert len(rows) > 3 and not any("…" in ln for ln in rows)  # folded, no cell cut short
    assert "segment_train'" in text and "exit 1: 2 case(s) failed" in text


def test_an_unreachable_model_is_one_line_per_case_without_v(tmp_path):
    """A missing model key used to print ~200 lines of Prefect ERROR lines and tracebacks."""
    env = user_env(AEVAL_MODEL="openai/scripted")
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.run(
        [AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"), "--runtime", "builtin",
         "--api-base", "http://127.0.0.1:9", "--out", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=600, env=env)
    console = proc.stdout + proc.stderr
    assert proc.returncode == 3, console
    assert "Traceback" not in console
    assert "ERROR   |" not in console and "| ERROR" not in console
    assert "Missing credentials" in proc.stdout
    assert len([ln for ln in console.splitlines() if "Missing credentials" in ln]) == 1
    assert "hello-docs/smoke [builtin]: ERROR" in proc.stdout  # the progress line
    assert "exit 3: 1 case(s) hit an environment error: hello-docs/smoke" in proc.stdout


def test_verbose_shows_prefects_own_error_lines(tmp_path):
    """The other side of the switch: with -v, Prefect's logs (and so the reason the test
    above is not vacuous) reach the console."""
    proc = subprocess.run(
        [AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"), "--runtime", "builtin",
         "--api-base", "http://127.0.0.1:9", "--out", str(tmp_path / "s"), "-v"],
        capture_output=True, text=True, timeout=600,
        env=user_env(AEVAL_MODEL="openai/scripted", OPENAI_API_KEY=""))
    assert proc.returncode == 3
    assert "| ERROR   |" in proc.stderr and "Traceback" in proc.stderr
