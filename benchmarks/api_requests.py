"""Prefect API requests per case run: `aeval run --runtime literal` on a marketplace of
``--skills`` x ``--cases`` one-step literal cases (``echo ok > out.txt``, one
``file_contains`` assertion), against aeval's server app behind a counting loopback proxy
(tests/api_proxy.py). Prints the requests by method and path (ids as ``{id}``), and per case:
(requests of the N-case run - requests of a 1-case run) / (N - 1), so the run's fixed
requests (flow run, prepare, publish) are not counted against the cases. Prefect's events
(task run states) travel over one websocket per process: counted as one request. A request
the server answered 503 (SQLite busy) and the client retried counts once per try
(``server_503`` says how many).

    .venv/bin/python benchmarks/api_requests.py --skills 20 --cases 10 --concurrency 8
    .venv/bin/python benchmarks/api_requests.py --skills 20 --cases 10 --runtime-limit 8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _common import aeval_exe, machine  # noqa: E402

from tests.api_proxy import ApiProxy, prefect_server, write_marketplace  # noqa: E402


def one_run(proxy: ApiProxy, env: dict, mp: Path, out: Path, concurrency: int) -> dict:
    proxy.reset_counts()
    cmd = [str(aeval_exe()), "run", str(mp), "--runtime", "literal", "--concurrency",
           str(concurrency), "--out", str(out), "-q"]
    t0 = time.monotonic()
    done = subprocess.run(cmd, env={**env, "PREFECT_API_URL": proxy.api_url,
                                    "AEVAL_SERVER": "embedded"},
                          capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"aeval run failed ({done.returncode}): {done.stderr[-2000:]}")
    return {"wall_s": round(wall, 2), "counts": dict(proxy.counts),
            "server_503": sum(proxy.busy.values())}


def create_limit(port: int, limit: int) -> None:
    """``prefect concurrency-limit create runtime:literal LIMIT``, as its v2 limit."""
    import urllib.request

    body = json.dumps({"name": "tag:runtime:literal", "limit": limit}).encode()
    urllib.request.urlopen(urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v2/concurrency_limits/", data=body, method="POST",
        headers={"content-type": "application/json"}), timeout=30).close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skills", type=int, default=10)
    ap.add_argument("--cases", type=int, default=10, help="cases per skill")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--runtime-limit", type=int, default=None, metavar="N",
                    help="create the Prefect concurrency limit runtime:literal N on the server "
                         "first (a user's tag limit)")
    args = ap.parse_args()
    n = args.skills * args.cases
    with tempfile.TemporaryDirectory(prefix="aeval-api-requests-") as tmp:
        root = Path(tmp)
        write_marketplace(root / "one", 1, 1)
        write_marketplace(root / "mp", args.skills, args.cases)
        with prefect_server(root / "home") as (port, env):
            if args.runtime_limit:
                create_limit(port, args.runtime_limit)
            proxy = ApiProxy("127.0.0.1", port)
            with proxy.running():
                one_run(proxy, env, root / "one", root / "out", args.concurrency)  # warm-up
                base = one_run(proxy, env, root / "one", root / "out", args.concurrency)
                big = one_run(proxy, env, root / "mp", root / "out", args.concurrency)
    keys = sorted(set(base["counts"]) | set(big["counts"]))
    per_key = {k: round((big["counts"].get(k, 0) - base["counts"].get(k, 0)) / (n - 1), 3)
               for k in keys}
    total_big, total_base = sum(big["counts"].values()), sum(base["counts"].values())
    print(json.dumps({"machine": machine(), "cases": n, "concurrency": args.concurrency,
                      "runtime_limit": args.runtime_limit,
                      "wall_s": big["wall_s"], "requests": total_big,
                      "requests_one_case": total_base, "server_503": big["server_503"],
                      "per_case": round((total_big - total_base) / (n - 1), 2)}))
    for k in keys:
        print(f"{big['counts'].get(k, 0):6d} {base['counts'].get(k, 0):4d} "
              f"{per_key[k]:8.3f}  {k}")


if __name__ == "__main__":
    main()
