"""A Prefect server that does not come up is the machine's condition, not aeval's bug: `aeval
run` whose server is stalled (stopped with SIGSTOP as soon as it starts: a machine too busy to
give it any CPU) ends with exit 3 and one line naming the setting to raise, and leaves no
process it started behind: neither the server nor a warm process for the next invocation."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from aeval.tasks._engine.servers.home import STARTUP_TIMEOUT_VAR

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

AEVAL = str(Path(sys.executable).parent / "aeval")
SERVERS = (b"aeval.deployments.servers.server_app:create_app",  # the embedded one
           b"aeval.deployments.servers.prefect_server")  # the reused one


def _of_home(home: Path) -> list[tuple[int, bytes]]:
    """(pid, command line) of every live process whose environment names ``home``."""
    mark = f"PREFECT_HOME={home}".encode() + b"\0"
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if mark not in fh.read() + b"\0":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if cmdline:  # a zombie has none: it is gone, waiting to be reaped
            out.append((int(pid), cmdline))
    return out


def _stall_servers(home: Path, done: threading.Event, stopped: list[int]) -> None:
    """SIGSTOP every Prefect server of ``home`` as soon as it appears, until ``done``."""
    while not done.is_set():
        for pid, cmdline in _of_home(home):
            if pid not in stopped and any(s in cmdline for s in SERVERS):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
        time.sleep(0.01)


@pytest.mark.parametrize("mode", ["embedded", "reuse"])
def test_a_server_that_does_not_come_up_is_exit_3_naming_the_setting(tmp_path, mode):
    from tests.conftest import EXAMPLES

    home = tmp_path / "ph"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.pop("CI", None)
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               AEVAL_SANDBOX="none", AEVAL_SERVER=mode, **{STARTUP_TIMEOUT_VAR: "3"})
    done, stopped = threading.Event(), []
    staller = threading.Thread(target=_stall_servers, args=(home, done, stopped), daemon=True)
    staller.start()
    try:
        r = subprocess.run([AEVAL, "run", str(EXAMPLES / "skills" / "invoice-totals"),
                            "--runtime", "literal", "--out", str(tmp_path / "store"), "-q"],
                           env=env, capture_output=True, text=True, timeout=400,
                           stdin=subprocess.DEVNULL)
        done.set()
        staller.join()
        assert stopped, "no server was started (nothing was stalled)"
        assert r.returncode == 3, r.stderr[-3000:]
        assert "internal error" not in r.stderr
        (line,) = [ln for ln in r.stderr.splitlines() if STARTUP_TIMEOUT_VAR in ln]
        assert line.startswith("aeval: ") and "did not answer" in line
        deadline = time.monotonic() + 30  # SIGTERM acted on: a moment, not a timer
        while (left := _of_home(home)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"processes aeval started outlived it: {left}"
    finally:
        done.set()
        for pid, _ in _of_home(home):
            for sig in (signal.SIGKILL, signal.SIGCONT):
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
