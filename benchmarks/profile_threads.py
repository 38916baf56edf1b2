"""Where the wall clock of one `aeval run` goes: sample every thread's Python stack with
py-spy at a fixed interval and classify what each thread is doing (importing, starting the
ephemeral Prefect server, waiting on an upstream task, acquiring a concurrency slot from the
API, waiting for a model slot, a model request in flight, a sandboxed command, task code,
Prefect's own task-run bookkeeping, idle, interpreter shutdown).

    .venv/bin/pip install py-spy        # once, into the benchmark venv (not a dependency)
    .venv/bin/python benchmarks/profile_threads.py -- .venv/bin/aeval run SKILLS ...

Prints the main thread's phases (start and end, seconds from process start), then the
thread-seconds per state of the task-runner workers, then a per-second timeline of the
workers. Sampling is --nonblocking (the process is not paused), so the cost is the samplers'
CPU, on a 2-core machine not nothing: compare figures taken the same way.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

# (state, regex over the thread's frames joined by "\n"), first match wins
WORKER_RULES = [
    ("import litellm", r"litellm/__init__|<module> \(litellm"),
    ("import (lock or module)", r"_find_and_load|_ModuleLock\.acquire|_lock_unlock_module"),
    ("tag concurrency slot (API)", r"acquire_concurrency_slots|concurrency/_sync|_leases"),
    ("wait_for upstream task", r"PrefectConcurrentFuture\.wait|wait_for|resolve_inputs"),
    ("model slot wait", r"(Bounded)?Semaphore\.acquire[^\n]*\n[^\n]*complete \(.*llm\.py"),
    ("model request", r"complete \(.*adapters/llm\.py"),
    ("sandboxed command", r"run_command|Popen|subprocess\.py|_communicate"),
    ("task code", r"call_task_fn"),
    ("Prefect task-run bookkeeping", r"run_task_sync|task_engine\.py"),
    ("idle (no work)", r"_worker \(concurrent/futures/thread\.py"),
]
MAIN_RULES = [
    ("imports", r"_find_and_load"),
    ("ephemeral server start", r"SubprocessASGIServer\.start"),
    ("ephemeral server stop", r"SubprocessASGIServer\.stop"),
    ("flow end (heartbeat join)", r"_send_heartbeats"),
    ("flow waits on tasks", r"as_completed|PrefectConcurrentFuture\.wait|Future\.result"),
    ("flow body", r"evaluate \(|call_flow_fn"),
    ("flow-run setup / teardown (API)", r"flow_engine\.py"),
    ("command line", r"deployments/"),
]


def classify(frames: list[str], rules: list[tuple[str, str]]) -> str:
    if not frames:
        return "no Python frames (GC, C code, or interpreter shutdown)"
    text = "\n".join(frames)
    for state, pattern in rules:
        if re.search(pattern, text):
            return state
    return "other: " + frames[0].split(" (")[0]


def parse_dump(text: str) -> list[tuple[str, bool, list[str]]]:
    """py-spy dump output -> [(thread name, is main, frames top first)]."""
    threads = []
    for chunk in re.split(r"\nThread ", "\n" + text)[1:]:
        lines = chunk.splitlines()
        head = lines[0]
        name = head.split('"')[1] if '"' in head else head.split()[0]
        frames = [ln.strip() for ln in lines[1:] if ln.startswith("    ") and ln.strip()]
        threads.append((name, name == "MainThread" or '"' not in head, frames))
    return threads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    ap.add_argument("--keep", type=Path, help="also write the raw dumps to this file")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command to profile")
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if not cmd or not spy:
        raise SystemExit("error: need a command after -- and py-spy (pip install py-spy)")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples: list[tuple[float, list[tuple[str, bool, list[str]]]]] = []
    raw = []
    while proc.poll() is None:
        t = time.monotonic() - start
        out = subprocess.run([spy, "dump", "--nonblocking", "--pid", str(proc.pid)],
                             capture_output=True, text=True).stdout
        if out.strip():
            samples.append((t, parse_dump(out)))
            raw.append(f"=== {t:.2f}\n{out}")
        time.sleep(max(0.0, args.interval - (time.monotonic() - start - t)))
    wall = time.monotonic() - start
    if args.keep:
        args.keep.write_text("\n".join(raw))
    print(f"exit {proc.returncode}, wall {wall:.2f} s, {len(samples)} samples\n")

    print("main thread phases (s from process start):")
    phases: list[list] = []
    for t, threads in samples:
        main_frames = next((f for n, m, f in threads if m), [])
        state = classify(main_frames, MAIN_RULES)
        if phases and phases[-1][0] == state:
            phases[-1][2] = t
        else:
            phases.append([state, t, t])
    for i, (state, t0, _) in enumerate(phases):
        t1 = phases[i + 1][1] if i + 1 < len(phases) else wall
        print(f"  {t0:6.2f} - {t1:6.2f}  {t1 - t0:5.2f} s  {state}")

    per_state: Counter[str] = Counter()
    timeline: dict[int, Counter[str]] = {}
    for i, (t, threads) in enumerate(samples):
        dt = (samples[i + 1][0] if i + 1 < len(samples) else wall) - t
        for name, _main, frames in threads:
            if not name.startswith("ThreadPoolExecutor"):
                continue
            state = classify(frames, WORKER_RULES)
            per_state[state] += dt
            timeline.setdefault(int(t), Counter())[state] += 1
    total = sum(per_state.values()) or 1
    print("\ntask-runner worker thread-seconds by state:")
    for state, secs in per_state.most_common():
        print(f"  {secs:7.1f} s  {100 * secs / total:4.0f} %  {state}")
    print("\nworkers per second (state: threads in the samples of that second):")
    for sec in sorted(timeline):
        row = ", ".join(f"{s} {n}" for s, n in timeline[sec].most_common())
        print(f"  {sec:4d}s  {row}")


if __name__ == "__main__":
    main()
