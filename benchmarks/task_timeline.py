"""Per-phase timing of the latest `aeval run`, read back from Prefect's own database
(``$PREFECT_HOME/prefect.db``, the ephemeral server's SQLite): no sampling, no perturbation.

    .venv/bin/python benchmarks/task_timeline.py ~/.prefect     # the latest flow run

For every phase (the task-run name up to the first space: examine, assertions, execute,
grade, suggest, regression, aggregate, publish) it prints the task runs; when the first and
the last became Pending (the last: when the flow had submitted them all) and the last
Completed, in seconds from the flow run's start; and the median and max of two gaps per
task run: Pending -> Running (queued: a free worker, its wait_for upstream task, a
tag-concurrency slot) and Running -> Completed (the task body plus Prefect's in-run
bookkeeping). The latency and sweep benchmarks print it after each aeval run.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
from datetime import datetime
from pathlib import Path


def _t(value: str | None) -> float | None:
    return datetime.fromisoformat(value).timestamp() if value else None


def phases(prefect_home: Path) -> tuple[dict, list[dict]]:
    """(the latest flow run: name, start, end, task runs; one row per phase)."""
    db = prefect_home / "prefect.db"
    if not db.is_file():
        raise SystemExit(f"error: {db}: no Prefect database (was PREFECT_HOME used?)")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        flow = con.execute("select id, name, start_time, end_time from flow_run "
                           "order by start_time desc limit 1").fetchone()
        if flow is None:
            raise SystemExit(f"error: {db}: no flow run recorded")
        rows = con.execute(
            "select t.id, t.name, s.type, min(s.timestamp) from task_run t "
            "join task_run_state s on s.task_run_id = t.id where t.flow_run_id = ? "
            "group by t.id, s.type", (flow[0],)).fetchall()
    finally:
        con.close()
    start = _t(flow[2])
    runs: dict[str, dict] = {}
    for tid, name, typ, ts in rows:
        # "execute-6eb": a task run not yet renamed to "execute SKILL/CASE [RUNTIME]"
        runs.setdefault(tid, {"phase": name.split(" ")[0].split("-")[0]})[typ] = _t(ts)
    by_phase: dict[str, list[dict]] = {}
    for r in runs.values():
        by_phase.setdefault(r["phase"], []).append(r)
    out = []
    for phase, rs in sorted(by_phase.items(),
                            key=lambda kv: min(r.get("PENDING") or 1e18 for r in kv[1])):
        queued = [r["RUNNING"] - r["PENDING"] for r in rs if "RUNNING" in r and "PENDING" in r]
        ran = [r["COMPLETED"] - r["RUNNING"] for r in rs if "COMPLETED" in r and "RUNNING" in r]
        pend = [r["PENDING"] for r in rs if "PENDING" in r]
        done = [r["COMPLETED"] for r in rs if "COMPLETED" in r]
        out.append({
            "phase": phase, "runs": len(rs),
            "first_pending_s": round(min(pend) - start, 2) if pend else None,
            "last_pending_s": round(max(pend) - start, 2) if pend else None,
            "last_completed_s": round(max(done) - start, 2) if done else None,
            "queued_median_s": round(statistics.median(queued), 3) if queued else None,
            "queued_max_s": round(max(queued), 3) if queued else None,
            "ran_median_s": round(statistics.median(ran), 3) if ran else None,
            "ran_max_s": round(max(ran), 3) if ran else None,
        })
    end = _t(flow[3])
    return {"flow_run": flow[1], "flow_s": round(end - start, 2) if end and start else None,
            "task_runs": len(runs)}, out


def table(prefect_home: Path) -> str:
    """The phases of the latest flow run as a Markdown table."""
    head, rows = phases(prefect_home)
    lines = [f"flow run {head['flow_run']}: {head['flow_s']} s, {head['task_runs']} task runs",
             "| phase | runs | Pending first / last s | last Completed s | queued median / max s "
             "| ran median / max s |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['phase']} | {r['runs']} | {r['first_pending_s']} / "
                     f"{r['last_pending_s']} | "
                     f"{r['last_completed_s']} | {r['queued_median_s']} / {r['queued_max_s']} | "
                     f"{r['ran_median_s']} / {r['ran_max_s']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prefect_home", type=Path, help="the PREFECT_HOME of the run")
    print(table(ap.parse_args().prefect_home))


if __name__ == "__main__":
    main()
