"""Running one shell command the way aeval runs every command: bash, a working directory, an
explicit environment (nothing inherited), a timeout that kills the whole process group, and
output capped so a noisy command cannot fill memory or an artifact."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BASH = ("bash", "-o", "pipefail", "-e", "-c")
# What every command gets even though nothing is inherited. PATH keeps the interpreter that
# runs aeval first, so `python` in a step is the one aeval was installed with.
BASE_ENV_KEYS = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "TERM")


def base_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The minimal environment of tool processes: PATH, locale, a private HOME, plus extra."""
    env = {k: os.environ[k] for k in BASE_ENV_KEYS if k in os.environ}
    py_bin = str(Path(sys.executable).parent)
    path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    if py_bin not in path.split(os.pathsep):
        path = py_bin + os.pathsep + path
    env.update(PATH=path, HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class CommandResult:
    command: str
    exit_code: int | None  # None: killed by the timeout
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def combined(self) -> str:
        """stdout then stderr, as a tool result shows them."""
        out = self.stdout
        if self.stderr:
            out += ("\n" if out and not out.endswith("\n") else "") + self.stderr
        if self.timed_out:
            out += f"\n[killed after {self.duration_s:.0f}s timeout]"
        return out


def cap_text(text: str, cap: int) -> tuple[str, bool]:
    """Keep the head and the tail of long text (errors are usually at the end)."""
    if len(text) <= cap:
        return text, False
    head = cap // 3
    tail = cap - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}", True


def run_command(command: str, cwd: Path, env: dict[str, str], timeout_s: float,
                cap: int = 16_000) -> CommandResult:
    """Run ``command`` with bash (-e -o pipefail). Never raises for the command's own failure."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [*BASH, command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    duration = time.monotonic() - start
    stdout, t1 = cap_text(out.decode("utf-8", "replace"), cap)
    stderr, t2 = cap_text(err.decode("utf-8", "replace"), cap)
    return CommandResult(command, None if timed_out else proc.returncode, stdout, stderr,
                         duration, timed_out, t1 or t2)
