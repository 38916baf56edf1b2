"""Helpers shared by the adapters that drive an agent CLI as a subprocess (codex,
opencode, and claude-code's launcher): finding the pinned binary, its version, the CLI's
command line inside the attempt's sandbox, streaming its JSONL output under a timeout, the
executor prompt, and emitting parsed events."""

from __future__ import annotations

import collections
import contextlib
import fnmatch
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

from aeval import bounded_json
from aeval.adapters.runtimes.keyproxy import Grant, bridged
from aeval.errors import KilledFromOutside
from aeval.events import (
    EndEvent,
    ErrorEvent,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from aeval.isolation.shell import SIGKILL_STATUSES, Guard, gone_group, live_group, stopping
from aeval.runtime.protocol import EventRecorder, ExecutionRequest

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL_PREFIX = REPO_ROOT / ".ci" / "node_modules"
EVENT_TYPES: dict[str, type] = {
    c.model_fields["kind"].default: c
    for c in (MessageEvent, ToolCallEvent, ToolResultEvent, UsageEvent, ErrorEvent, EndEvent)
}


def find_cli(env_var: str, name: str) -> str | None:
    """The CLI binary: ``$env_var`` if set, else ``name`` on PATH, else the local prefix."""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit if Path(explicit).is_file() else None
    found = shutil.which(name)
    if found:
        return found
    local = LOCAL_PREFIX / "bin" / name
    return str(local) if local.is_file() else None


@cache
def cli_version(binary: str) -> str | None:
    """``binary --version``, first line, or None when it does not run. Run with a throwaway
    HOME and XDG dirs: some CLIs create their state dirs even for ``--version``."""
    with tempfile.TemporaryDirectory(prefix="aeval-cli-version-") as home:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
               "CODEX_HOME": home, "LANG": "C.UTF-8",
               **{f"XDG_{k}_HOME": home for k in ("CONFIG", "DATA", "CACHE", "STATE")}}
        try:
            proc = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                  timeout=60, stdin=subprocess.DEVNULL, env=env, cwd=home)
        except (OSError, subprocess.TimeoutExpired):
            return None
    lines = proc.stdout.strip().splitlines()
    return lines[0].strip() if proc.returncode == 0 and lines else None


def in_sandbox(request: ExecutionRequest, argv: list[str], env: dict[str, str],
               grant: Grant) -> list[str]:
    """The command line that starts the CLI ``argv`` (with ``env``) behind the key proxy
    grant's bridge (`aeval.adapters.runtimes.keyproxy.bridged`, its only way to the proxy), wholly
    inside the attempt's sandbox; unsandboxed, the bridge and the CLI run as they are. The
    grant's unix socket is bound into that sandbox alone; when the policy unshares the
    network, the bridge listens in the sandbox's own loopback."""
    sandbox = request.sandbox
    if sandbox is None or sandbox.name != "bwrap":
        return bridged(list(argv), grant)
    return sandbox.argv(bridged(list(argv), grant),  # type: ignore[call-arg]
                        request.workspace, env, binds=(grant.socket_path,))


def guard(request: ExecutionRequest) -> Guard | None:
    """The bound watched while the CLI runs (the attempt's disk bound), if its sandbox has
    one."""
    return getattr(request.sandbox, "guard", None)


def guard_launched(request: ExecutionRequest, pidfile: Path) -> Callable[[], str | None]:
    """The attempt's disk bound watched while a CLI runs that an SDK starts itself (through
    a launcher that writes its pid, which the sandbox's process keeps, to ``pidfile``):
    the pid is read once, as soon as it appears, without following a link, and over the
    bound that process (and with it the sandbox) is killed. Returns the function to call
    when the CLI has ended: why it went over the bound, or None."""
    g = guard(request)
    if g is None:
        return lambda: None
    done = threading.Event()
    stops: list[Callable[[], str | None]] = []

    def wait() -> None:
        while not done.wait(0.02):
            pid = _read_pid(pidfile)
            if pid is not None:
                stops.append(g(pid, partial(_kill_pid, pid)))
                return

    thread = threading.Thread(target=wait, name="aeval-disk-launched", daemon=True)
    thread.start()

    def stop() -> str | None:
        done.set()
        thread.join()
        return stops[0]() if stops else None

    return stop


def _read_pid(pidfile: Path) -> int | None:
    try:
        fd = os.open(pidfile, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, 32).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return int(text) if text.isdigit() and int(text) > 1 else None


def _kill_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def sandboxed(request: ExecutionRequest) -> bool:
    """Whether the attempt's commands (and so the CLI) run under bubblewrap."""
    return request.sandbox is not None and request.sandbox.name == "bwrap"


@dataclass(frozen=True)
class ProcessOutcome:
    """How a CLI process ended."""

    returncode: int | None
    timed_out: bool
    stopped: bool  # the record callback asked to stop (a limit was reached)
    stderr_tail: str
    wall_s: float
    exceeded: str | None = None  # the bound it went over, which killed it


class SessionTail:
    """The new complete lines of a JSONL file a CLI writes inside the attempt (its own session
    record), read as it grows: the first file matching ``pattern`` (one glob per folder
    level) under ``root``. The attempt's tools can write there, so nothing is followed: every
    folder and the file are opened with O_NOFOLLOW from their parent's descriptor, the file
    must be a regular one (never a FIFO), and at most `LIMIT` bytes are read. Only lines
    whose record ``keep`` accepts are returned."""

    LIMIT = 64 << 20
    LINE_LIMIT = 4 << 20

    def __init__(self, root: Path, pattern: tuple[str, ...],
                 keep: Callable[[dict[str, Any]], bool]):
        self.root, self.pattern, self.keep = Path(root), pattern, keep
        self._fd: int | None = None
        self._buffer = b""
        self._read = 0

    def _open(self) -> int | None:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.root, flags | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            for i, glob in enumerate(self.pattern):
                last = i == len(self.pattern) - 1
                with os.scandir(fd) as entries:
                    names = sorted(e.name for e in entries if fnmatch.fnmatchcase(e.name, glob)
                                   and (e.is_file(follow_symlinks=False) if last
                                        else e.is_dir(follow_symlinks=False)))
                if not names:
                    return None
                child = os.open(names[0], flags | (os.O_NONBLOCK if last else os.O_DIRECTORY),
                                dir_fd=fd)
                os.close(fd)
                fd = child
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            found, fd = fd, -1
            return found
        except OSError:
            return None
        finally:
            if fd >= 0:
                os.close(fd)

    def lines(self) -> list[str]:
        """Lines written since the last call (kept records only)."""
        if self._fd is None:
            self._fd = self._open()
            if self._fd is None:
                return []
        while self._read < self.LIMIT:
            try:
                chunk = os.read(self._fd, min(1 << 20, self.LIMIT - self._read))
            except OSError:
                break
            if not chunk:
                break
            self._read += len(chunk)
            self._buffer += chunk
        *complete, self._buffer = self._buffer.split(b"\n")
        if len(self._buffer) > self.LINE_LIMIT:
            self._buffer = b""  # a line too long to be a record: dropped
        out = []
        for raw in complete:
            try:
                record = bounded_json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict) and self.keep(record):
                out.append(json.dumps(record, ensure_ascii=False))
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def stream_jsonl(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                 raw_log: Path, on_record: Callable[[dict[str, Any]], bool],
                 pass_fds: tuple[int, ...] = (),
                 side: Callable[[], list[str]] | None = None,
                 guard: Guard | None = None) -> ProcessOutcome:
    """Run ``argv`` (stdin closed, own process group), append its stdout as is to ``raw_log``
    and hand each JSON object line to ``on_record``; a True answer stops the process. The
    timeout kills the whole process group. ``pass_fds`` are inherited by the process.
    ``side``: a second source of JSON lines (the CLI's session record, `SessionTail.lines`),
    asked before each stdout line and once the process has ended; its lines go to the raw
    log and ``on_record`` first, so raw log and events keep one order. ``guard``: a bound
    watched while it runs (`aeval.isolation.shell.Guard`): over it, the process group is
    killed and ``exceeded`` says why."""
    stopped = False

    def take(raw: Any, line: str) -> None:
        nonlocal stopped
        raw.write(line if line.endswith("\n") else line + "\n")
        raw.flush()
        text = line.strip()
        if stopped or not text.startswith("{"):
            return
        try:
            record = bounded_json.loads(text)
        except ValueError:
            return
        if isinstance(record, dict) and on_record(record):
            stopped = True
            kill()

    def drain_side(raw: Any) -> None:
        for line in side() if side is not None else ():
            take(raw, line)

    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, text=True, encoding="utf-8",
                            errors="replace", bufsize=1, pass_fds=pass_fds)
    live_group(proc.pid)  # killed with the run's other commands when it is stopped
    timed_out = threading.Event()

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def on_timeout() -> None:
        timed_out.set()
        kill()

    stop_guard = guard(proc.pid, kill) if guard is not None else None
    exceeded = None
    tail: collections.deque[str] = collections.deque(maxlen=60)
    drain = threading.Thread(target=lambda: tail.extend(proc.stderr), daemon=True)
    drain.start()
    timer = threading.Timer(timeout_s, on_timeout)
    timer.daemon = True
    timer.start()
    try:
        with raw_log.open("a", encoding="utf-8") as raw:
            for line in proc.stdout:
                drain_side(raw)
                take(raw, line)
            proc.wait()
            drain_side(raw)
    finally:
        timer.cancel()
        if stop_guard is not None:
            exceeded = stop_guard()
        if proc.poll() is None:
            kill()
            proc.wait()
        drain.join(timeout=5)
        gone_group(proc.pid)
    return ProcessOutcome(returncode=proc.returncode, timed_out=timed_out.is_set(),
                          stopped=stopped, stderr_tail="".join(tail)[-4000:],
                          wall_s=time.monotonic() - start, exceeded=exceeded)


def killed_from_outside(outcome: ProcessOutcome) -> bool:
    """The rule of `aeval.isolation.shell.outside_kill` for a runtime's CLI: it ended by
    SIGKILL (itself, or bubblewrap reporting it as 137) that aeval did not send (not its
    timeout, not a limit's stop, not a bound, not a run that is stopping)."""
    return (outcome.returncode in SIGKILL_STATUSES and not outcome.timed_out
            and not outcome.stopped and outcome.exceeded is None and not stopping())


def raise_if_killed_from_outside(name: str, outcome: ProcessOutcome,
                                 recorder: EventRecorder) -> None:
    """An agent CLI SIGKILLed from outside the case (an operator, the host's OOM killer) is
    an environment error, retried and never reused, as a literal step killed so is: raise
    `KilledFromOutside` (recorded as a transient error event first)."""
    if killed_from_outside(outcome):
        message = (f"{name} was killed by SIGKILL that neither the case nor aeval sent (exit "
                   f"{outcome.returncode}; an operator or the host's OOM killer): an "
                   "environment error, retried")
        recorder.error(message, transient=True, error_type=name)
        raise KilledFromOutside(message)


def executor_prompt(request: ExecutionRequest) -> str:
    """The executor rules with ``{skill_path}`` filled in (workspace-relative)."""
    rel = request.skill_dir.relative_to(request.workspace).as_posix()
    return request.system_prompt.replace("{skill_path}", rel)


def emit(recorder: EventRecorder, events: list[dict[str, Any]]) -> None:
    """Send parser output (``kind`` + fields) to the recorder."""
    for event in events:
        fields = dict(event)
        recorder.emit(EVENT_TYPES[fields.pop("kind")], **fields)


