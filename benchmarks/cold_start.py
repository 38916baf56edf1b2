"""Cold start: the first `aeval run` on a fresh PREFECT_HOME (what every CI job is) against the
same run on the now-warm one, and the time from process start to the first model request.

    .venv/bin/python benchmarks/cold_start.py
    .venv/bin/python benchmarks/cold_start.py --examples   # + the example marketplace, literal

Rows:
- ``cli``: ``aeval --version`` (interpreter start + the command line's imports: the floor);
- ``model cold`` / ``model cached`` / ``model warm``: two one-case ``ledger`` skills (see
  _workload.py) on the builtin runtime against the scripted model server (``--requests``
  requests of ``--delay`` s each); the first model request is timed from the process start.
  cold: a fresh PREFECT_HOME and an empty aeval cache (a fresh CI container); cached: a fresh
  PREFECT_HOME, aeval's cache holding the migrated database the cold run left (a CI job
  with the template's cache); warm: the cold run's PREFECT_HOME again;
- with ``--examples``: ``examples cold`` / ``examples warm``: the example marketplace under
  the literal runtime (the figure of issue 13: ~55 s cold).
Prints one JSON line per row, then a table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import aeval_exe, clean_env, machine, run_timed  # noqa: E402
from _workload import script, write_marketplace  # noqa: E402

from aeval.testing import ScriptedModelServer, Turn  # noqa: E402

EXAMPLES = HERE.parent / "examples" / "marketplace"


def model_run(name: str, mp: Path, out: Path, env: dict, args) -> dict:
    scripts = [script(i, args.requests, args.delay, "aeval") for i in range(args.skills)]
    with ScriptedModelServer(scripts, default=Turn(text="OK")) as srv:
        timed = run_timed([str(aeval_exe()), "run", str(mp), "--runtime", "builtin",
                           "--model", "openai/scripted", "--api-base", srv.base_url_openai,
                           "--no-grader", "--out", str(out), "-q"],
                          {**env, "OPENAI_API_KEY": "sk-scripted"})
        gen = [r.t for r in srv.requests if r.wire in ("chat", "responses")]
    row = {"run": name, "exit": timed.returncode, "wall_s": round(timed.wall_s, 2),
           "first_request_s": round(min(gen) - timed.start, 2) if gen else None,
           "requests": len(gen), "peak_rss_mib": round(timed.peak_rss_mib)}
    if timed.returncode != 0:
        row["stderr_tail"] = timed.stderr[-1500:]
    return row


def literal_run(name: str, mp: Path, out: Path, env: dict) -> dict:
    timed = run_timed([str(aeval_exe()), "run", str(mp), "--runtime", "literal",
                       "--out", str(out), "-q"], env)
    row = {"run": name, "exit": timed.returncode, "wall_s": round(timed.wall_s, 2),
           "peak_rss_mib": round(timed.peak_rss_mib)}
    if timed.returncode not in (0, 1, 3):  # 1 fail / 3 error are verdicts, not crashes
        row["stderr_tail"] = timed.stderr[-1500:]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skills", type=int, default=2, help="one-case skills of the model run")
    ap.add_argument("--requests", type=int, default=10,
                    help="model requests per case (< 8: the case fails its assertions)")
    ap.add_argument("--delay", type=float, default=0.05, help="seconds per model request")
    ap.add_argument("--examples", action="store_true",
                    help="also time the example marketplace (literal), cold and warm")
    args = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}",
          file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="aeval-cold-") as t:
        tmp = Path(t)
        cli = run_timed([str(aeval_exe()), "--version"], clean_env(tmp / "unused"))
        rows.append({"run": "cli", "exit": cli.returncode, "wall_s": round(cli.wall_s, 2),
                     "peak_rss_mib": round(cli.peak_rss_mib)})
        print(json.dumps(rows[-1]), flush=True)
        mp = tmp / "marketplace"
        write_marketplace(mp, args.skills)
        cache = {"AEVAL_CACHE_DIR": str(tmp / "aeval-cache")}  # empty: nothing cached yet
        env = clean_env(tmp / "prefect-home-model", **cache)  # does not exist yet: fresh
        for temp, run_env in (("cold", env),
                              ("cached", clean_env(tmp / "prefect-home-model-2", **cache)),
                              ("warm", env)):
            rows.append(model_run(f"model {temp}", mp, tmp / f"out-model-{temp}", run_env,
                                  args))
            print(json.dumps(rows[-1]), flush=True)
        if args.examples:
            env = clean_env(tmp / "prefect-home-examples",
                            AEVAL_CACHE_DIR=str(tmp / "aeval-cache-examples"))
            for temp in ("cold", "warm"):
                rows.append(literal_run(f"examples {temp}", EXAMPLES, tmp / f"out-ex-{temp}",
                                        env))
                print(json.dumps(rows[-1]), flush=True)
    print("\n| run | wall s | first model request s | peak RSS MiB | exit |\n|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['run']} | {r['wall_s']} | {r.get('first_request_s', '-')} | "
              f"{r['peak_rss_mib']} | {r['exit']} |")


if __name__ == "__main__":
    main()
