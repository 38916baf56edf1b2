"""The fixed cost of one invocation: a warm one-skill literal run (the example `csv-stats`
skill: 2 cases and its SKILL.md doc test, ~1 s of work) in three modes, alternating in one
sitting so that all see the same load: ``embedded``, a server per invocation
(``AEVAL_SERVER=embedded``, what CI gets); ``reuse``, the reused local server with every
invocation importing Prefect and the flows itself (``AEVAL_WARM=0``); ``warm``, the reused
server and the warm process (`aeval.deployments.servers.warm`), the default outside CI.

    .venv/bin/python benchmarks/warm_run.py              # 5 runs of each, after one warm-up
    .venv/bin/python benchmarks/warm_run.py --runs 3 --modes warm

Per run: wall clock; CPU (user + sys) of the aeval process tree (the embedded server and the
sandboxed commands included: they are its reaped children); of the warm child (forked by the
warm process, which reaps it: the growth of its children's CPU); CPU the reused server spent
during the run (from /proc; it is no child of aeval's); seconds from the process start to
its first console line and to ``1 skill(s), N case run(s)`` (the plan); the same from the first line
(the issue's "13.7 s between the first console line and ..."). CPU figures do not depend on
the machine's load the way wall clocks do. Prints one JSON line per run, then medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import (  # noqa: E402
    aeval_exe,
    clean_env,
    machine,
    proc_cpu,
    stop_reused_server,
    wait_warm,
    warm_pid,
)

SKILL = HERE.parent / "examples" / "marketplace" / "skills" / "csv-stats"
TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(home: Path) -> tuple[int | None, float]:
    """The reused server's pid and the CPU seconds it has used so far."""
    try:
        pid = json.loads((home / "aeval-server" / "server.json").read_text())["pid"]
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError, KeyError):
        return None, 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return pid, (int(fields[11]) + int(fields[12])) / TICK


def one_run(mode: str, home: Path, out: Path) -> dict:
    env = clean_env(home, AEVAL_SERVER="embedded" if mode == "embedded" else "reuse",
                    AEVAL_WARM="1" if mode == "warm" else "0",
                    AEVAL_SANDBOX=os.environ.get("AEVAL_SANDBOX", "auto"))
    env.pop("CI", None)
    pid_before, cpu_before = server_cpu(home)
    warm = warm_pid(home) if mode == "warm" else None
    warm_before = proc_cpu(warm, reaped=True)
    lines: list[tuple[float, str]] = []
    start = time.monotonic()
    env.pop("AEVAL_MODEL", None)  # no model: literal, and the "runtime: literal" line first
    proc = subprocess.Popen([str(aeval_exe()), "run", str(SKILL), "--out", str(out)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True)

    def read() -> None:
        for line in proc.stdout:
            lines.append((time.monotonic() - start, line.rstrip()))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(5)
    pid_after, cpu_after = server_cpu(home)
    time.sleep(0.3)  # the warm process reaps its child within 0.2 s: its CPU is then counted
    warm_cpu = round(proc_cpu(warm, reaped=True) - warm_before, 2) if warm else None
    server = None
    if mode != "embedded" and pid_after is not None:
        server = round(cpu_after - (cpu_before if pid_before == pid_after else 0.0), 2)
    first = lines[0][0] if lines else None
    planned = next((t for t, text in lines if "case run(s)" in text), None)
    return {"mode": mode, "exit": proc.returncode, "wall_s": round(wall, 2),
            "cpu_tree_s": round(usage.ru_utime + usage.ru_stime, 2),
            "cpu_warm_child_s": warm_cpu,
            "cpu_reused_server_s": server,
            "cpu_total_s": round(usage.ru_utime + usage.ru_stime + (server or 0.0)
                                 + (warm_cpu or 0.0), 2),
            "first_line_s": round(first, 2) if first is not None else None,
            "planned_s": round(planned, 2) if planned is not None else None,
            "first_line_to_planned_s": round(planned - first, 2)
            if planned is not None and first is not None else None,
            "load": round(os.getloadavg()[0], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="measured runs per mode")
    ap.add_argument("--modes", default="embedded,reuse,warm",
                    help="embedded: a server per invocation (CI's); reuse: the reused server, "
                         "every invocation importing for itself (AEVAL_WARM=0); warm: the "
                         "reused server and the warm process (the default outside CI)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}",
          file=sys.stderr)
    rows: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="aeval-warm-"))
    try:
        home, out = tmp / "prefect-home", tmp / "store"
        for mode in modes:  # warm-up: the database exists, the reused server runs
            one_run(mode, home, out)
        if "warm" in modes:  # the first warm-mode run started the warm process
            wait_warm(home)
        for _ in range(args.runs):
            for mode in modes:
                row = one_run(mode, home, out)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        stop_reused_server(tmp / "prefect-home")
        shutil.rmtree(tmp, ignore_errors=True)
    keys = ["wall_s", "cpu_total_s", "cpu_tree_s", "cpu_warm_child_s", "cpu_reused_server_s",
            "first_line_s",
            "planned_s", "first_line_to_planned_s", "load"]
    print(f"\n| median of {args.runs} | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        cells = []
        for k in keys:
            vals = [r[k] for r in mine if r[k] is not None]
            cells.append(f"{statistics.median(vals):.2f}" if vals else "-")
        print(f"| {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
