"""Issue 29's figures in one sitting: `aeval run` of N literal cases and `aeval sweep` (its
default 3 epochs) over N cases, with the thread pool and with a Dask LocalCluster of worker
processes (`--dask local`: 2 on a 2-core machine), against the embedded SQLite server (one per
invocation, as under CI) and against a Prefect server on PostgreSQL; one table.

    .venv/bin/python benchmarks/scale.py                              # the whole matrix
    .venv/bin/python benchmarks/scale.py --sizes 50,200               # small, every config
    .venv/bin/python benchmarks/scale.py --sizes 1000 --configs run-threads-embedded

Configurations are ``COMMAND-RUNNER-SERVER``: COMMAND ``run`` or ``sweep``, RUNNER ``threads``
or ``dask``, SERVER ``embedded`` (CI=true: aeval starts its own SQLite server per invocation),
``sqlite`` (aeval's server app on SQLite, started once by this script) or ``postgres`` (the same
app on a private PostgreSQL, `tests/postgres.py`: Debian's binaries). The default matrix is
``{run,sweep} x {threads,dask} x {embedded,postgres}``; ``--configs`` takes names or
fnmatch patterns (``'*-postgres'``). A script-started server sits behind the counting proxy of
`tests/api_proxy.py`, so its rows count Prefect API requests; the embedded server cannot be
reached from outside aeval's process (its auth string), so its rows say ``-`` (see
`api_requests.py` for the same app on SQLite).

The marketplace is issue 29's (`tests.api_proxy.write_marketplace`: N / ``--cases`` skills of
``--cases`` one-step literal cases, ``sh $SKILL_DIR/scripts/mark.sh > out.txt`` and one
``file_contains``; each skill also gets its SKILL.md doc test), or with ``--workload sweep``
literal_sweep.py's (three assertions, 20 reference files per skill). ``run`` makes N case runs
plus a doc test per skill; ``sweep`` 3 epochs of each.

Per configuration and size: the exit code; case runs recorded in run.json and how many were
graded (pass / fail / untested), ``error`` and ``internal`` (exit 4 is an internal error
too); the wall; time per case run, net of the configuration's 1-case run (its fixed cost:
``(wall - wall_1) / (runs - runs_1)``); flatness (per case at the largest size / at the
smallest, per configuration); peak RSS of aeval's process tree, sampled every 0.25 s
(the aeval process, its embedded server when it has one, the Dask scheduler and workers,
their sandboxes; not a script-started server nor PostgreSQL, shown apart as ``server MiB``);
Prefect API requests per case run (net of the 1-case run, as api_requests.py) and the 503s the
server itself answered. Prints the machine and the load at the start and at the end, one JSON
line per run, then the table (markdown).
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _common import aeval_exe, machine, run_timed, tree_rss  # noqa: E402

COMMANDS = ("run", "sweep")
RUNNERS = ("threads", "dask")
SERVERS = ("embedded", "sqlite", "postgres")
DEFAULT_CONFIGS = [f"{c}-{r}-{s}" for c in COMMANDS for r in RUNNERS
                   for s in ("embedded", "postgres")]
GRADED = ("pass", "fail", "untested")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def write(workload: str, root: Path, skills: int, cases: int) -> None:
    if workload == "issue":
        from tests.api_proxy import write_marketplace
        write_marketplace(root, skills, cases)
    else:
        from literal_sweep import write_marketplace
        write_marketplace(root, skills, cases, 20)


class Server:
    """A Prefect server this script started (behind the counting proxy), or none (embedded)."""

    def __init__(self, kind: str, env: dict[str, str], proxy=None, pid: int | None = None,
                 query=None):
        self.kind, self.env, self.proxy, self.pid, self.query = kind, env, proxy, pid, query
        self.peak_mib = 0.0
        self._stop = threading.Event()
        if pid:
            threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            total, _ = tree_rss(self.pid)
            self.peak_mib = max(self.peak_mib, total / 2**20)
            time.sleep(0.5)

    def counts(self) -> tuple[int, int]:
        """(requests that reached the server, 503s it answered) since the last call."""
        if self.proxy is None:
            return 0, 0
        total, busy = sum(self.proxy.counts.values()), sum(self.proxy.busy.values())
        self.proxy.reset_counts()
        return total, busy

    def close(self) -> None:
        self._stop.set()


def server_pid(port: int) -> int | None:
    """The process listening on 127.0.0.1:``port`` (the uvicorn of `prefect_server`)."""
    inode = None
    for table in ("/proc/net/tcp",):
        with open(table) as f:
            for line in f.readlines()[1:]:
                parts = line.split()
                if parts[1].endswith(f":{port:04X}") and parts[3] == "0A":
                    inode = parts[9]
    if inode is None:
        return None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
    return None


@contextlib.contextmanager
def started_server(kind: str, tmp: Path) -> Iterator[Server]:
    """``embedded``: nothing to start (aeval's own, CI=true); ``sqlite`` / ``postgres``: aeval's
    server app on that database, behind the counting proxy, for the whole sitting."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    base.update(PREFECT_SERVER_ANALYTICS_ENABLED="false")
    if kind == "embedded":
        yield Server(kind, {**base, "PREFECT_HOME": str(tmp / "home-embedded"),
                            "CI": "true", "AEVAL_SERVER": "embedded"})
        return
    from tests.api_proxy import ApiProxy, prefect_server

    with contextlib.ExitStack() as stack:
        query = None
        saved = os.environ.get("PREFECT_SERVER_DATABASE_CONNECTION_URL")
        if kind == "postgres":
            import pytest

            from tests.postgres import running_postgres
            try:
                pg = stack.enter_context(running_postgres())
            except pytest.skip.Exception as exc:
                raise SystemExit(f"error: --configs *-postgres: {exc}") from None
            pg.create_database("prefect_scale")
            os.environ["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = pg.url("prefect_scale")

            def query(sql: str, pg=pg) -> list[tuple]:
                return pg.query("prefect_scale", sql)
        try:
            port, env = stack.enter_context(prefect_server(tmp / f"home-{kind}"))
        finally:
            if kind == "postgres":
                if saved is None:
                    os.environ.pop("PREFECT_SERVER_DATABASE_CONNECTION_URL", None)
                else:
                    os.environ["PREFECT_SERVER_DATABASE_CONNECTION_URL"] = saved
        env.pop("PREFECT_SERVER_DATABASE_CONNECTION_URL", None)  # clients never get it
        proxy = ApiProxy("127.0.0.1", port)
        stack.enter_context(proxy.running())
        server = Server(kind, {**env, "PREFECT_API_URL": proxy.api_url, "AEVAL_SERVER":
                               "embedded"}, proxy, server_pid(port), query)
        try:
            yield server
        finally:
            server.close()


def outcome(out: Path) -> dict:
    """From the run store's run.json: case runs and their statuses."""
    manifests = sorted((out / "runs").glob("*/run.json"))
    if not manifests:
        return {"runs": 0, "graded": 0, "error": 0, "internal": 0}
    m = json.loads(manifests[-1].read_text())
    statuses = [c["status"] for s in m.get("skills", []) for c in s.get("cases", [])]
    return {"runs": len(statuses), "graded": sum(s in GRADED for s in statuses),
            "error": statuses.count("error"), "internal": statuses.count("internal")}


def one(config: str, server: Server, mp: Path, out: Path, concurrency: int,
        epochs: int) -> dict:
    command, runner, _ = config.split("-")
    cmd = [str(aeval_exe()), command, str(mp), "--runtime", "literal", "--concurrency",
           str(concurrency), "--out", str(out), "-q"]
    if command == "sweep":
        cmd += ["--epochs", str(epochs), "--no-skip"]
    if runner == "dask":
        cmd += ["--dask", "local"]
    server.counts()
    timed = run_timed(cmd, server.env, timeout=6 * 3600)
    requests, busy = server.counts()
    return {"config": config, "exit": timed.returncode, **outcome(out),
            "wall_s": round(timed.wall_s, 2), "peak_rss_mib": round(timed.peak_rss_mib),
            "peak_by_process": timed.peak_by_process, "requests": requests,
            "server_503": busy, "stderr": timed.stderr[-300:] if timed.returncode > 1 else ""}


def selected(patterns: str) -> list[str]:
    wanted = [p.strip() for p in patterns.split(",") if p.strip()]
    every = [f"{c}-{r}-{s}" for c in COMMANDS for r in RUNNERS for s in SERVERS]
    out = [c for c in every if any(fnmatch.fnmatchcase(c, p) for p in wanted)]
    bad = [p for p in wanted if not any(fnmatch.fnmatchcase(c, p) for c in every)]
    if bad or not out:
        raise SystemExit(f"error: --configs {bad or patterns!r}: no such configuration "
                         f"(COMMAND-RUNNER-SERVER of {COMMANDS} x {RUNNERS} x {SERVERS})")
    return out


def table(rows: list[dict], bases: dict[str, dict]) -> str:
    head = ("| configuration | cases | exit | case runs | graded | error | internal | wall s "
            "| s per case run | flatness | peak RSS MiB (aeval tree) | server MiB "
            "| API requests per case run | server 503s |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    smallest: dict[str, float] = {}
    for r in rows:
        b = bases.get(r["config"])
        runs = max(r["runs"], 1)
        if b and r["runs"] > b["runs"]:
            per = (r["wall_s"] - b["wall_s"]) / (r["runs"] - b["runs"])
            req = (r["requests"] - b["requests"]) / (r["runs"] - b["runs"])
        else:
            per, req = r["wall_s"] / runs, r["requests"] / runs
        smallest.setdefault(r["config"], per)
        flat = per / smallest[r["config"]] if smallest[r["config"]] else 0
        counted = r["config"].endswith("-embedded")
        lines.append(
            f"| {r['config']} | {r['cases']:,} | {r['exit']} | {r['runs']:,} | {r['graded']:,} "
            f"| {r['error']} | {r['internal']}{' (exit 4)' if r['exit'] == 4 else ''} "
            f"| {r['wall_s']:.1f} | {per:.3f} | {flat:.2f} | {r['peak_rss_mib']} "
            f"| {r.get('server_mib', '-')} | {'-' if counted else f'{req:.2f}'} "
            f"| {'-' if counted else r['server_503']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000",
                    help="comma-separated case counts (x epochs for sweep), each a multiple "
                         "of --cases (default 1000,10000)")
    ap.add_argument("--sweep-sizes", default=None,
                    help="case counts for the sweep configurations (default: 1000 when "
                         "--sizes is the default, else --sizes)")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                    help="comma-separated COMMAND-RUNNER-SERVER names or patterns")
    ap.add_argument("--cases", type=int, default=10, help="cases per skill (default 10)")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3, help="sweep epochs (default 3)")
    ap.add_argument("--workload", choices=("issue", "sweep"), default="issue")
    ap.add_argument("--no-base", action="store_true",
                    help="skip the 1-case run per configuration (per case = wall / runs)")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = ap.parse_args()

    def sizes_of(text: str, flag: str) -> list[int]:
        try:
            sizes = [int(s) for s in text.split(",")]
        except ValueError:
            raise SystemExit(f"error: {flag} {text!r}: not a comma-separated list of "
                             "integers") from None
        bad = [n for n in sizes if n < 1 or n % args.cases]
        if bad:
            raise SystemExit(f"error: {flag} {bad}: each must be a positive multiple of "
                             f"--cases ({args.cases})")
        return sizes

    sizes = sizes_of(args.sizes, "--sizes")
    default_sizes = args.sizes == ap.get_default("sizes")
    sweep_sizes = sizes_of(args.sweep_sizes or ("1000" if default_sizes else args.sizes),
                           "--sweep-sizes")
    configs = selected(args.configs)
    print(f"# start {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {machine()}; "
          f"{load()}", flush=True)
    rows: list[dict] = []
    bases: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="aeval-scale-") as t:
        tmp = Path(t)
        made: set[int] = set()

        def marketplace(n: int) -> Path:
            mp = tmp / f"mp-{n}"
            if n not in made:
                write(args.workload, mp, max(1, n // args.cases), min(n, args.cases))
                made.add(n)
            return mp

        for kind in [s for s in SERVERS if any(c.endswith(f"-{s}") for c in configs)]:
            with started_server(kind, tmp) as server:
                for config in [c for c in configs if c.endswith(f"-{kind}")]:
                    stores = (tmp / f"out-{config}-{i}" for i in itertools.count(1))

                    def store(stores=stores) -> Path:
                        return next(stores)

                    if not args.no_base:
                        if not made & {1}:
                            write(args.workload, tmp / "mp-1", 1, 1)
                            made.add(1)
                        one(config, server, tmp / "mp-1", store(), args.concurrency, 1)  # warm
                        bases[config] = one(config, server, tmp / "mp-1", store(),
                                            args.concurrency, args.epochs)
                    for n in sweep_sizes if config.startswith("sweep-") else sizes:
                        server.peak_mib = 0.0
                        r = {"cases": n, **one(config, server, marketplace(n), store(),
                                               args.concurrency, args.epochs)}
                        if server.pid:
                            r["server_mib"] = round(server.peak_mib)
                        if server.query is not None:
                            r["postgres_flow_runs"] = server.query(
                                "SELECT count(*) FROM flow_run")[0][0]
                        rows.append(r)
                        print(json.dumps({**r, "load": load()}), flush=True)
    print(f"# end {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {load()}",
          flush=True)
    print(table(rows, bases))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "bases": bases}, indent=2))


if __name__ == "__main__":
    main()
