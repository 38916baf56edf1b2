"""Shared helpers of the benchmark scripts: run a command while sampling the resident memory
of its whole process tree, a clean environment for `aeval run`, and small formatting.

The scripts drive the product only through its command line (``aeval run ...`` as a
subprocess), so they keep measuring the same thing while the flow behind it changes.
Stdlib only: the scripts run from the project's venv but import nothing of aeval here.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def aeval_exe() -> Path:
    """The `aeval` console script of the interpreter running the benchmark."""
    exe = Path(sys.executable).parent / "aeval"
    if not exe.exists():
        raise SystemExit(f"error: {exe} not found: install aeval into this venv (pip install -e .)")
    return exe


def clean_env(prefect_home: Path, **extra: str) -> dict[str, str]:
    """The environment for `aeval run`: the current one with its own PREFECT_HOME (ephemeral
    server, SQLite), no PREFECT_API_URL (no shared server), analytics off, one embedded
    server per invocation (``AEVAL_SERVER=embedded``, as under CI: nothing outlives the
    benchmark) unless ``extra`` says ``reuse`` (warm_run.py)."""
    env = {**os.environ, "PREFECT_HOME": str(prefect_home),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "AEVAL_SERVER": "embedded", **extra}
    env.pop("PREFECT_API_URL", None)
    return env


def warm_pid(prefect_home: Path) -> int | None:
    """The warm process (`aeval.deployments.servers.warm`) serving ``prefect_home``, if one runs."""
    try:
        pid = int((prefect_home / "aeval-server" / "warm.lock").read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"aeval.deployments.servers.warm" in cmdline else None


def wait_warm(prefect_home: Path, timeout: float = 300) -> int:
    """Wait until a warm process serves ``prefect_home`` (after a first in-process run)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = warm_pid(prefect_home)
        if pid and (prefect_home / "aeval-server" / "warm.sock").exists():
            return pid
        time.sleep(0.2)
    raise SystemExit(f"no warm process on {prefect_home} after {timeout:.0f} s")


def proc_cpu(pid: int | None, reaped: bool = False) -> float:
    """CPU seconds (user + sys) ``pid`` has used, plus its reaped children's with ``reaped``
    (a warm child's CPU lands in the warm process's once it is reaped); 0 when gone."""
    if not pid:
        return 0.0
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def stop_reused_server(prefect_home: Path) -> None:
    """Stop the reused local server a ``reuse`` run left on ``prefect_home`` (if any), and
    its warm process (which stops once its socket is gone)."""
    import json
    import signal

    (prefect_home / "aeval-server" / "warm.sock").unlink(missing_ok=True)

    try:
        pid = json.loads((prefect_home / "aeval-server" / "server.json").read_text())["pid"]
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, KeyError):
        pass


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from /proc (host pids: bubblewrap'd processes included)."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_rss(root: int, warm: int | None = None) -> tuple[int, dict[str, int]]:
    """Resident bytes of ``root`` and all its descendants right now (0 once it is gone),
    and the bytes per command name (``comm``), to tell which processes hold the memory.
    With ``warm`` (a warm process's pid), its children count too (the warm run's process
    and what it started), not the warm process itself."""
    tree = _children()
    total = 0
    todo: list[tuple[int, bytes | None]] = [(root, None), *(
        (pid, None) for pid in (tree.get(warm, ()) if warm else ()))]
    by_name: dict[str, int] = {}
    while todo:
        pid, parent_cmdline = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{pid}/statm", "rb") as f:
                rss = int(f.read().split()[1]) * PAGE
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
        except (OSError, IndexError, ValueError):
            cmdline, rss, name = b"", 0, "?"
        if parent_cmdline is not None and cmdline == parent_cmdline:
            # a fork (or vfork) of its parent that has not exec'd yet: its resident pages
            # are its parent's (vfork shares them outright), counting them again made a
            # 20-chain run look like 3.5 GiB
            rss = 0
        total += rss
        by_name[name] = by_name.get(name, 0) + rss
        todo.extend((child, cmdline) for child in tree.get(pid, ()))
    return total, by_name


@dataclass
class Timed:
    """One timed command: its wall clock, the process-tree memory peak, its exit status."""

    start: float
    """time.monotonic() just before the process started."""
    wall_s: float = 0.0
    peak_rss_mib: float = 0.0
    peak_by_process: dict[str, int] | None = None
    """MiB per command name at the peak sample."""
    returncode: int = 0
    stdout: str = ""
    stderr: str = ""


def run_timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None,
              sample_s: float = 0.25, timeout: float = 3600, warm: int | None = None) -> Timed:
    """Run ``cmd`` to completion; sample the RSS of its process tree every ``sample_s``
    (with the warm process's children: ``warm``, its pid). Output goes to temporary files
    (a pipe that fills would stall the measured process)."""
    out_f = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-{os.getpid()}-{time.time_ns()}"
    with open(f"{out_f}.out", "w+") as out, open(f"{out_f}.err", "w+") as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        timed = Timed(start=start)
        peak, peak_by = 0, {}
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak, peak_by
            while not stop.is_set():
                total, by_name = tree_rss(proc.pid, warm)
                if total > peak:
                    peak, peak_by = total, by_name
                stop.wait(sample_s)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            timed.returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            timed.returncode = proc.wait()
        timed.wall_s = time.monotonic() - start
        stop.set()
        sampler.join()
        timed.peak_rss_mib = peak / 2**20
        timed.peak_by_process = {k: round(v / 2**20) for k, v in
                                 sorted(peak_by.items(), key=lambda kv: -kv[1])[:6]}
        out.seek(0)
        err.seek(0)
        timed.stdout, timed.stderr = out.read(), err.read()
    for suffix in (".out", ".err"):
        Path(f"{out_f}{suffix}").unlink(missing_ok=True)
    return timed


def newest_mtime(root: Path) -> float | None:
    """time.time() of the most recently written file under ``root`` (None: no file)."""
    newest = None
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                m = os.stat(os.path.join(dirpath, name)).st_mtime
            except OSError:
                continue
            newest = m if newest is None or m > newest else newest
    return newest


def machine() -> str:
    """One line naming the machine: CPU count, model, memory, load right now."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem = Path("/proc/meminfo").read_text().split()[1]
        mem_gib = f"{int(mem) / 2**20:.0f} GiB"
    except (OSError, IndexError, ValueError):
        mem_gib = "?"
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} CPU ({model or platform.machine()}), {mem_gib}, "
            f"Python {platform.python_version()}, load {load:.1f} at start")
