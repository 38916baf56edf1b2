"""Literal sweep: the cost per case of `aeval run --runtime literal` as the run grows, and the
peak memory of its process tree. Replaces pipeline_overhead.py.

The skills are small real-looking ones (SKILL.md, a shell script, a fixture, an eval.config
with ``--cases`` cases of three deterministic assertions); their steps take milliseconds, so
what is measured is aeval: examine, assertions, workspace copy + manifest, the sandboxed
steps, checks, grading, aggregation, artifacts, and the Prefect task runs around them.

    .venv/bin/python benchmarks/literal_sweep.py --sizes 50,1000          # the goal: 1,000
    .venv/bin/python benchmarks/literal_sweep.py --sizes 50,200          # quicker

Each size N runs ``N / --cases`` skills of ``--cases`` cases in a fresh run store, on one
PREFECT_HOME migrated up front. A 1-case run gives the fixed start-up cost; per case is
``(wall - one_case_wall) / (N - 1)``. Flatness = per case at the largest size / per case at
the smallest (the goal: within 1.2). CPU = user + system seconds of the whole process tree /
wall (2.0 = both cores busy). Prints one JSON line per size, then a summary line.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import aeval_exe, clean_env, machine, run_timed  # noqa: E402
from task_timeline import table as task_table  # noqa: E402

SKILL_MD = """---
name: {name}
description: Write a short report of the files in a folder (name, lines). Use when asked to
  list, inventory or describe a folder's text files.
---

# Folder report

```bash
sh $SKILL_DIR/scripts/report.sh fixtures > outputs/report.txt
```

Prints one line per file, `NAME LINES`, sorted by name, then `files: N`.
"""

REPORT_SH = """#!/bin/sh
# One line per file of folder $1: name and line count, then the number of files.
set -e
n=0
for f in "$1"/*; do
  printf '%s %s\\n' "$(basename "$f")" "$(wc -l < "$f" | tr -d ' ')"
  n=$((n + 1))
done
echo "files: $n"
"""


def write_marketplace(root: Path, skills: int, cases: int, files: int) -> None:
    """``skills`` skills of ``cases`` literal cases each; ``files`` extra reference files per
    skill make the workspace copy and the manifest non-trivial."""
    for s in range(skills):
        name = f"folder-report-{s:04d}"
        d = root / name
        (d / "scripts").mkdir(parents=True)
        (d / "references").mkdir()
        (d / "fixtures").mkdir()
        (d / "SKILL.md").write_text(SKILL_MD.format(name=name))
        (d / "scripts" / "report.sh").write_text(REPORT_SH)
        for f in range(files):
            (d / "references" / f"notes-{f:02d}.md").write_text(f"# Note {f}\n" + "text\n" * 150)
        for f in range(3):
            (d / "fixtures" / f"part-{f}.txt").write_text("row\n" * (f + 2))
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": f"report-{c}",
            "prompt": f"Report on the files in fixtures/ with the {name} skill (variant {c}).",
            "expected_outcome": "outputs/report.txt lists 3 files.",
            "files": ["fixtures/"],
            "steps": ["mkdir -p outputs",
                      "sh $SKILL_DIR/scripts/report.sh fixtures > outputs/report.txt"],
            "assertions": [
                {"type": "file_exists", "path": "outputs/report.txt"},
                {"type": "file_contains", "path": "outputs/report.txt", "pattern": "files: 3"},
                {"type": "command", "run": "grep -q '^part-2.txt 4$' outputs/report.txt"},
            ],
            "timeout_s": 60,
        } for c in range(cases)]}, indent=2))


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_run(mp: Path, out: Path, env: dict, concurrency: int | None) -> dict:
    cmd = [str(aeval_exe()), "run", str(mp), "--runtime", "literal", "--out", str(out), "-q"]
    if concurrency:
        cmd += ["--concurrency", str(concurrency)]
    cpu0 = cpu_children()
    timed = run_timed(cmd, env)
    if timed.returncode != 0:
        raise SystemExit(f"aeval run {mp} failed ({timed.returncode}): {timed.stderr[-2000:]}")
    cpu = cpu_children() - cpu0
    return {"wall_s": round(timed.wall_s, 2), "peak_rss_mib": round(timed.peak_rss_mib),
            "peak_by_process": timed.peak_by_process,
            "cpu_s": round(cpu, 1), "cpu_per_wall": round(cpu / timed.wall_s, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,1000",
                    help="comma-separated case counts, each a multiple of --cases")
    ap.add_argument("--cases", type=int, default=10, help="cases per skill (default 10)")
    ap.add_argument("--files", type=int, default=20, help="reference files per skill")
    ap.add_argument("--concurrency", type=int, default=None,
                    help="aeval --concurrency (default: aeval's own default)")
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        msg = f"error: --sizes {args.sizes!r}: not a comma-separated list of integers"
        raise SystemExit(msg) from None
    bad = [n for n in sizes if n <= 1 or n % args.cases]
    if bad:
        raise SystemExit(f"error: --sizes {bad}: each must be > 1 and a multiple of --cases "
                         f"({args.cases})")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}",
          file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="aeval-sweep-") as t:
        tmp = Path(t)
        env = clean_env(tmp / "prefect-home")
        one = tmp / "one"
        write_marketplace(one, 1, 1, args.files)
        one_run(one, tmp / "warm", env, args.concurrency)  # migrates the database
        base = one_run(one, tmp / "base", env, args.concurrency)
        print(json.dumps({"cases": 1, **base}), flush=True)
        for n in sizes:
            mp = tmp / f"mp-{n}"
            write_marketplace(mp, n // args.cases, args.cases, args.files)
            r = one_run(mp, tmp / f"out-{n}", env, args.concurrency)
            r = {"cases": n, **r, "wall_per_case_s": round(r["wall_s"] / n, 3),
                 "per_case_s": round((r["wall_s"] - base["wall_s"]) / (n - 1), 3)}
            rows.append(r)
            print(json.dumps(r), flush=True)
            print(task_table(tmp / "prefect-home"), file=sys.stderr, flush=True)
    summary = {"one_case_wall_s": base["wall_s"], "concurrency": args.concurrency,
               "per_case_s": {r["cases"]: r["per_case_s"] for r in rows},
               "peak_rss_mib": max(r["peak_rss_mib"] for r in rows)}
    if len(rows) > 1:
        summary["flatness"] = round(rows[-1]["per_case_s"] / max(rows[0]["per_case_s"], 1e-9),
                                    2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
