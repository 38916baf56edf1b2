"""Sandboxes for the commands of a case: ``bwrap`` (bubblewrap) and ``none``.

bwrap, per shared/notes/sandbox.md: the host bound read-only, a fresh /proc, a minimal /dev,
a private /tmp, the attempt root bound writable at its own path (so every path aeval hands
out stays valid inside), the hidden paths covered (an empty tmpfs over a folder, /dev/null
over a file), its own PID and IPC namespaces (a process inside sees neither aeval, nor the
Prefect server, nor another case; when the command ends, the namespace's init dies and takes
every descendant, ``setsid`` ones included), ``--die-with-parent`` so nothing outlives aeval,
and ``--unshare-net`` when the policy forbids the network.

Python inside: aeval's venv is read-only and last on PATH. First on PATH is a per-attempt
environment made under the attempt root: its ``python`` sees the user base under the private
HOME (``PYTHONUSERBASE=$HOME/.local``), its own site-packages, then aeval's packages
read-only. A setup ``pip install`` lands in that environment (``--user``: in the private
HOME), so in the attempt, and dies with it. ``PIP_USER=1`` is deliberately not set: pip
refuses it together with ``--target`` or ``--prefix``, which setup steps use. A global
``npm install -g`` lands in ``$HOME/.npm-global`` (on PATH).

Limits: ``prlimit`` sets RLIMIT_DATA and RLIMIT_NPROC on the sandboxed command. RLIMIT_DATA,
not RLIMIT_AS: it bounds the private writable memory a process allocates, while address
space merely reserved (V8 reserves ~10 GB for one WebAssembly memory; the node-based runtime
CLIs use wasm) is not counted. The kernel
exempts root from RLIMIT_NPROC, so where a pids cgroup can be made (cgroup v1 ``pids``
hierarchy, or v2 with the pids controller) every command of the attempt also runs in one
cgroup whose ``pids.max`` is the policy's ``max_processes``: a fork bomb stops there.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
import weakref
from pathlib import Path
from typing import ClassVar

from aeval.redact import Redactor
from aeval.sandbox import (
    Sandbox,
    SandboxMode,
    SandboxPolicy,
    SandboxStatus,
    SandboxUnavailable,
)
from aeval.shell import BASH, CommandResult, run_argv

PYENV_DIR = "pyenv"  # under the attempt root
_PIP_SHIM = "#!{python}\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"


def _aeval_bin() -> Path:
    return Path(sys.executable).parent


def attempt_python(root: Path) -> Path:
    """Make (once) the per-attempt Python environment under ``root``; return its bin/ folder.

    A venv by hand (no subprocess, a few files): the base interpreter, system site-packages
    on (pip comes from there, and ``--user`` installs are allowed), and a .pth that adds
    aeval's own site-packages read-only after the attempt's, so what worked before still
    imports."""
    env = Path(root) / PYENV_DIR
    bin_dir = env / "bin"
    if (env / "pyvenv.cfg").is_file():
        return bin_dir
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    site_dir = env / "lib" / f"python{ver}" / "site-packages"
    site_dir.mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3", f"python{ver}"):
        link = bin_dir / name
        if not link.is_symlink():
            link.symlink_to(base)
    for name in ("pip", "pip3", f"pip{ver}"):
        shim = bin_dir / name
        shim.write_text(_PIP_SHIM.format(python=bin_dir / "python"))
        shim.chmod(0o755)
    if sys.prefix != sys.base_prefix:  # aeval runs from a venv: keep its packages importable
        purelib = sysconfig.get_paths()["purelib"]
        (site_dir / "_aeval_parent.pth").write_text(f"import site; site.addsitedir({purelib!r})\n")
    (env / "pyvenv.cfg").write_text(
        f"home = {base.parent}\ninclude-system-site-packages = true\nversion = "
        f"{'.'.join(map(str, sys.version_info[:3]))}\n")
    return bin_dir


def sandbox_path(path: str, home: str, pybin: Path) -> str:
    """PATH inside: the attempt's Python, user and npm bins first, aeval's venv moved last."""
    own = str(_aeval_bin())
    parts = [p for p in path.split(os.pathsep) if p and p != own]
    return os.pathsep.join([str(pybin), f"{home}/.local/bin", f"{home}/.npm-global/bin",
                            *parts, own])


class NoSandbox:
    """Today's isolation: a process group with a scrubbed environment, killed at the end."""

    name: ClassVar[str] = "none"

    def __init__(self, policy: SandboxPolicy, status: SandboxStatus | None = None):
        self.policy = policy
        self.status = status or SandboxStatus(requested="none", used="none",
                                              reason="requested")

    def run(self, command: str, cwd: Path, env: dict[str, str], timeout_s: float,
            cap: int = 16_000, *, redactor: Redactor | None = None) -> CommandResult:
        return run_argv([*BASH, command], cwd, env, timeout_s, cap, redactor=redactor,
                        label=command)

    def argv(self, argv: list[str], cwd: Path, env: dict[str, str],
             binds: tuple[str, ...] = ()) -> list[str]:
        return list(argv)

    def inside_env(self, env: dict[str, str]) -> dict[str, str]:
        return dict(env)


PIDS_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


def pids_cgroup(limit: int, roots: tuple[Path, ...] = PIDS_CGROUP_ROOTS) -> Path | None:
    """A fresh pids cgroup with ``pids.max = limit``, or None where none can be made."""
    for base in roots:
        if not (base / "cgroup.procs").is_file() or not os.access(base, os.W_OK):
            continue
        cg = base / f"aeval-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            cg.mkdir()
            (cg / "pids.max").write_text(str(limit))
            return cg
        except OSError:
            with contextlib.suppress(OSError):
                cg.rmdir()
    return None


def _remove_cgroup(cg: Path, wait_s: float = 2.0) -> None:
    """Kill what is left in the attempt's cgroup (a namespace init still dying), then remove
    it; a cgroup stays busy until its last process is gone."""
    deadline = time.monotonic() + wait_s
    while cg.exists():
        with contextlib.suppress(OSError):
            for pid in (cg / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
        try:
            cg.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


TMP = Path("/tmp")


def tmp_prefixes(argv: list[str], path: str, private: list[Path]) -> list[str]:
    """Install prefixes under /tmp that a sandboxed command needs, to bind read-only over the
    sandbox's private /tmp: aeval's own venv and interpreter, the folders of ``PATH``, and
    the programs ``argv`` names (an agent CLI in ``<clone>/.ci/node_modules``, a checkout
    under /tmp in CI). A program or ``bin`` folder gives its prefix (``.../node_modules`` of
    ``.../node_modules/bin/codex``). Never /tmp itself, nor a folder holding or inside a
    ``private`` path (the attempt, the hidden ones): those stay as the policy says."""
    private = [Path(x).resolve() for x in private]
    found: set[Path] = set()
    for c in [sys.prefix, sys.base_prefix, *path.split(os.pathsep),
              *(a for a in argv if a.startswith("/"))]:
        for q in {Path(c).absolute(), Path(c).resolve()}:
            if not q.is_relative_to(TMP) or not q.exists():
                continue
            prefix = q if q.is_dir() else q.parent
            if prefix.name == "bin":
                prefix = prefix.parent
            if prefix == TMP or any(prefix.is_relative_to(x) or x.is_relative_to(prefix)
                                    for x in private):
                continue
            found.add(prefix)
    return sorted(str(f) for f in found if not any(f != g and f.is_relative_to(g)
                                                   for g in found))


class BwrapSandbox:
    """bubblewrap around every command (see the module docstring for what it guarantees)."""

    name: ClassVar[str] = "bwrap"

    def __init__(self, policy: SandboxPolicy, bwrap: str = "bwrap",
                 status: SandboxStatus | None = None):
        self.policy = policy
        self.bwrap = bwrap
        self.status = status or SandboxStatus(requested="require", used="bwrap")
        self.cgroup = pids_cgroup(policy.max_processes) if policy.max_processes else None
        if self.cgroup is not None:
            weakref.finalize(self, _remove_cgroup, self.cgroup)
        self._args_dir = Path(tempfile.mkdtemp(prefix="aeval-bwrap-args-"))
        weakref.finalize(self, shutil.rmtree, self._args_dir, True)

    def close(self) -> None:
        """Remove the attempt's cgroup and argument files (also done when the sandbox is
        garbage-collected)."""
        if self.cgroup is not None:
            _remove_cgroup(self.cgroup)
        shutil.rmtree(self._args_dir, ignore_errors=True)

    def _args_file(self, options: list[str]) -> Path:
        """bwrap's options in a file it reads through ``--args FD``: its command line (which a
        process inside can read from /proc/1/cmdline) then names no hidden path. The file's
        folder is hidden inside too, and bwrap closes the descriptor after reading it."""
        self._args_dir.mkdir(parents=True, exist_ok=True)
        path = self._args_dir / f"{uuid.uuid4().hex}.args"
        path.write_bytes(b"".join(o.encode() + b"\0" for o in options))
        return path

    def inside_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` as a sandboxed process sees it (what `argv` sets on top of it)."""
        root = Path(self.policy.root).resolve()
        home = env.get("HOME") or str(root / "home")
        pybin = attempt_python(root)
        return {**{k: v for k, v in env.items() if k != "PYTHONHOME"},
                "PATH": sandbox_path(env.get("PATH", os.defpath), home, pybin),
                "VIRTUAL_ENV": str(pybin.parent), "PYTHONUSERBASE": f"{home}/.local",
                "NPM_CONFIG_PREFIX": f"{home}/.npm-global", "TMPDIR": "/tmp"}

    def argv(self, argv: list[str], cwd: Path, env: dict[str, str],
             binds: tuple[str, ...] = ()) -> list[str]:
        """``binds``: further host paths bound at their own place (e.g. a unix socket)."""
        p = self.policy
        root = Path(p.root).resolve()
        out = ["--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/dev/shm",
               "--proc", "/proc", "--tmpfs", "/tmp",
               "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
               "--new-session"]
        if not p.network:
            out.append("--unshare-net")
        for prefix in tmp_prefixes(argv, env.get("PATH", ""), [root, *p.hidden,
                                                               self._args_dir]):
            out += ["--ro-bind", prefix, prefix]
        hidden_dirs = []
        for h in [*p.hidden, self._args_dir]:
            h = Path(h).resolve()
            if h.is_dir():
                out += ["--tmpfs", str(h)]
                hidden_dirs.append(str(h))
            elif h.exists():
                out += ["--ro-bind", "/dev/null", str(h)]
        for w in [root, *p.writable]:
            w = str(Path(w).resolve())
            out += ["--bind", w, w]
        for b in binds:
            out += ["--bind", b, b]
        for h in hidden_dirs:  # empty and read-only: a write there fails instead of vanishing
            out += ["--remount-ro", h]
        out += ["--chdir", str(Path(cwd).resolve())]
        inside = self.inside_env(env)
        for k in ("PATH", "VIRTUAL_ENV", "PYTHONUSERBASE", "NPM_CONFIG_PREFIX", "TMPDIR"):
            out += ["--setenv", k, inside[k]]
        out += ["--unsetenv", "PYTHONHOME"]
        # a free descriptor (bash picks one >= 10): the caller's inherited ones stay intact
        out = ["/bin/bash", "-c", 'exec {fd}<"$0" && exec "$1" --args "$fd" "${@:2}"',
               str(self._args_file(out)), self.bwrap]
        limits = []
        if p.memory_bytes:
            limits.append(f"--data={p.memory_bytes}")
        if p.max_processes:
            limits.append(f"--nproc={p.max_processes}")
        prlimit = shutil.which("prlimit")
        if limits and prlimit:
            out += ["--", prlimit, *limits, "--"]
        else:
            out.append("--")
        if self.cgroup is not None:  # join the cgroup, then become bwrap: all descendants follow
            out = ["/bin/sh", "-c", '{ echo $$ > "$0"; } 2>/dev/null; exec "$@"',
                   str(self.cgroup / "cgroup.procs"), *out]
        return out + list(argv)

    def run(self, command: str, cwd: Path, env: dict[str, str], timeout_s: float,
            cap: int = 16_000, *, redactor: Redactor | None = None) -> CommandResult:
        return run_argv(self.argv([*BASH, command], cwd, env), cwd, env, timeout_s, cap,
                        redactor=redactor, label=command)


def wrapper_script(sandbox: Sandbox, program: str, cwd: Path, env: dict[str, str],
                   dest: Path) -> Path:
    """An executable at ``dest`` that runs ``program`` (with the arguments it is given) inside
    ``sandbox``: for an SDK that starts its CLI itself and only takes the CLI's path (e.g.
    claude-agent-sdk's ``cli_path``). Start it with ``env`` as its environment."""
    argv = sandbox.argv([program], cwd, env)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text("#!/bin/sh\n# written by aeval: run the CLI inside the attempt's sandbox\n"
                    f"exec {shlex.join(argv)} \"$@\"\n")
    dest.chmod(0o755)
    return dest


@functools.lru_cache(maxsize=8)
def bwrap_problem(bwrap: str = "bwrap") -> str | None:
    """None when bubblewrap can make a sandbox here; otherwise why not, in one line."""
    exe = shutil.which(bwrap)
    if exe is None:
        return f"{bwrap} not found on PATH (install the `bubblewrap` package)"
    try:
        r = subprocess.run([exe, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                            "--unshare-pid", "--die-with-parent", "--", "true"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{exe} cannot run: {exc}"
    if r.returncode != 0:
        msg = (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        return f"{exe} cannot make a sandbox here (exit {r.returncode}): {msg}"
    return None


def sandbox_status(mode: SandboxMode, bwrap: str = "bwrap") -> SandboxStatus:
    """Which sandbox ``mode`` gives on this machine, and why when it is not bwrap."""
    if mode == "none":
        return SandboxStatus(requested=mode, used="none", reason="requested")
    problem = bwrap_problem(bwrap)
    if problem is None:
        return SandboxStatus(requested=mode, used="bwrap")
    return SandboxStatus(requested=mode, used="none", reason=problem)


def make_sandbox(mode: SandboxMode, policy: SandboxPolicy, bwrap: str = "bwrap") -> Sandbox:
    """The sandbox for ``mode``: auto = bwrap when it works here, else none (the reason in
    ``.status``); require = bwrap or `SandboxUnavailable`; none = unsandboxed."""
    status = sandbox_status(mode, bwrap)
    if status.used == "bwrap":
        return BwrapSandbox(policy, shutil.which(bwrap) or bwrap, status)
    if mode == "require":
        raise SandboxUnavailable(f"--sandbox require: {status.reason}")
    return NoSandbox(policy, status)
