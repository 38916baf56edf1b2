"""A warm `aeval run`: a process with Prefect, the flows, litellm and pandas already imported
forks a child per invocation, so a warm run starts working at once instead of importing for
~2 s of CPU (the largest part of a warm one-skill run once the server is reused).

How it goes (outside CI, with the reused local server:
`aeval.tasks._engine.servers.home.mode` ``reuse``):

- ``aeval run ...`` first tries this PREFECT_HOME's warm process: the socket
  ``<PREFECT_HOME>/aeval-server/warm.sock`` (folder 0700; no sandbox shows it, nor any of
  aeval's service state: `aeval.adapters.sandbox._view`). It sends its
  command line, working folder, umask, environment and the warm process's token, and passes
  its stdin, stdout and stderr (SCM_RIGHTS); the warm process forks a child that takes them
  over and runs ``aeval.deployments.cli.main.main`` there, as the invocation would have. The
  invocation forwards Ctrl-C and SIGTERM/SIGHUP/SIGQUIT to the child's process group and
  exits with the child's exit code; if the invocation is killed (-9), so is the child's
  process group, as the invocation's own would have been (the sandboxed commands die with
  their parent).
- Who is served (`_peer_refusal`, `refusal`): a peer of this user, in the warm process's
  own PID namespace (``/proc/<peer>/ns/pid``: never a process inside a sandbox, which has a
  namespace of its own), that sent the random token of ``warm.token`` (0600 in the 0700
  folder: only this user's unsandboxed processes read it); and only a ``run`` or ``sweep``
  command line aeval's own parser accepts, never one that turns the sandbox off
  (``--sandbox none`` in any spelling argparse takes, or ``AEVAL_SANDBOX`` other than
  ``auto`` or ``require`` in the environment it sent). Anything else is refused before any
  fork: a real invocation then runs in-process, as it would without a warm process.
- Nothing answers, or the answer is "not this one": the invocation runs in-process, as
  before, and afterwards starts a warm process for the next one (detached, scrubbed
  environment: no model keys or tokens ever reach it; they travel with each invocation to its
  child only). The warm process never runs a skill itself and starts no thread.
- "Not this one": the child finds, where Prefect's settings are applied
  (`aeval.tasks._engine.servers.embedded`), that this invocation's Prefect, litellm, Python,
  locale, HOME, proxy or CA variables differ
  from those the warm process imported with (``-v``, another ``PREFECT_*``), or the working
  folder configures Prefect (``.env``, ``prefect.toml``, ``pyproject.toml``'s
  ``[tool.prefect]``), or
  ``PREFECT_API_URL`` is set (a server of the user's); the warm process itself refuses when
  aeval's source or the installed packages changed since it started (and exits: the next run
  starts a fresh one). Nothing is printed before that decision, so an invocation that runs
  in-process after all prints everything once. A child forgets what the warm process cached
  from its own environment (the temp folder, the time zone: `_as_this_environment`).
- It stops after the idle period of the reused server (``AEVAL_SERVER_IDLE_S``), or when its
  folder is gone. ``AEVAL_WARM=0`` turns it off (in-process every time, no warm process).

Only ``aeval run`` and ``aeval sweep`` are served warm. The warm process's log:
``aeval-server/warm.log`` (a line per invocation it served or refused, never an environment).
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import io
import json
import os
import secrets
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aeval.exit_codes import ENVIRONMENT
from aeval.tasks._engine.servers.home import WARM_LOCK, idle_seconds, mode, state_dir

WARM_VAR = "AEVAL_WARM"
"""``0``: no warm process (every invocation imports for itself)."""
SOCKET = "warm.sock"
LOCK = WARM_LOCK
LOG = "warm.log"
TOKEN = "warm.token"
"""A random token per warm process (0600, in the 0700 state folder every sandbox has hidden):
an invocation sends it; a connection without it is refused."""
TOKEN_CAP = 256
SERVED = frozenset({"run", "sweep"})
"""The commands served warm (both apply Prefect's settings in
`aeval.tasks._engine.servers.embedded.start_early` before they print anything but a usage
error)."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
PRELOAD = (
    "aeval.deployments.cli.evaluate", "aeval.deployments.cli.console", "aeval.flows.evaluate",
    "aeval.tasks._engine.runners", "aeval.tasks.case.sandboxing", "aeval.adapters.llm",
    "litellm", "pandas",
    "rich.console", "rich.table", "prefect.flow_engine", "prefect.task_engine",
    "prefect.utilities.visualization", "fastapi.encoders", "aeval.deployments.cli.main",
    "aeval.runtime.model_keys", "aeval.adapters.runtimes.literal",
    "aeval.adapters.runtimes.builtin",
    "aeval.adapters.runtimes.claude_code", "aeval.adapters.runtimes.codex",
    "aeval.adapters.runtimes.opencode",
    "anyio._backends._asyncio", "anyio.streams.memory", "anyio.streams.stapled",
    "anyio.streams.tls", "rich._emoji_codes", "encodings.unicode_escape",
)
"""What the run path imports; the warm process imports it once (litellm after
`aeval.adapters.llm`, which sets its offline options; fastapi's encoders: Prefect imports
them to send a flow's parameters, 0.3 s of CPU). A child logs what it imported after all."""
OPTIONAL = frozenset({"litellm"})
"""What PRELOAD imports only where it is installed (the ``models`` extra: an install for the
``literal`` runtime has no model client)."""
IMPORT_PREFIXES = ("PREFECT_", "LITELLM_", "PYTHON", "LC_")
IMPORT_NAMES = frozenset({
    "LANG", "DO_NOT_TRACK", "MALLOC_ARENA_MAX", "HOME",  # Prefect's default home is read
    # at import; the HTTP clients made at import took the proxies and CA bundle then
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
    "all_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE"})
SANDBOX_VAR = "AEVAL_SANDBOX"
SERVED_SANDBOX = frozenset({"auto", "require"})
"""The sandbox modes a warm child may run with (``none`` runs in-process, never forked)."""
PREFECT_CONFIG_FILES = (".env", "prefect.toml", "pyproject.toml")
_HEADER = struct.Struct("!I")


class NotServed(BaseException):
    """Raised in a warm child before it prints anything: this invocation is to run
    in-process (a BaseException: the command line's last line of defence lets it through)."""


def import_key(environ: dict[str, str]) -> dict[str, str]:
    """The variables that shape what an import did (Prefect's settings and logging are read
    at import, litellm's options, Python's own, the locale)."""
    return {k: v for k, v in environ.items()
            if k.startswith(IMPORT_PREFIXES) or k in IMPORT_NAMES}


def prefect_configured_here(cwd: Path) -> str | None:
    """The file in ``cwd`` that Prefect would read its settings from, if any."""
    for name in PREFECT_CONFIG_FILES:
        path = cwd / name
        try:
            if name == "prefect.toml":
                if path.exists():
                    return name
                continue
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if (name == ".env" and "PREFECT_" in text) or \
                (name == "pyproject.toml" and "tool.prefect" in text):
            return name
    return None


# --- the invocation's side -------------------------------------------------------------


def delegate(argv: list[str]) -> int | None:
    """Run this invocation in the warm process (call when `servable`); its exit code, or
    None: run in-process."""
    folder = state_dir()
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(2.0)
        conn.connect(str(folder / SOCKET))
    except OSError:
        return None
    with conn:
        try:
            return _served(conn, argv)
        except OSError:
            return None


_environ_at_start: dict[str, str] | None = None


def servable(argv: list[str]) -> bool:
    """This invocation may run in a warm process (decide before it changes its own
    environment)."""
    global _environ_at_start
    _environ_at_start = dict(os.environ)
    if os.environ.get(WARM_VAR, "1").strip() == "0" or mode() != "reuse":
        return False
    if not argv or argv[0] not in SERVED or os.environ.get("PREFECT_API_URL"):
        return False
    if sandbox_off(argv, dict(os.environ)):
        return False  # the warm process would refuse it: no round trip
    try:
        if prefect_configured_here(Path.cwd()):
            return False
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return True


def read_token(folder: Path) -> str | None:
    """The warm process's token (None: none there, or not readable)."""
    try:
        with open(folder / TOKEN, "rb") as fh:
            return fh.read(TOKEN_CAP).decode("ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def sandbox_off(argv: list[str], environ: dict[str, str]) -> bool:
    """A quick look (no parser): ``argv`` or ``environ`` may turn the sandbox off (any
    ``--sa...`` prefix of ``--sandbox`` with a value other than auto or require, joined by
    ``=`` or not; ``AEVAL_SANDBOX`` in any case with such a value)."""
    for name, value in environ.items():
        if name.upper() == SANDBOX_VAR and value not in SERVED_SANDBOX:
            return True
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        if len(flag) >= 4 and "--sandbox".startswith(flag):
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) else ""
            if value not in SERVED_SANDBOX:
                return True
    return False


def _served(conn: socket.socket, argv: list[str]) -> int | None:
    token = read_token(state_dir())
    if token is None:
        return None  # no warm process's token: not one to hand this run to
    header = json.dumps({"argv0": sys.argv[0], "argv": argv, "cwd": os.getcwd(),
                         "umask": _umask(), "env": dict(os.environ),
                         "token": token}).encode()
    socket.send_fds(conn, [_HEADER.pack(len(header))], [0, 1, 2])
    conn.sendall(header)
    conn.settimeout(None)
    reader = conn.makefile("rb")
    first = _message(reader)
    if "pid" not in first:
        return None  # refused: stale, or not served here
    child = int(first["pid"])
    previous = {}

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child, signum)

    for sig in FORWARDED:
        previous[sig] = signal.signal(sig, forward)
    try:
        while True:
            msg = _message(reader)
            if "fallback" in msg:
                return None
            if "exit" in msg or "signal" in msg:
                with contextlib.suppress(OSError):
                    conn.sendall(b"x")  # received: the warm process lets the child end
                return int(msg["exit"]) if "exit" in msg else 128 + int(msg["signal"])
            if not msg:
                print("aeval: the warm process stopped before this run ended "
                      f"(its log: {state_dir() / LOG}); rerun it, or set {WARM_VAR}=0",
                      file=sys.stderr)
                return ENVIRONMENT
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _message(reader) -> dict:
    line = reader.readline()
    if not line:
        return {}
    try:
        msg = json.loads(line)
    except ValueError:
        return {}
    return msg if isinstance(msg, dict) else {}


def _umask() -> int:
    current = os.umask(0o22)
    os.umask(current)
    return current


def start_later() -> None:
    """After an in-process run that was `servable`: start this PREFECT_HOME's warm process
    for the next one, unless one is running or starting (its lock is held)."""
    folder = state_dir()
    try:
        if not folder.is_dir():
            return
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # one is running or starting
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    from aeval.isolation.hardening import scrubbed_environ

    env = scrubbed_environ(_environ_at_start)  # as this invocation started, without secrets
    for name in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING"):
        env.pop(name, None)
    log = os.open(folder / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        subprocess.Popen([sys.executable, "-m", __name__, "--state-dir", str(folder),
                          "--idle-s", str(idle_seconds())],
                         env=env, cwd=folder, stdin=subprocess.DEVNULL, stdout=log,
                         stderr=log, start_new_session=True)
    except OSError:
        pass
    finally:
        os.close(log)


# --- the warm process ------------------------------------------------------------------


class _Warm:
    """What the warm process imported with, for its children to compare against."""

    def __init__(self, before: dict[str, str], server: tuple[str, str] | None) -> None:
        self.server = server
        self.token = ""
        """What an invocation must send (`TOKEN`), set once the token file is written."""
        """The reused server Prefect was imported with (URL, auth string), if any."""
        self.key = import_key(dict(os.environ))
        for name in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING"):
            self.key.pop(name, None)
        self.defaults = {k: v for k, v in os.environ.items() if before.get(k) != v}
        """Variables the imports set (litellm's offline options): a child sets them too."""
        self.fingerprint = source_fingerprint()

    def check(self) -> None:
        """In a child, where Prefect's settings are applied: raise NotServed when this
        invocation's variables differ from those the imports saw."""
        key = import_key(dict(os.environ))
        for name in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING"):
            key.pop(name, None)
        if key != self.key:
            raise NotServed("import-time variables differ")

    def apply(self, api_url: str, auth_string: str) -> None:
        """In a child, once the server is known: Prefect's settings were read at import,
        with `server`; rebuild them when this run's server is another one."""
        if (api_url, auth_string) != self.server:
            from prefect.context import refresh_global_settings_context

            refresh_global_settings_context()


def source_fingerprint() -> tuple:
    """What a change to aeval's code or the installed packages changes: every source file's
    size and mtime under aeval's folders, and the site-packages folders' mtimes (an install,
    upgrade or removal adds or removes entries there)."""
    import aeval

    entries = []
    for root in sorted({str(Path(p).resolve()) for p in _source_roots(aeval)}):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
            for name in sorted(filenames):
                if name.endswith(".py"):
                    with contextlib.suppress(OSError):
                        st = os.stat(os.path.join(dirpath, name))
                        entries.append((dirpath, name, st.st_size, st.st_mtime_ns))
    import site

    for folder in sorted(set(site.getsitepackages()) | {site.getusersitepackages()}):
        with contextlib.suppress(OSError):
            entries.append((folder, os.stat(folder).st_mtime_ns))
    return (sys.executable, tuple(entries))


def _source_roots(package) -> list[str]:
    roots = list(package.__path__)
    for sub in ("adapters", "tasks", "flows", "deployments"):
        with contextlib.suppress(ImportError, AttributeError):
            roots.extend(__import__(f"aeval.{sub}", fromlist=["_"]).__path__)
    return roots


def _known_server(folder: Path) -> tuple[str, str] | None:
    """The reused server running now, set as this process's Prefect API before Prefect is
    imported: a child that finds the same one has nothing of Prefect's settings to redo."""
    from aeval.tasks._engine.servers import embedded
    from aeval.tasks._engine.servers import reused as local_server

    record = local_server.read_record(folder)
    if record is None or not local_server.is_server_process(record):
        return None
    os.environ["PREFECT_API_URL"] = record.api_url
    os.environ[embedded.CLIENT_AUTH_VAR] = record.auth_string
    return record.api_url, record.auth_string


def refusal(argv: object, environ: object) -> str | None:
    """Why the warm process does not serve this command line (None: it does): it is not a
    ``run`` or ``sweep`` command line aeval's own parser accepts, or it would run with the
    sandbox off (``--sandbox none`` however spelled, ``AEVAL_SANDBOX`` not auto or
    require). Such an invocation runs in-process, where what it asked for is its own."""
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "not a command line"
    if not isinstance(environ, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in environ.items()):
        return "not an environment"
    if not argv or argv[0] not in SERVED:
        return "not aeval run or aeval sweep"
    for name, value in environ.items():
        if name.upper() == SANDBOX_VAR and value not in SERVED_SANDBOX:
            return f"{name} is not auto or require"
    from aeval.deployments.cli.main import build_parser

    try:
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            args = build_parser().parse_args(argv)
    except SystemExit:
        return "not a command line aeval accepts"
    if getattr(args, "command", None) not in SERVED:
        return "not aeval run or aeval sweep"
    if getattr(args, "sandbox", None) not in (None, *SERVED_SANDBOX):
        return "--sandbox none"
    return None


def _pid_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _peer_refusal(conn: socket.socket) -> str | None:
    """Why the process at the other end of ``conn`` is not served (None: it is): another
    user, or a process in another PID namespace (inside a sandbox: bubblewrap gives every
    sandbox its own; a peer the kernel cannot name here has pid 0)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    if uid != os.getuid():
        return f"uid {uid}"
    own = _pid_namespace("self")
    if pid <= 0 or own is None or _pid_namespace(pid) != own:
        return "a peer in another PID namespace (a sandbox)"
    return None


def _write_token(folder: Path) -> str:
    """A fresh token in ``folder/TOKEN`` (0600, replaced atomically)."""
    token = secrets.token_urlsafe(32)
    tmp = folder / f".{TOKEN}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token)
    os.replace(tmp, folder / TOKEN)
    return token


def _log(line: str) -> None:
    """A line in the warm log (the warm process's stdout)."""
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} warm[{os.getpid()}] {line}", flush=True)


def serve(folder: Path, idle_s: float) -> int:
    """The warm process: import, then fork a child per invocation until idle."""
    lock = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another one is running or starting
    os.ftruncate(lock, 0)
    os.write(lock, str(os.getpid()).encode())  # who holds it (benchmarks/ read it)
    from aeval.deployments.cli.console import prefect_env
    from aeval.isolation.hardening import harden_process, limit_malloc_arenas

    limit_malloc_arenas()
    harden_process()  # invocations' environments pass through here
    prefect_env(False)
    server = _known_server(folder)
    before = dict(os.environ)
    import importlib
    from importlib.util import find_spec

    for name in PRELOAD:
        if name not in OPTIONAL or find_spec(name) is not None:
            importlib.import_module(name)
    from aeval.adapters.llm import warm_up

    warm_up()  # litellm's first call: its lazy imports and schemas, shared with every child
    import threading

    if threading.active_count() != 1:
        _log(f"not serving: an import started a thread ({threading.enumerate()})")
        return 1
    from aeval.tasks._engine.servers import embedded

    warm = _Warm(before, server)
    import gc

    gc.collect()
    gc.freeze()  # what was imported stays shared with the children, unwritten
    path = folder / SOCKET
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a dead warm process's (we hold the lock: no live one has it)
    warm.token = _write_token(folder)  # before the socket exists: an invocation finds both
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    listener.listen(16)
    ident = os.stat(folder).st_ino, os.stat(path).st_ino
    _log(f"serving on {path}")
    children: dict[int, socket.socket | None] = {}  # None: its invocation went away
    last = time.monotonic()
    try:
        while True:
            for pid in list(children):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    _report(children.pop(pid), status)
                    last = time.monotonic()
            if not children and time.monotonic() - last > idle_s:
                _log("idle: stopping")
                return 0
            try:
                if (os.stat(folder).st_ino, os.stat(path).st_ino) != ident:
                    return 0
            except OSError:
                return 0  # the folder (a test's PREFECT_HOME) or the socket is gone
            conns = [c for c in children.values() if c is not None]
            ready, _, _ = select.select([listener, *conns], [], [], 0.2)
            for conn in ready:
                if conn is listener:
                    if not _accept(listener, folder, warm, embedded, children):
                        return 0
                    last = time.monotonic()
                    continue
                pid = next(p for p, c in children.items() if c is conn)
                try:
                    gone = conn.recv(1) == b""
                except OSError:
                    gone = True
                if not gone:  # the invocation has its exit code: nothing more to send
                    conn.close()
                    children[pid] = None
                else:  # the invocation was killed (-9): so is its child, as it would
                    with contextlib.suppress(ProcessLookupError, PermissionError):  # have been
                        os.killpg(pid, signal.SIGKILL)
                    _log(f"child {pid}: its invocation went away")
                    conn.close()
                    children[pid] = None
    finally:
        with contextlib.suppress(OSError):
            if (os.stat(folder).st_ino, os.stat(path).st_ino) == ident:
                path.unlink()
        with contextlib.suppress(OSError):
            if read_token(folder) == warm.token:
                (folder / TOKEN).unlink()
        listener.close()


def _report(conn: socket.socket | None, status: int) -> None:
    """Tell the invocation how its child ended: ``exit`` code, or the ``signal`` it died of."""
    if conn is None:
        return
    msg = {"exit": os.waitstatus_to_exitcode(status)}
    if os.WIFSIGNALED(status):
        msg = {"signal": os.WTERMSIG(status)}
    with contextlib.suppress(OSError):
        conn.sendall(json.dumps(msg).encode() + b"\n")
    conn.close()


def _accept(listener, folder: Path, warm: _Warm, embedded, children) -> bool:
    """Take one invocation; False when this warm process is to stop (stale)."""
    conn, _ = listener.accept()
    fds: list[int] = []
    try:
        if why := _peer_refusal(conn):
            _log(f"refused: {why}")
            conn.close()
            return True
        conn.settimeout(5.0)
        data, fds, _flags, _addr = socket.recv_fds(conn, _HEADER.size, 3)
        if len(data) != _HEADER.size or len(fds) != 3:
            raise ValueError("bad header")
        (size,) = _HEADER.unpack(data)
        body = b""
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise ValueError("short header")
            body += chunk
        header = json.loads(body)
        if not isinstance(header, dict) or not hmac.compare_digest(
                str(header.get("token", "")).encode(), warm.token.encode()):
            raise ValueError("no token, or not this warm process's")
        if why := refusal(header.get("argv"), header.get("env")):
            _log(f"refused: {why}")
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"refused": why}).encode() + b"\n")
            conn.close()
            for fd in fds:
                os.close(fd)
            return True
        if not isinstance(header.get("cwd"), str) or not isinstance(header.get("umask"), int) \
                or not isinstance(header.get("argv0"), str):
            raise ValueError("bad header fields")
        if source_fingerprint() != warm.fingerprint:
            _log("refused: aeval's code or the installed packages changed; stopping")
            conn.sendall(b'{"stale": true}\n')
            conn.close()
            return False
    except (OSError, ValueError) as exc:
        _log(f"refused a connection: {exc}")
        conn.close()
        for fd in fds:
            os.close(fd)
        return True
    pid = os.fork()
    if pid == 0:  # the child: never returns
        listener.close()
        for other in children.values():
            if other is not None:
                other.close()
        _child(conn, fds, header, warm, embedded)
    for fd in fds:
        os.close(fd)
    children[pid] = conn
    _log(f"child {pid}: aeval {' '.join(header['argv'][:1])}")
    return True


def _child(conn: socket.socket, fds: list[int], header: dict, warm: _Warm, embedded) -> None:
    """Take over the invocation's stdio, folder, umask and environment, run the command line
    as the invocation would have, and exit with its code (never returns)."""
    code = 4
    try:
        os.setsid()  # its own process group: the invocation's signals go to all of it
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        conn.settimeout(None)
        conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(header["cwd"])
        os.umask(int(header["umask"]))
        os.environ.clear()
        os.environ.update(header["env"])
        for name, value in warm.defaults.items():  # what the imports set, as they would have
            os.environ.setdefault(name, value)
        _as_this_environment()
        sys.argv = [header["argv0"], *header["argv"]]
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, OSError, ValueError):
                stream.reconfigure(line_buffering=stream.isatty())
        embedded.warm_child(warm)
        modules = set(sys.modules)
        from aeval.deployments.cli.main import main

        try:
            code = main(header["argv"])
        except NotServed:
            with contextlib.suppress(OSError):
                conn.sendall(b'{"fallback": true}\n')
            os._exit(0)
        late = sorted(set(sys.modules) - modules)
        if late:
            _log_child(f"{len(late)} module(s) imported after the fork: "
                       f"{', '.join(late[:40])}{' ...' if len(late) > 40 else ''}")
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    _exit_child(code, conn)


def _as_this_environment() -> None:
    """In a child, once the invocation's environment is in place: forget what was read from
    the warm process's environment and cached (the temp folder, the time zone), so they
    follow this invocation's ``TMPDIR`` and ``TZ`` as an in-process run's would. What cannot
    be forgotten (settings read at import) is compared instead (`import_key`)."""
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    time.tzset()


def _log_child(line: str) -> None:
    """A line in the warm log from a child (whose stdout is the invocation's)."""
    from aeval.tasks._engine.servers.home import state_dir

    with contextlib.suppress(OSError), open(state_dir() / LOG, "a") as fh:
        fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} child[{os.getpid()}] {line}\n")


def _exit_child(code: int, conn: socket.socket | None = None) -> None:
    """Exit as the command line does (`aeval.deployments.cli.main.run`): the exit handlers run
    (Prefect's flush its logs and events), the final garbage collection does not; then tell
    the invocation the exit code (the warm process reports it only for a child that died of
    a signal, and only as fast as it polls)."""
    import atexit

    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        if conn is not None:
            conn.sendall(json.dumps({"exit": code}).encode() + b"\n")
    except BaseException:
        pass
    finally:
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--idle-s", type=float, default=None)
    args = ap.parse_args(argv)
    return serve(args.state_dir, args.idle_s or idle_seconds())


if __name__ == "__main__":
    sys.exit(main())
