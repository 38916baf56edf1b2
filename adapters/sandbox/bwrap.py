"""Sandboxes for the commands of a case: ``bwrap`` (bubblewrap) and ``none``.

bwrap, per shared/notes/sandbox.md: an **allowlisted view** (`aeval.adapters.sandbox._view`:
the system trees, a minimal /etc, the toolchain, what the command starts, the attempt, what
the case declares; nothing else of the host exists inside), a fresh /proc, a minimal /dev, a
private /tmp, the attempt root bound writable at its own path (so every path aeval hands out
stays valid inside), the skill copy pinned (cannot be renamed inside), its own PID, IPC and
UTS namespaces (a process inside sees neither aeval, nor the Prefect server, nor another
case; when the command ends, the namespace's init dies and takes every descendant,
``setsid`` ones included), ``--die-with-parent`` so nothing outlives aeval, a **private
network namespace always** (`aeval.adapters.sandbox._network`: outbound through slirp4netns
for a case that declares ``network: true``, the host itself unreachable), and only a few
capabilities (`aeval.adapters.sandbox._limits`: root inside cannot remount or reconfigure
anything).

The toolchain inside is aeval's and read-only: first on PATH the Python environment of
`aeval.adapters.sandbox._toolchain` (bound read-only; a ``pip install`` lands in the attempt's
HOME), then the folders of the host tools the case declares, the system folders, and last
the attempt's own ``$HOME/.local/bin`` and ``$HOME/.npm-global/bin`` (what a setup installs is
found, but never before a system tool of the same name: a planted ``bash`` or ``python3``
there shadows nothing). aeval starts every helper by absolute path (bash, sh, prlimit,
bwrap), never through a PATH lookup in the command's environment.

Limits (`aeval.adapters.sandbox._limits`): RLIMIT_DATA, RLIMIT_FSIZE and RLIMIT_NPROC through
``prlimit``; a pids cgroup and a memory cgroup per attempt where they can be made.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import tempfile
import uuid
import weakref
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from aeval.adapters.sandbox._disk import DiskBounded, tmp_options
from aeval.adapters.sandbox._limits import (
    cap_options,
    join_cgroups,
    key_filter,
    make_cgroup,
    oom_kills,
    remove_cgroup,
    rlimit_options,
)
from aeval.adapters.sandbox._network import network_tools, with_outbound
from aeval.adapters.sandbox._toolchain import base_python, toolchain
from aeval.adapters.sandbox._view import (
    RESOLV_CONF,
    SYSTEM_PATH,
    NotFollowed,
    in_system_tree,
    own_folder,
    proc_view,
    python_view,
    shown_prefixes,
    system_view,
)
from aeval.errors import EnvironmentFailure
from aeval.isolation.memory import memory_reason, refused_allocation
from aeval.isolation.redact import Redactor
from aeval.isolation.sandbox import (
    Sandbox,
    SandboxMode,
    SandboxPolicy,
    SandboxStatus,
    SandboxUnavailable,
)
from aeval.isolation.shell import (
    BASH,
    CommandResult,
    bash_argv,
    command_file,
    run_argv,
)

UV_ENV = {"UV_PYTHON": str(base_python()), "UV_PYTHON_DOWNLOADS": "never"}
"""uv inside: the base interpreter (shown read-only; a script's environment made with it
stays valid across runs), never a downloaded one."""

NO_NETWORK_RETRIES = {"NPM_CONFIG_FETCH_RETRIES": "0", "PIP_RETRIES": "0",
                      "UV_HTTP_RETRIES": "0"}
"""In a case without network, the package managers try the registry once: npm (and pnpm,
which reads npm's settings) otherwise retries an unreachable one with a 10 s then 60 s
back-off, 71 s per `npx` before the same "getaddrinfo EAI_AGAIN" a first try gives; pip and
uv back off too. Nothing can answer: the retries would only cost the run time. Defaults: the
case's own environment still wins."""


def sandbox_path(home: str, pybin: Path, shown: list[Path] = ()) -> str:
    """PATH inside: aeval's toolchain first, the folders of the host tools the case declares
    (outside the system trees), the system folders, and last the attempt's own bins (which
    the attempt writes, so they shadow nothing). Nothing of the host's own PATH: a folder
    there is not shown."""
    declared = [str(p if p.is_dir() else p.parent) for p in map(Path, shown)
                if not in_system_tree(p)]
    return os.pathsep.join(dict.fromkeys([str(pybin), *declared, *SYSTEM_PATH,
                                          f"{home}/.local/bin", f"{home}/.npm-global/bin"]))


def _prlimit() -> str | None:
    found = shutil.which("prlimit", path=os.environ.get("PATH", os.defpath))
    return str(Path(found).resolve()) if found else None


class NoSandbox(DiskBounded):
    """Today's isolation: a process group with a scrubbed environment, killed at the end."""

    name: ClassVar[str] = "none"

    def __init__(self, policy: SandboxPolicy, status: SandboxStatus | None = None):
        self.policy = policy
        self.status = status or SandboxStatus(requested="none", used="none",
                                              reason="requested")

    def run(self, command: str, cwd: Path, env: dict[str, str], timeout_s: float,
            cap: int = 16_000, *, redactor: Redactor | None = None) -> CommandResult:
        with command_file(command) as fd:
            return run_argv(bash_argv(fd), cwd, env, timeout_s, cap, redactor=redactor,
                            label=command, pass_fds=(fd,), guard=self.guard)

    def argv(self, argv: list[str], cwd: Path, env: dict[str, str],
             binds: tuple[str, ...] = ()) -> list[str]:
        return list(argv)

    def inside_env(self, env: dict[str, str]) -> dict[str, str]:
        return dict(env)


class BwrapSandbox(DiskBounded):
    """bubblewrap around every command (see the module docstring for what it guarantees)."""

    name: ClassVar[str] = "bwrap"

    def __init__(self, policy: SandboxPolicy, bwrap: str = "bwrap",
                 status: SandboxStatus | None = None):
        self.policy = policy
        self.bwrap = shutil.which(bwrap) or bwrap  # by absolute path, found once
        self.status = status or SandboxStatus(requested="require", used="bwrap")
        self.cgroups: dict[str, Path] = {}  # controller -> the attempt's cgroup
        for controller, limit in (("pids", policy.max_processes),
                                  ("memory", policy.memory_bytes)):
            cg = make_cgroup(controller, limit) if limit else None
            if cg is not None:
                self.cgroups[controller] = cg
                weakref.finalize(self, remove_cgroup, cg)
        self._args_dir = Path(tempfile.mkdtemp(prefix="aeval-bwrap-args-"))
        weakref.finalize(self, shutil.rmtree, self._args_dir, True)

    @property
    def cgroup(self) -> Path | None:
        """The attempt's pids cgroup (None where none could be made)."""
        return self.cgroups.get("pids")

    @property
    def memory_cgroup(self) -> Path | None:
        """The attempt's memory cgroup (None where none could be made)."""
        return self.cgroups.get("memory")

    def _memory_stop(self, evidence: str) -> str:
        """The attempt's reason for a command stopped at the memory limit (kept as
        ``exceeded`` when it is the first bound the attempt went over)."""
        why = memory_reason(self.policy.memory_bytes or 0, evidence)
        if self.exceeded is None:
            self.exceeded = why
        return why

    def guard(self, pid: int, kill: Callable[[], None]) -> Callable[[], str | None]:
        """The disk bound's guard, and the memory cgroup's evidence: an OOM kill counted in
        the attempt's cgroup while the command ran (the kernel SIGKILLed a process at the
        case's memory limit) is that bound, not a kill from outside."""
        done = super().guard(pid, kill)
        cg = self.memory_cgroup
        if cg is None:
            return done
        before = oom_kills(cg)

        def check() -> str | None:
            why = done()
            if why is None and oom_kills(cg) > before:
                why = self._memory_stop("the kernel's OOM killer ended a process of the case")
            return why

        return check

    def close(self) -> None:
        """Remove the attempt's cgroups and argument files (also done when the sandbox is
        garbage-collected)."""
        for cg in self.cgroups.values():
            remove_cgroup(cg)
        shutil.rmtree(self._args_dir, ignore_errors=True)

    def _args_file(self, options: list[str]) -> Path:
        """bwrap's options in a file it reads through ``--args FD``: its command line (which a
        process inside can read from /proc/1/cmdline) stays short. The file's
        folder is under /tmp, so it does not exist inside, and bwrap closes the descriptor
        after reading it."""
        self._args_dir.mkdir(parents=True, exist_ok=True)
        path = self._args_dir / f"{uuid.uuid4().hex}.args"
        path.write_bytes(b"".join(o.encode() + b"\0" for o in options))
        return path

    def inside_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` as a sandboxed process sees it (what `argv` sets on top of it)."""
        root = Path(self.policy.root).resolve()
        home = env.get("HOME") or str(root / "home")
        tools = toolchain()
        return {**({} if self.policy.network else NO_NETWORK_RETRIES),
                **{k: v for k, v in env.items() if k != "PYTHONHOME"},
                "PATH": sandbox_path(home, tools / "bin", self.policy.shown),
                "VIRTUAL_ENV": str(tools), "PYTHONUSERBASE": f"{home}/.local",
                "NPM_CONFIG_PREFIX": f"{home}/.npm-global", "TMPDIR": "/tmp",
                **UV_ENV}

    def _resolv_conf(self) -> str:
        path = self._args_dir / "resolv.conf"
        if not path.is_file():
            self._args_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(RESOLV_CONF)
        return str(path)

    def _seccomp(self) -> str | None:
        """The file of the seccomp program (`key_filter`), None where there is none."""
        prog = key_filter()
        if prog is None:
            return None
        path = self._args_dir / "seccomp.bpf"
        if not path.is_file():
            self._args_dir.mkdir(parents=True, exist_ok=True)
            path.write_bytes(prog)
        return str(path)

    def _view(self, argv: list[str], binds: tuple[str, ...]) -> list[str]:
        """The mounts (`aeval.adapters.sandbox._view`): the system trees and a minimal /etc,
        the toolchain, what the command starts and the host tools the case declares, all
        read-only; the attempt writable; the skill copy pinned; then the root read-only."""
        p = self.policy
        root = own_folder(p.root)
        writable = [root, *map(own_folder, p.writable)]
        out = [*system_view(), "--ro-bind", self._resolv_conf(), "/etc/resolv.conf",
               "--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc", *proc_view(),
               *tmp_options(self.bwrap, p)]
        tools = str(toolchain())
        out += ["--ro-bind", tools, tools, *python_view()]
        programs = [a for a in argv if a.startswith("/") and not a.startswith(("/dev/", "/proc/"))
                    and os.path.isfile(a) and os.access(a, os.X_OK)]
        for prefix in shown_prefixes([*programs, *map(str, p.shown)], writable):
            if prefix != tools:
                out += ["--ro-bind", prefix, prefix]
        for r in p.readonly:
            out += ["--ro-bind", str(r), str(r)]
        for w in writable:
            out += ["--bind", str(w), str(w)]
        for pin in p.pinned:
            try:
                pin = own_folder(pin, within=p.root)
            except NotFollowed:  # moved aside: Δ finds it; nothing to pin
                continue
            out += ["--bind", str(pin), str(pin)]
        for b in binds:
            out += ["--bind", b, b]
        return [*out, "--remount-ro", "/"]

    def argv(self, argv: list[str], cwd: Path, env: dict[str, str],
             binds: tuple[str, ...] = ()) -> list[str]:
        """``binds``: further host paths bound at their own place (e.g. a unix socket)."""
        p = self.policy
        out = self._view(argv, binds)
        out += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                "--new-session", *cap_options()]
        if not p.network:  # else the launcher made the private namespace, with a way out
            out.append("--unshare-net")
        out += ["--chdir", str(Path(cwd).resolve())]
        inside = self.inside_env(env)
        for k in ("PATH", "VIRTUAL_ENV", "PYTHONUSERBASE", "NPM_CONFIG_PREFIX", "TMPDIR",
                  *UV_ENV, *(k for k in NO_NETWORK_RETRIES if k not in env)):
            if k in inside:
                out += ["--setenv", k, inside[k]]
        out += ["--unsetenv", "PYTHONHOME"]
        # free descriptors (bash picks them >= 10): the caller's inherited ones stay intact
        args, seccomp = str(self._args_file(out)), self._seccomp()
        if seccomp is None:
            out = [BASH[0], "-c", 'exec {fd}<"$0" && exec "$1" --args "$fd" "${@:2}"', args,
                   self.bwrap]
        else:
            out = [BASH[0], "-c", 'exec {fd}<"$0" {sfd}<"$1" && '
                   'exec "$2" --args "$fd" --seccomp "$sfd" "${@:3}"', args, seccomp, self.bwrap]
        limits = rlimit_options(p.memory_bytes, p.max_file_bytes, p.max_processes)
        prlimit = _prlimit()
        if limits and prlimit:
            out += ["--", prlimit, *limits, "--"]
        else:
            out.append("--")
        # join the attempt's cgroups, then become bwrap: all descendants follow
        out = join_cgroups(list(self.cgroups.values()), out) + list(argv)
        return with_outbound(out) if p.network else out

    def run(self, command: str, cwd: Path, env: dict[str, str], timeout_s: float,
            cap: int = 16_000, *, redactor: Redactor | None = None) -> CommandResult:
        """``command`` of any length: bash reads it from a sealed descriptor that bwrap passes
        through (`aeval.isolation.shell.command_file`), not from its command line."""
        with command_file(command) as fd:
            try:
                argv = self.argv(bash_argv(fd), cwd, env)
            except NotFollowed as exc:  # the attempt swapped a folder of its own: never run
                return CommandResult(command=command, exit_code=126, stdout="",
                                     stderr=f"aeval: {exc}", duration_s=0.0, timed_out=False,
                                     truncated=False)
            r = run_argv(argv, cwd, env, timeout_s, cap, redactor=redactor, label=command,
                         pass_fds=(fd,), guard=self.guard)
        if (r.exceeded is None and not r.timed_out and r.exit_code not in (0, None)
                and self.policy.memory_bytes
                and (line := refused_allocation(r.stderr)) is not None):
            r = replace(r, exceeded=self._memory_stop(f"an allocation was refused: {line}"))
        return r


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
        if policy.network and isinstance(problem := network_tools(), str):
            raise EnvironmentFailure(problem)
        return BwrapSandbox(policy, shutil.which(bwrap) or bwrap, status)
    if mode == "require":
        raise SandboxUnavailable(f"--sandbox require: {status.reason}")
    return NoSandbox(policy, status)
