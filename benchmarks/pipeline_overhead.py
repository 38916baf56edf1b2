"""Pipeline overhead: wall time per case and peak memory of `aeval run`, measured with the
`literal` runtime on synthetic skills whose steps take no time, so what is measured is aeval
(examine, assertions, workspace copy + manifest, execution bookkeeping, checks, grading,
aggregation, Prefect task runs), not the skills.

    python benchmarks/pipeline_overhead.py --skills 10 --cases 5 --concurrency 4

Prints one JSON line: cases, wall seconds (total and per case, Prefect start-up excluded by
subtracting a 0-case run), and peak RSS of the process tree in MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_marketplace(root: Path, skills: int, cases: int, files_per_skill: int) -> None:
    for s in range(skills):
        d = root / f"skill-{s:03d}"
        (d / "scripts").mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\nname: skill-{s:03d}\ndescription: synthetic\n---\n")
        for f in range(files_per_skill):
            (d / "scripts" / f"f{f}.py").write_text("x = 1\n" * 200)
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": f"c{c}", "prompt": "p", "expected_outcome": "o",
            "steps": ["echo ok > out.txt"],
            "assertions": [{"type": "file_exists", "path": "out.txt"},
                           {"type": "file_contains", "path": "out.txt", "pattern": "ok"},
                           {"type": "commands_succeeded"}]} for c in range(cases)]}))


def timed_run(path: Path, out: Path, concurrency: int, env: dict) -> tuple[float, float]:
    exe = Path(sys.executable).parent / "aeval"
    start = time.monotonic()
    proc = subprocess.run([str(exe), "run", str(path), "--out", str(out), "-q",
                           "--concurrency", str(concurrency)], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"aeval run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return wall, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skills", type=int, default=10)
    ap.add_argument("--cases", type=int, default=5)
    ap.add_argument("--files", type=int, default=20, help="files per skill (workspace copy)")
    ap.add_argument("--concurrency", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aeval-bench-") as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "PREFECT_HOME": str(tmp / "prefect"),
               "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        env.pop("PREFECT_API_URL", None)
        one = tmp / "one"
        make_marketplace(one, 1, 1, args.files)
        timed_run(one, tmp / "warm", 1, env)  # migrate the database once
        base, _ = timed_run(one, tmp / "base", 1, env)
        mp = tmp / "mp"
        make_marketplace(mp, args.skills, args.cases, args.files)
        wall, peak = timed_run(mp, tmp / "out", args.concurrency, env)
        n = args.skills * args.cases
        print(json.dumps({
            "cases": n, "concurrency": args.concurrency, "files_per_skill": args.files,
            "wall_s": round(wall, 2), "one_case_run_s": round(base, 2),
            "per_case_s": round((wall - base) / max(n - 1, 1), 3),
            "peak_rss_mib": round(peak, 1), "cpus": os.cpu_count(),
        }))


if __name__ == "__main__":
    main()
