"""The provisioning phase: fetch what a skill declares (`aeval.isolation.provision`) from the
package registries, once per content, before the offline attempts that need it.

- **Where it runs**: inside the case's boundary, a bubblewrap sandbox with the same
  allowlisted view (`aeval.adapters.sandbox.bwrap`), its own private network namespace with
  only a loopback. Its one way out is `RegistryProxy`: a forward proxy on aeval's side that
  answers only ``CONNECT`` to the package registries' hosts (PyPI, its files host, the npm
  registry, and the index URLs this machine's own pip, uv and npm configuration names, read
  on aeval's side). The proxy listens on a unix socket bound into the provisioning sandbox
  alone and reached through a bridge inside (`aeval.adapters.sandbox._bridge.BRIDGE`, as
  the CLI runtimes reach the key proxy), so the host's loopback, its addresses and aeval's
  services stay out of reach: a ``CONNECT 127.0.0.1:4200`` is refused like any other host.
- **What it does**: ``pip wheel`` of the declared requirements into a wheelhouse (wheels of
  every package the resolution needs, sdists built there), then ``pip install --target`` of
  those wheels, offline, into the entry's ``site`` folder: what plain ``python`` imports
  when a ``requirements.txt`` or ``pyproject.toml`` declared them (`attempt_env`).
- **Cached by content**: the key is the requirements, the Python version, the platform and
  uv's version (`aeval.isolation.provision.provision_key`); a wheelhouse is built once under a
  file lock (the cases of one skill that start together wait for the first one's build, across
  processes too) in ``$AEVAL_CACHE_DIR/provision`` (default ``~/.cache/aeval``), and never
  changed after: attempts see it read-only. ``uv run`` inside an attempt installs from it
  offline (`attempt_env`: ``UV_FIND_LINKS`` and ``UV_OFFLINE``), so does ``pip install``
  (``PIP_FIND_LINKS``, ``PIP_NO_INDEX``), and ``python`` imports the ``site`` folder
  (``PYTHONPATH``) when a ``requirements.txt`` or ``pyproject.toml`` declared the packages.
- **What it cannot fetch** is named (``needs X (not on the package registry)``, the
  resolver's own line, the registry unreachable) and the attempt runs without it, so the
  case ends ``untested: needs X`` by the usual diagnosis, never ``fail``. A failure is
  remembered for the rest of the process (16 cases ask once), not across runs.
"""

from __future__ import annotations

import configparser
import contextlib
import fcntl
import functools
import json
import os
import platform
import re
import shutil
import socket
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from aeval.adapters.sandbox._bridge import BRIDGE
from aeval.adapters.sandbox._toolchain import toolchain, uv_version
from aeval.adapters.sandbox.bwrap import make_sandbox
from aeval.isolation.provision import Provisioning, declarations, provision_key
from aeval.isolation.sandbox import SandboxMode, SandboxPolicy
from aeval.isolation.shell import Guard, run_argv

DEFAULT_REGISTRIES = ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org")
PROVISION_TIMEOUT_S = 900.0
PROVISION_DISK_BYTES = 4 << 30
NOT_ON_REGISTRY = "(not on the package registry)"
MAX_LEFT_OUT = 3  # requirements the registry lacks, left out one by one before giving up
MAX_HEADER = 8192
_INDEX_VARS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX",
               "UV_EXTRA_INDEX_URL", "UV_INDEX", "NPM_CONFIG_REGISTRY", "npm_config_registry")
_PIP_CONFS = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf", "~/.config/pip/pip.conf",
              "~/.pip/pip.conf")


def cache_root() -> Path:
    """Where wheelhouses are kept: ``$AEVAL_CACHE_DIR/provision`` (default
    ``$XDG_CACHE_HOME/aeval`` or ``~/.cache/aeval``)."""
    base = os.environ.get("AEVAL_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aeval")
    return Path(base) / "provision"


def configured_indexes() -> list[str]:
    """The http(s) index URLs this machine's pip, uv and npm are configured with (the
    environment, pip.conf files, npmrc's ``registry``), read on aeval's side."""
    urls: list[str] = []
    for var in _INDEX_VARS:
        urls += os.environ.get(var, "").split()
    if os.environ.get("PIP_CONFIG_FILE"):
        confs = [os.environ["PIP_CONFIG_FILE"]]
    else:
        confs = [os.path.expanduser(c) for c in _PIP_CONFS]
    for conf in confs:
        cp = configparser.ConfigParser(interpolation=None)
        with contextlib.suppress(OSError, configparser.Error):
            cp.read(conf)
            for section in cp.sections():
                for opt in ("index-url", "extra-index-url", "index_url", "extra_index_url"):
                    urls += cp.get(section, opt, fallback="").split()
    for rc in (os.path.expanduser("~/.npmrc"), "/etc/npmrc"):
        with contextlib.suppress(OSError):
            for line in Path(rc).read_text().splitlines():
                k, _, v = line.partition("=")
                if k.strip() == "registry":
                    urls.append(v.strip())
    return [u for u in dict.fromkeys(urls) if urlsplit(u).scheme in ("http", "https")]


def registry_hosts() -> frozenset[tuple[str, int]]:
    """(host, port) pairs the provisioning phase may reach."""
    out = {(h, 443) for h in DEFAULT_REGISTRIES}
    for url in configured_indexes():
        s = urlsplit(url)
        if s.hostname:
            out.add((s.hostname.lower(), s.port or (443 if s.scheme == "https" else 80)))
    return frozenset(out)


class RegistryProxy:
    """A forward proxy on a unix socket that tunnels ``CONNECT host:port`` to the registries
    (`registry_hosts`) and refuses everything else (403). ``failures`` counts the allowed
    connections the registry did not answer (an unreachable registry)."""

    def __init__(self, allowed: frozenset[tuple[str, int]]):
        self.allowed = allowed
        self.failures = 0
        self.refused: list[str] = []
        self._dir = Path(tempfile.mkdtemp(prefix="aeval-registry-proxy-"))
        os.chmod(self._dir, 0o700)
        self.socket_path = str(self._dir / "registry.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.socket_path)
        self._sock.listen(64)
        threading.Thread(target=self._serve, name="aeval-registry-proxy", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        try:
            client.settimeout(30)
            head = b""
            while b"\r\n\r\n" not in head and len(head) < MAX_HEADER:
                chunk = client.recv(1024)
                if not chunk:
                    return
                head += chunk
            first = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            target = first[1] if len(first) == 3 and first[0].upper() == "CONNECT" else ""
            host, _, port = target.rpartition(":")
            host = host.strip("[]").lower()
            if not port.isdigit() or (host, int(port)) not in self.allowed:
                self.refused.append(" ".join(first[:2])[:200])
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n"
                               b"Connection: close\r\n\r\n")
                return
            try:
                upstream = socket.create_connection((host, int(port)), timeout=20)
            except OSError:
                self.failures += 1
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            client.settimeout(None)
            upstream.settimeout(None)
            t = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            t.start()
            _pump(client, upstream)
            t.join()
        except OSError:
            pass
        finally:
            client.close()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


@functools.lru_cache(maxsize=1)
def registry_proxy() -> RegistryProxy:
    """This process's registry proxy (started on first use)."""
    return RegistryProxy(registry_hosts())


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_FAILED: dict[str, str] = {}  # key -> why, for the rest of the process
_NOT_FOUND = re.compile(r"No matching distribution found for ([^\s;]+)")
_UNREACHABLE = re.compile(r"ProxyError|Max retries exceeded|Tunnel connection failed|"
                          r"Failed to establish a new connection|Network is unreachable")


def _reason(output: str, proxy: RegistryProxy | None, failures_before: int) -> str:
    m = _NOT_FOUND.search(output)
    if m:
        project = re.split(r"[<>=!~\[;(@,]", m.group(1), maxsplit=1)[0]  # ``x>=1.0``: x
        return f"needs {project} {NOT_ON_REGISTRY}"
    if (proxy is not None and proxy.failures > failures_before) or _UNREACHABLE.search(output):
        return "the package registry was unreachable"
    errors = [ln.strip() for ln in output.splitlines() if ln.strip().startswith("ERROR")]
    last = (errors or [ln.strip() for ln in output.splitlines() if ln.strip()] or ["no output"])
    return f"the resolver said: {last[-1][:300]}"


@contextlib.contextmanager
def provisioning_sandbox(command: list[str], dest: Path, env: dict[str, str],
                         mode: SandboxMode
                         ) -> Iterator[tuple[list[str], RegistryProxy | None, Guard | None]]:
    """(the command line, the proxy, the disk bound's guard) that runs ``command`` in the
    provisioning phase's
    sandbox: the case's allowlisted view with only ``dest`` writable, a private network
    namespace whose one way out is `RegistryProxy` (``HTTPS_PROXY`` is added to ``env``: the
    bridge inside). Without bubblewrap (``--sandbox none``, or auto where it cannot run) the command
    runs as every command of such a case does, on the host's network (proxy None)."""
    sandbox = make_sandbox(mode, SandboxPolicy(root=dest, network=False,
                                               max_disk_bytes=PROVISION_DISK_BYTES))
    try:
        guard = getattr(sandbox, "guard", None)
        if sandbox.name != "bwrap":
            yield command, None, guard
            return
        proxy = registry_proxy()
        port = _free_port()
        env |= {"HTTPS_PROXY": f"http://127.0.0.1:{port}",
                "HTTP_PROXY": f"http://127.0.0.1:{port}", "NO_PROXY": ""}
        python = "/usr/bin/python3" if Path("/usr/bin/python3").is_file() else sys.executable
        yield sandbox.argv([python, "-I", "-c", BRIDGE, proxy.socket_path, str(port), *command],
                           dest, env, binds=(proxy.socket_path,)), proxy, guard  # type: ignore
    finally:
        close = getattr(sandbox, "close", None)
        if close is not None:
            close()


def provisioning_env(home: Path) -> dict[str, str]:
    """The provisioning command's environment: nothing of aeval's or the user's, the host's
    configured indexes (never its credentials files: pip.conf is not shown) as extra
    indexes beside PyPI."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INPUT": "1", "PIP_NO_CACHE_DIR": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"}
    indexes = [u for u in configured_indexes() if "npm" not in (urlsplit(u).hostname or "")]
    if indexes:
        env["PIP_EXTRA_INDEX_URL"] = " ".join(indexes)
    return env


def _build(requirements: list[str], dest: Path, mode: SandboxMode) -> str | None:
    """``pip wheel`` of ``requirements`` into ``dest/wheels`` in the provisioning sandbox;
    None when it worked, else why not."""
    (dest / "home").mkdir(parents=True, exist_ok=True)
    (dest / "requirements.in").write_text("\n".join(requirements) + "\n")
    env = provisioning_env(dest / "home")
    pip = [str(toolchain() / "bin" / "python"), "-m", "pip", "wheel", "--quiet",
           "--wheel-dir", str(dest / "wheels"), "-r", str(dest / "requirements.in")]
    with provisioning_sandbox(pip, dest, env, mode) as (argv, proxy, guard):
        failures = proxy.failures if proxy is not None else 0
        r = run_argv(argv, dest, env, PROVISION_TIMEOUT_S, 64_000, label="provisioning",
                     guard=guard)
    if r.timed_out:
        return f"fetching took longer than {PROVISION_TIMEOUT_S:.0f}s"
    if r.exceeded:
        return f"fetching {r.exceeded}"
    if r.exit_code != 0:
        return _reason(r.combined(), proxy, failures)
    return None


def _install_site(dest: Path, mode: SandboxMode) -> str | None:
    """The wheels of ``dest/wheels`` installed, offline and without resolving again, into
    ``dest/site`` (what ``PYTHONPATH`` names in the attempt); None when it worked."""
    wheels = sorted(str(w) for w in (dest / "wheels").glob("*.whl"))
    (dest / "site").mkdir(parents=True, exist_ok=True)
    if not wheels:
        return None
    env = provisioning_env(dest / "home")
    pip = [str(toolchain() / "bin" / "python"), "-m", "pip", "install", "--quiet",
           "--no-index", "--no-deps", "--target", str(dest / "site"), *wheels]
    with provisioning_sandbox(pip, dest, env, mode) as (argv, _, guard):
        r = run_argv(argv, dest, env, PROVISION_TIMEOUT_S, 64_000, label="provisioning",
                     guard=guard)
    if r.exit_code != 0 or r.timed_out or r.exceeded:
        return f"installing the wheels failed: {_reason(r.combined(), None, 0)}"
    return None


def _name(requirement: str) -> str:
    """A requirement's project name, normalized (PEP 503)."""
    project = re.split(r"[\s<>=!~;\[(@]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", project).lower()


def _build_available(requirements: list[str], dest: Path, mode: SandboxMode
                     ) -> tuple[bool, str | None]:
    """(built, why not all): a requirement the registry does not have is left out and the
    rest built (up to `MAX_LEFT_OUT` of them), so that uv's own offline error in the attempt
    names the one that is missing."""
    reqs, missing = list(requirements), []
    for _ in range(MAX_LEFT_OUT + 1):
        why = _build(reqs, dest, mode)
        if why is None:
            return True, "; ".join(missing) or None
        lacking = why.split()[1] if why.endswith(NOT_ON_REGISTRY) else None
        gone = [r for r in reqs if lacking and _name(r) == _name(lacking)]
        if not gone:
            return False, "; ".join([*missing, why])
        missing.append(why)
        reqs = [r for r in reqs if r not in gone]
        if not reqs:
            (dest / "wheels").mkdir(parents=True, exist_ok=True)
            return True, "; ".join(missing)
    return False, "; ".join(missing)


def cached_build(record: Provisioning, build: Callable[[Path], tuple[bool, str | None]]
                 ) -> Path | None:
    """The cache entry named ``record.key``: built by ``build(folder)`` (built, why not all)
    once per key under a file lock (threads and processes), renamed into place whole, never
    changed after; ``record``'s outcome and reason set. None when it could not be built."""
    key, root = record.key, cache_root()
    entry = root / key
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (entry / "done.json").is_file():
            record.outcome = "cached"
            with contextlib.suppress(OSError, ValueError, AttributeError):
                record.reason = json.loads((entry / "done.json").read_text()).get("missing")
        elif key in _FAILED:
            record.outcome, record.reason = "not provisioned", _FAILED[key]
        else:
            tmp = root / f".{key}.{uuid.uuid4().hex}"
            try:
                built, why = build(tmp)
                if built:
                    (tmp / "done.json").write_text(json.dumps(
                        {"requirements": record.requirements, "missing": why}))
                    os.rename(tmp, entry)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            record.reason = why
            if not built:  # unreachable, or a resolver error: retried by the next run
                _FAILED[key] = why or "unknown"
                record.outcome = "not provisioned"
    return None if record.outcome == "not provisioned" else entry


def provision(skill_dir: Path, commands: list[str], mode: SandboxMode
              ) -> tuple[Provisioning | None, Path | None]:
    """(the record, the cache entry: ``wheels/`` and ``site/``) for the skill at
    ``skill_dir`` whose documented commands are ``commands``; (None, None) when they declare
    nothing to fetch; (record, None) when nothing could be fetched (the record says why)."""
    declared, reqs = declarations(skill_dir, commands)
    if not reqs:
        return None, None
    key = provision_key(reqs, platform.python_version(), f"{sys.platform}-{platform.machine()}",
                        uv_version())
    record = Provisioning(declared=declared, requirements=reqs, outcome="built", key=key)

    def build(tmp: Path) -> tuple[bool, str | None]:
        built, why = _build_available(reqs, tmp, mode)
        if built and (failed := _install_site(tmp, mode)) is not None:
            return False, failed
        shutil.rmtree(tmp / "home", ignore_errors=True)
        return built, why

    entry = cached_build(record, build)
    if entry is None:
        return record, None
    wheels = entry / "wheels"
    record.packages = sorted(p.name for p in wheels.iterdir()) if wheels.is_dir() else []
    return record, entry


def attempt_env(entry: Path | None, network: bool, importable: bool = False
                ) -> dict[str, str]:
    """What an attempt's commands get so that ``uv run`` and ``pip install`` install from
    the wheelhouse of ``entry``, and, when the case is offline, from it alone (``UV_OFFLINE``,
    ``PIP_NO_INDEX``: also when nothing could be fetched, so uv says at once which package it
    lacks instead of retrying a network it does not have). ``importable`` (a
    ``requirements.txt`` or ``pyproject.toml`` declared the packages): plain ``python``
    imports them from the entry's ``site`` folder (``PYTHONPATH``), and ``uv run`` takes them
    from there too instead of syncing the skill's project into a ``.venv`` and a ``uv.lock``
    inside the skill copy (``UV_NO_PROJECT``)."""
    env: dict[str, str] = {}
    if entry is not None:
        env |= {"UV_FIND_LINKS": str(entry / "wheels"), "PIP_FIND_LINKS": str(entry / "wheels")}
        if importable and (entry / "site").is_dir():
            env["PYTHONPATH"] = str(entry / "site")
    if importable:
        env["UV_NO_PROJECT"] = "1"
    if not network:
        env |= {"UV_OFFLINE": "1", "PIP_NO_INDEX": "1"}
    return env
