"""Running one shell command the way aeval runs every command: bash, a working directory, an
explicit environment (nothing inherited), a timeout that kills the whole process group, and
output capped so a noisy command cannot fill memory or an artifact."""

from __future__ import annotations

import contextlib
import fcntl
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aeval.isolation.redact import Redactor


def _host_bash() -> str:
    """bash by absolute path, found on aeval's own PATH once: a command's environment (whose
    PATH may hold folders the attempt writes) never chooses the shell aeval starts."""
    found = shutil.which("bash", path=os.environ.get("PATH", os.defpath))
    return str(Path(found).resolve()) if found else "/bin/bash"


# bash and its options. The command is not its -c argument but a script bash reads from a
# descriptor (`command_file`, `bash_argv`): Linux refuses a single argument longer than
# 128 KiB (E2BIG), and a long doc block or step is the skill's text, not an environment error.
BASH = (_host_bash(), "-o", "pipefail", "-e", "-c")
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


@contextlib.contextmanager
def command_file(command: str) -> Iterator[int]:
    """``command`` as a script bash reads from a descriptor: an in-memory file (memfd) sealed
    against writes, with no name in any folder, so no process can swap or change it; where
    memfds are missing, an unnamed temporary file. Yields the descriptor (close-on-exec in
    aeval: pass it with ``pass_fds``); `bash_argv` runs it."""
    data = command.encode("utf-8", "surrogateescape")
    seals = getattr(fcntl, "F_ADD_SEALS", None)
    try:
        fd = os.memfd_create("aeval-command", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):
        fd, seals = os.dup(_unnamed_file()), None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if seals is not None:
            fcntl.fcntl(fd, seals, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW
                        | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        os.lseek(fd, 0, os.SEEK_SET)
        yield fd
    finally:
        os.close(fd)


def _unnamed_file() -> int:
    import tempfile  # only where memfd_create is missing
    return tempfile.TemporaryFile().fileno()


def bash_argv(fd: int) -> list[str]:
    """The command line that runs the script on descriptor ``fd`` (see `command_file`): a
    fixed ``-c`` string that reads it whole and evals it, with ``fd`` closed while it runs
    (nothing the command starts inherits it). Everything stays as with ``-c COMMAND``: ``$0``
    is bash, ``$#`` is 0, messages read ``.../bash: line N: ...``, a syntax error exits 2.
    (Run as a script file instead, bash names the file, ``/dev/fd/4: line 2: ...``, in every
    message, which the doc test's diagnosis of a shell's own messages would not read.)"""
    return [*BASH, f'eval "$(</dev/fd/{fd})" {fd}<&-']


Guard = Callable[[int, Callable[[], None]], Callable[[], "str | None"]]
"""A bound watched while a command runs (the attempt's disk bound: `aeval.adapters.sandbox._disk`):
called with the command's pid and a function that kills its process tree; returns the
function to call once the command has ended, which says why the command was killed or went
over the bound (None: it did not)."""


@dataclass(frozen=True)
class CommandResult:
    command: str
    exit_code: int | None  # None: killed by the timeout
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    truncated: bool
    exceeded: str | None = None  # a bound the command went over ("wrote more than 64 MiB")

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.exceeded is None

    @property
    def killed_from_outside(self) -> bool:
        """Whether the command ended by a SIGKILL that aeval did not send (see `outside_kill`)."""
        return outside_kill(self)

    def combined(self) -> str:
        """stdout then stderr, as a tool result shows them."""
        out = self.stdout
        if self.stderr:
            out += ("\n" if out and not out.endswith("\n") else "") + self.stderr
        if self.timed_out:
            out += f"\n[killed after {self.duration_s:.0f}s timeout]"
        if self.exceeded:
            out += f"\n[killed: {self.exceeded}]"
        return out


SIGKILL_STATUSES = (-signal.SIGKILL, 128 + signal.SIGKILL)


def outside_kill(result: CommandResult) -> bool:
    """The rule for a kill no process of the case sent: the command (bash, or bubblewrap
    reporting its child as 128+N) ended by SIGKILL, or by the status bash gives a foreground
    process SIGKILLed (137), and aeval did not kill it (not its timeout, not a bound, not a
    run that is stopping). SIGKILL is what an operator's ``kill -9`` and the host's OOM
    killer send. A kill by the attempt's own memory cgroup is told apart first: the sandbox's
    guard sees its ``oom_kill`` count rise and sets ``exceeded`` ("killed at the case's memory
    limit of N MiB", `aeval.isolation.memory`). Other signals (SIGTERM from a skill's own
    ``timeout``, SIGSEGV from its program) stay the skill's.

    Limitation: a status of 137 does not say who sent the SIGKILL. A skill whose own process
    runs ``kill -9`` on another of its processes (or ``exit 137``) is read as killed from
    outside: an environment error, retried, never a false `fail`; aeval does not trace the
    case's system calls to tell the two apart."""
    return (result.exit_code in SIGKILL_STATUSES and not result.timed_out
            and result.exceeded is None and not stopping())


def cap_text(text: str, cap: int) -> tuple[str, bool]:
    """Keep the head and the tail of long text (errors are usually at the end)."""
    if len(text) <= cap:
        return text, False
    head = cap // 3
    tail = cap - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}", True


class _Capture:
    """One output stream, kept as head + tail while it is read: never more than about
    ``cap`` plus two redaction margins in memory, however much the command prints."""

    def __init__(self, cap: int, margin: int):
        self.head_keep = cap // 3
        self.tail_keep = cap - self.head_keep
        self.head_limit = self.head_keep + margin
        self.tail_limit = self.tail_keep + margin
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.trimmed = False

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_limit + (1 << 16):
                del self.tail[:-self.tail_limit]
                self.trimmed = True

    def text(self, cap: int, redactor: Redactor) -> tuple[str, bool]:
        """Redacted, then cut: the redactor sees every byte that is kept, and a secret that
        crosses a cut point is dropped whole."""
        if not self.trimmed:
            whole = (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
            return cap_text(redactor.text(whole), cap)
        if len(self.tail) > self.tail_limit:
            del self.tail[:-self.tail_limit]
        head = redactor.head(self.head.decode("utf-8", "replace"), self.head_keep)
        tail = redactor.tail(self.tail.decode("utf-8", "replace"), self.tail_keep)
        cut = self.total - self.head_keep - self.tail_keep
        return f"{head}\n[... about {cut} bytes cut ...]\n{tail}", True


_live: set[int] = set()
"""The process groups of the commands running now (each started in its own session)."""
_stopping = False


def live_group(pgid: int) -> None:
    """Note a command's process group (its own session) until `gone_group`; killed at once
    when the run is stopping (`stop_commands`)."""
    _live.add(pgid)
    if _stopping:
        _kill_group(pgid)


def gone_group(pgid: int) -> None:
    _live.discard(pgid)


def stop_commands() -> None:
    """The run is stopping (a signal): kill every command's process group now, and every
    one that starts from here on (a sandbox's PID namespace takes its descendants)."""
    global _stopping
    _stopping = True
    for pgid in list(_live):
        _kill_group(pgid)


def stopping() -> bool:
    """Whether `stop_commands` was called: what a command returned since may be a kill."""
    return _stopping


class Stopped(BaseException):  # as KeyboardInterrupt: no `except Exception` keeps it
    """The run is stopping: a case's result is not to be recorded (its commands were killed
    by aeval, not by the skill); `aeval run --resume` runs it again."""


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _exited(pid: int) -> bool:
    """Whether the child has exited, WITHOUT reaping it: while it is a zombie its pid (and so
    its process group id) cannot be reused, and killing the group stays safe."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def run_argv(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
             cap: int = 16_000, *, redactor: Redactor | None = None,
             label: str | None = None, pass_fds: tuple[int, ...] = (),
             guard: Guard | None = None) -> CommandResult:
    """Run ``argv`` in its own session with stdin from /dev/null, reading stdout and stderr as
    they come (capped while read, redacted before cut). At the timeout, and again when the
    command has returned, its whole process group is killed (a sandbox's PID namespace also
    takes the descendants that left the group); so it is when ``guard`` finds the command
    over its bound (the reason is the result's ``exceeded``). Never raises for the command's
    own failure."""
    redactor = redactor or Redactor()
    margin = redactor.longest + 8
    start = time.monotonic()
    deadline = start + timeout_s
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, pass_fds=pass_fds)
    live_group(proc.pid)
    try:
        return _run_started(proc, start, deadline, cap, margin, redactor, label, argv, guard)
    finally:
        gone_group(proc.pid)


def _run_started(proc: subprocess.Popen, start: float, deadline: float, cap: int, margin: int,
                 redactor: Redactor, label: str | None, argv: list[str],
                 guard: Guard | None) -> CommandResult:
    stop_guard = guard(proc.pid, lambda: _kill_group(proc.pid)) if guard is not None else None
    out, err = _Capture(cap, margin), _Capture(cap, margin)
    caps = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    timed_out = False
    drain_until: float | None = None  # after a kill: stop reading from survivors by then
    with selectors.DefaultSelector() as sel:
        for fd in caps:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                _kill_group(proc.pid)
                drain_until = now + 2
            if drain_until is None and _exited(proc.pid):
                drain_until = now + 2  # returned: give buffered output a moment, no more
            if drain_until is not None and now >= drain_until:
                break
            limit = drain_until if drain_until is not None else deadline
            for key, _ in sel.select(timeout=max(0.0, min(limit - now, 0.2))):
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                if chunk:
                    caps[key.fd].add(chunk)
                else:
                    sel.unregister(key.fd)
    proc.stdout.close()
    proc.stderr.close()
    # The command itself first (its exit code), then whatever it left in its group, killed
    # while the command is still an unreaped zombie holding the group's id.
    while not _exited(proc.pid):
        if time.monotonic() >= deadline:
            timed_out = True
            break
        time.sleep(0.01)
    exceeded = stop_guard() if stop_guard is not None else None
    _kill_group(proc.pid)
    proc.wait()
    duration = time.monotonic() - start
    stdout, t1 = out.text(cap, redactor)
    stderr, t2 = err.text(cap, redactor)
    return CommandResult(label if label is not None else " ".join(argv),
                         None if timed_out else proc.returncode, stdout, stderr, duration,
                         timed_out, t1 or t2, exceeded)


class Runner(Protocol):
    """What runs a command elsewhere (an `aeval.isolation.sandbox.Sandbox`)."""

    def run(self, command: str, cwd: Path, env: dict[str, str], timeout_s: float,
            cap: int = 16_000, *, redactor: Redactor | None = None) -> CommandResult: ...


def run_command(command: str, cwd: Path, env: dict[str, str], timeout_s: float,
                cap: int = 16_000, *, redactor: Redactor | None = None,
                sandbox: Runner | None = None) -> CommandResult:
    """Run ``command`` with bash (-e -o pipefail), inside ``sandbox`` when one is given (None:
    unsandboxed, as before), of any length (a script on a descriptor, see `command_file`).
    Never raises for the command's own failure."""
    if sandbox is not None:
        return sandbox.run(command, cwd, env, timeout_s, cap, redactor=redactor)
    with command_file(command) as fd:
        return run_argv(bash_argv(fd), cwd, env, timeout_s, cap, redactor=redactor,
                        label=command, pass_fds=(fd,))
