"""The latency-bound workload of issue 13, against aeval and Inspect AI in one sitting.

A scripted OpenAI-compatible model server on loopback (aeval's own, in this process) answers
every request after ``--delay`` seconds. ``--skills`` one-case skills each make ``--requests``
model requests (bash tool calls, then the final answer); at most ``--model-concurrency``
requests are in flight, so the ideal wall clock is skills x requests x delay / model
concurrency (20 x 10 x 0.5 / 8 = 12.5 s by default), or one case's chain, requests x delay,
when there are fewer cases than model slots (5 skills: 5 s).

    .venv/bin/python benchmarks/latency_workload.py                       # both, full scale
    .venv/bin/python benchmarks/latency_workload.py --skills 5 --harness aeval

aeval:   ``aeval run --runtime builtin --model openai/scripted --api-base URL --no-grader
         --concurrency SKILLS`` with ``AEVAL_MODEL_CONCURRENCY`` = model concurrency, on a
         warm PREFECT_HOME (a literal run first migrates its database) unless --cold.
Inspect: ``inspect eval benchmarks/inspect_task.py`` (``react`` agent + ``bash`` tool, local
         sandbox, ``--max-connections`` = model concurrency, ``--max-samples`` = skills)
         from its own venv, ``benchmarks/.venv-inspect`` (created on first use; never a
         dependency of aeval).

Per harness: whole-process wall; time from process start to the first model request; span
of the model traffic (first request to last response); time from the last model response to
the last file the run wrote and to the exit; the share of prompt tokens from turn 2 on that
repeat the case's previous prompt (the scripted server's simulated prompt cache; the goal is
>= 95 %); peak RSS of the process tree; ratios to the ideal. Prints
one JSON line per harness, then a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import (  # noqa: E402
    aeval_exe,
    clean_env,
    machine,
    newest_mtime,
    run_timed,
    stop_reused_server,
    wait_warm,
)
from _workload import ledger_csv, script, skill_files, write_marketplace  # noqa: E402
from _workload import prompt as case_prompt  # noqa: E402
from task_timeline import table as task_table  # noqa: E402

from aeval.testing import ScriptedModelServer, Turn  # noqa: E402

INSPECT_VENV = HERE / ".venv-inspect"
INSPECT_REQ = "inspect-ai openai"


def ensure_inspect(venv: Path) -> Path:
    """The `inspect` command of ``venv``, creating the venv and installing Inspect AI into it
    on first use (``pip install inspect-ai openai``)."""
    exe = venv / "bin" / "inspect"
    if not exe.exists():
        print(f"creating {venv} and installing {INSPECT_REQ} (once) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *INSPECT_REQ.split()],
                       check=True)
    return exe


def traffic(server: ScriptedModelServer, start: float, delay: float) -> dict:
    """Model-traffic figures from the server's recording, relative to the process start."""
    every = [r for r in server.requests if r.wire in ("chat", "responses")]
    # Unscripted requests are the harness's own (Inspect probes the model with a one-off
    # "hello, world" before the samples start): counted, not timed as workload traffic.
    gen = [r for r in every if r.script is not None]
    stray = [r for r in every if r.script is None]
    if not gen:
        return {"requests": 0, "unscripted": len(stray)}
    first = min(r.t for r in gen)
    last_response = max(r.t for r in gen) + delay  # answered right after the delay
    # turnaround: a case's next request after its previous response (tool runs + harness)
    gaps = sorted(b.t - (a.t + delay) for name in {r.script for r in gen}
                  for a, b in pairwise(sorted((r for r in gen if r.script == name),
                                              key=lambda r: r.t)))
    span = last_response - first
    # the server's simulated prompt cache: the prefix shared with the script's previous prompt
    later = [r.usage for r in gen if r.turn and r.usage]
    prompt_tokens = sum(u["input_tokens"] + u["cached_input_tokens"] for u in later)
    cached_share = (round(sum(u["cached_input_tokens"] for u in later) / prompt_tokens, 3)
                    if prompt_tokens else None)
    return {"requests": len(gen), "faults": sum(r.fault for r in gen),
            "in_flight_mean": round(len(gen) * delay / span, 2),
            "turnaround_median_s": round(gaps[len(gaps) // 2], 3) if gaps else None,
            "turnaround_p90_s": round(gaps[int(len(gaps) * 0.9)], 3) if gaps else None,
            "cached_prefix_share": cached_share,
            "unscripted": len(stray),
            **({"unscripted_first": json.dumps(stray[0].body)[-300:]} if stray else {}),
            "first_request_s": round(first - start, 2),
            "traffic_span_s": round(last_response - first, 2),
            "last_response_s": round(last_response - start, 2)}


def figures(name: str, timed, server: ScriptedModelServer, artifacts: Path, ideal: float,
            delay: float) -> dict:
    """One harness's result line."""
    row = {"harness": name, "exit": timed.returncode, "wall_s": round(timed.wall_s, 2),
           "wall_x_ideal": round(timed.wall_s / ideal, 2), "ideal_s": ideal,
           "peak_rss_mib": round(timed.peak_rss_mib), "peak_by_process": timed.peak_by_process,
           **traffic(server, timed.start, delay)}
    if "traffic_span_s" in row:
        row["span_x_ideal"] = round(row["traffic_span_s"] / ideal, 2)
        newest = newest_mtime(artifacts)
        if newest is not None:
            # time.time() of the newest file -> seconds after the last model response
            mono = newest - (time.time() - time.monotonic())
            row["tail_s"] = round(mono - (timed.start + row["last_response_s"]), 2)
        row["exit_after_last_response_s"] = round(timed.wall_s - row["last_response_s"], 2)
    return row


def run_aeval(args, tmp: Path, prefect_home: Path, ideal: float) -> dict:
    mp = tmp / "marketplace"
    if not mp.exists():
        write_marketplace(mp, args.skills)
    exe = aeval_exe()
    env = clean_env(prefect_home, OPENAI_API_KEY="sk-scripted",
                    AEVAL_MODEL_CONCURRENCY=str(args.model_concurrency),
                    AEVAL_SERVER="embedded" if args.server == "embedded" else "reuse",
                    AEVAL_WARM="1" if args.server == "warm" else "0")
    if not args.cold:  # migrate the database and warm the disk cache: a literal run
        warm = run_timed([str(exe), "run", str(mp / "ledger-00"), "--runtime", "literal",
                          "--out", str(tmp / "warm-out"), "-q"], env)
        if warm.returncode != 0:
            raise SystemExit(f"warm-up aeval run failed ({warm.returncode}): "
                             f"{warm.stderr[-2000:]}")
    warm_process = wait_warm(prefect_home) if args.server == "warm" and not args.cold \
        else None
    scripts = [script(i, args.requests, args.delay, "aeval") for i in range(args.skills)]
    out = tmp / "aeval-out"
    with ScriptedModelServer(scripts, default=Turn(text="OK")) as srv:
        cmd = [str(exe), "run", str(mp), "--runtime", "builtin",
               "--model", "openai/scripted", "--api-base", srv.base_url_openai,
               "--no-grader", "--concurrency", str(args.concurrency or args.skills),
               "--out", str(out), "-q"]
        if args.profile:  # sample every thread's stack (see profile_threads.py)
            cmd = [sys.executable, str(HERE / "profile_threads.py"), "--", *cmd]
        try:
            timed = run_timed(cmd, env, warm=warm_process)
        finally:
            stop_reused_server(prefect_home)
        row = figures("aeval", timed, srv, out, ideal, args.delay)
        row["server"] = args.server
    print(task_table(prefect_home), file=sys.stderr)
    if args.profile:
        args.profile.write_text(timed.stdout)
        row["profile"] = str(args.profile)
    if timed.returncode != 0:
        row["stderr_tail"] = timed.stderr[-1500:]
    return row


def run_inspect(args, tmp: Path, ideal: float) -> dict:
    exe = ensure_inspect(args.inspect_venv)
    spec = tmp / "inspect-spec.json"
    spec.write_text(json.dumps([{
        "id": f"case-{i:02d}", "input": case_prompt(i), "target": f"{ledger_csv(i)[1]:.2f}",
        "files": {f".agents/skills/ledger-{i:02d}/{rel}": text
                  for rel, text in skill_files(i).items()}
        | {"fixtures/ledger.csv": (tmp / "marketplace" / f"ledger-{i:02d}" / "fixtures"
                                   / "ledger.csv").read_text()},
    } for i in range(args.skills)]))
    logs = tmp / "inspect-logs"
    # Inspect resolves the task file relative to the working directory: copy it there.
    (tmp / "inspect_task.py").write_text((HERE / "inspect_task.py").read_text())
    env = {**os.environ, "OPENAI_API_KEY": "sk-scripted", "INSPECT_LOG_DIR": str(logs),
           "INSPECT_DISPLAY": "none"}
    scripts = [script(i, args.requests, args.delay, "inspect") for i in range(args.skills)]
    with ScriptedModelServer(scripts, default=Turn(text="OK")) as srv:
        timed = run_timed([str(exe), "eval", "inspect_task.py", "-T",
                           f"spec={spec}", "--model", "openai/scripted",
                           "--model-base-url", srv.base_url_openai,
                           "--max-connections", str(args.model_concurrency),
                           "--max-samples", str(args.concurrency or args.skills),
                           "--log-dir", str(logs), "--display", "none",
                           *(["--max-subprocesses", str(args.inspect_max_subprocesses)]
                             if args.inspect_max_subprocesses else [])], env, cwd=tmp)
        row = figures("inspect", timed, srv, logs, ideal, args.delay)
    if timed.returncode != 0:
        row["stderr_tail"] = timed.stderr[-1500:]
    return row


def table(rows: list[dict]) -> str:
    keys = [("wall_s", "whole process s"), ("wall_x_ideal", "  x ideal"),
            ("first_request_s", "first model request s"), ("traffic_span_s", "model traffic s"),
            ("span_x_ideal", "  x ideal"), ("tail_s", "last response -> last file s"),
            ("exit_after_last_response_s", "last response -> exit s"),
            ("in_flight_mean", "requests in flight, mean"),
            ("turnaround_median_s", "turnaround median s"),
            ("turnaround_p90_s", "turnaround p90 s"),
            ("cached_prefix_share", "cacheable prefix, turn 2+"),
            ("requests", "model requests"), ("peak_rss_mib", "peak RSS MiB"),
            ("exit", "exit code")]
    lines = [f"| {'':30} | " + " | ".join(f"{r['harness']:>8}" for r in rows) + " |",
             "|" + "-" * 32 + "|" + "|".join("-" * 10 for _ in rows) + "|"]
    for key, label in keys:
        lines.append(f"| {label:30} | "
                     + " | ".join(f"{r.get(key, '-')!s:>8}" for r in rows) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skills", type=int, default=20, help="one-case skills (default 20)")
    ap.add_argument("--requests", type=int, default=10, help="model requests per case")
    ap.add_argument("--delay", type=float, default=0.5, help="seconds per model request")
    ap.add_argument("--model-concurrency", type=int, default=8,
                    help="requests in flight (AEVAL_MODEL_CONCURRENCY / --max-connections)")
    ap.add_argument("--concurrency", type=int, default=None,
                    help="case chains / samples at once (default: --skills)")
    ap.add_argument("--harness", choices=["both", "aeval", "inspect"], default="both")
    ap.add_argument("--server", choices=["warm", "reuse", "embedded"], default="warm",
                    help="aeval's Prefect server and process: the local server reused across "
                         "invocations and the warm process both started by the warm-up run "
                         "(warm: the default outside CI); the reused server with aeval "
                         "importing for itself (reuse: AEVAL_WARM=0); one embedded server per "
                         "invocation (embedded: CI's)")
    ap.add_argument("--cold", action="store_true",
                    help="aeval on a fresh PREFECT_HOME (default: warmed by a literal run)")
    ap.add_argument("--profile", type=Path, metavar="FILE",
                    help="run aeval under profile_threads.py (needs py-spy) and write its "
                    "report to FILE; the aeval figures then include the sampling cost")
    ap.add_argument("--inspect-venv", type=Path, default=INSPECT_VENV)
    ap.add_argument("--inspect-max-subprocesses", type=int, default=None,
                    help="Inspect's --max-subprocesses (default: its own, the CPU count)")
    args = ap.parse_args()
    # bound by the model slots, or by one case's chain of requests when cases are fewer
    ideal = round(max(args.skills * args.requests * args.delay / args.model_concurrency,
                      args.requests * args.delay), 2)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}",
          file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="aeval-latency-") as t:
        tmp = Path(t)
        write_marketplace(tmp / "marketplace", args.skills)
        if args.harness in ("both", "aeval"):
            rows.append(run_aeval(args, tmp, tmp / "prefect-home", ideal))
            print(json.dumps(rows[-1]), flush=True)
        if args.harness in ("both", "inspect"):
            rows.append(run_inspect(args, tmp, ideal))
            print(json.dumps(rows[-1]), flush=True)
    print(f"\nideal = max({args.skills} x {args.requests} x {args.delay} / "
          f"{args.model_concurrency}, {args.requests} x {args.delay}) = {ideal} s\n"
          + table(rows))


if __name__ == "__main__":
    main()
