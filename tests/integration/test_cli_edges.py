"""The command line as a new user meets it, in real subprocesses with a real embedded Prefect:
a run whose reader went away still exits with its gate code; a model that cannot be reached
is one line per case, not Prefect's ERROR lines and tracebacks; piped output is the same at
any COLUMNS; a narrow terminal gets a compact list, a wide one the table; start-up says that
Prefect is starting."""

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
    tails = [ln for ln in evidence if ln.strip().startswith("│")]
    # A3 (commands_succeeded) and S2 (the documented command) of each of the two cases, then
    # the end of the failed command's output under each case
    assert len(tails) == 2 and all(ln.strip() == "│ KeyError: 'segment_train'" for ln in tails)
    evidence = [ln for ln in evidence if ln not in tails]
    assert len(evidence) == 4 and all("segment_train --data" in ln for ln in evidence)
    assert sum(ln.strip().startswith("$ python3 $SKILL_DIR/scripts/run.py segment_train --data "
                                      "fixtures") for ln in lines) == 2
    assert "exit 1: 2 case(s) failed: segmentation/inference, segmentation/train" in lines
    assert all(ln == ln.rstrip() for ln in lines)  # no padding to a console width
    assert "segmentation/train [literal] A3" in narrow  # the runtime is not eaten as markup


def on_terminal(store: Path, columns: int) -> str:
    """`aeval show` on a terminal of ``columns`` columns: what the user sees."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
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
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode()).replace("\r", "")


def test_a_narrow_terminal_gets_a_compact_list(failed_run):
    _, store = failed_run
    text = on_terminal(store, 60)
    lines = text.splitlines()
    paths = [ln for ln in lines if ln.startswith(("artifacts: ", "report: "))]
    assert len(paths) == 2 and paths[1].endswith("report.html")  # whole, the terminal wraps
    assert lines and max(len(ln) for ln in lines if ln not in paths) <= 60
    # below 100 columns the compact list, not a table folded into `csv-s/tats` cells
    assert not any(ln.startswith(("┏", "┃", "│")) for ln in lines)
    assert "  segmentation/train [literal]: fail, 1 ungraded" in lines
    assert "  segmentation/inference [literal]: fail" in lines
    assert "segment_train'" in text and "exit 1: 2 case(s) failed" in text


def test_a_wide_terminal_gets_the_table(failed_run):
    _, store = failed_run
    text = on_terminal(store, 160)
    lines = text.splitlines()
    assert max(len(ln) for ln in lines if not ln.startswith(("artifacts: ", "report: "))) <= 160
    rows = [ln for ln in lines if ln.startswith("│")]
    assert len(rows) == 2 and not any("…" in ln for ln in rows)
    assert any(re.search(r"│ segmentation +│ train +│ literal +│ fail, 1 ungraded +│ "
                         r"17% \(1/6\) +│ – +│", ln) for ln in rows)


@pytest.fixture
def listening() -> str:
    """An endpoint that is there (it accepts connections) and that no call reaches: the
    model client stops at the missing key first."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


def test_a_missing_model_key_is_one_line_per_case_without_v(tmp_path, listening):
    """A missing model key used to print ~200 lines of Prefect ERROR lines and tracebacks."""
    env = user_env(AEVAL_MODEL="openai/scripted")
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.run(
        [AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"), "--runtime", "builtin",
         "--api-base", listening, "--out", str(tmp_path / "s")],
        capture_output=True, text=True, timeout=600, env=env)
    console = proc.stdout + proc.stderr
    assert proc.returncode == 3, console
    assert "Traceback" not in console
    assert "ERROR   |" not in console and "| ERROR" not in console
    assert "Missing credentials" in proc.stdout
    assert len([ln for ln in console.splitlines() if "Missing credentials" in ln]) == 1
    assert "hello-docs/smoke [builtin]: ERROR" in proc.stdout  # the progress line
    assert "exit 3: 1 case(s) hit an environment error: hello-docs/smoke" in proc.stdout


def test_verbose_shows_prefects_own_error_lines(tmp_path, listening):
    """The other side of the switch: with -v, Prefect's logs (and so the reason the test
    above is not vacuous) reach the console."""
    proc = subprocess.run(
        [AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"), "--runtime", "builtin",
         "--api-base", listening, "--out", str(tmp_path / "s"), "-v"],
        capture_output=True, text=True, timeout=600,
        env=user_env(AEVAL_MODEL="openai/scripted", OPENAI_API_KEY=""))
    assert proc.returncode == 3
    assert "| ERROR   |" in proc.stderr and "Traceback" in proc.stderr


def test_start_up_says_prefect_is_starting_before_anything_else(tmp_path):
    """The embedded Prefect server takes seconds to boot (more on a fresh PREFECT_HOME): the
    first line says so, and a second one when it is up, so a user does not stare at
    nothing."""
    env = user_env(PREFECT_HOME=str(tmp_path / "fresh-prefect-home"))
    proc = subprocess.run([AEVAL, "run", str(EXAMPLES / "skills" / "hello-docs"),
                           "--runtime", "literal", "--out", str(tmp_path / "s")],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"\d\d:\d\d:\d\d starting Prefect \(embedded server, stopped when "
                        r"this run ends\) …", lines[0])
    ready = next(i for i, ln in enumerate(lines) if re.search(r" Prefect ready \(\d+\.\d s\)$",
                                                               ln))
    planned = next(i for i, ln in enumerate(lines) if "1 skill(s), 1 case run(s)" in ln)
    assert 0 < ready < planned
