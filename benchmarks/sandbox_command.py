"""One sandboxed ``true``, median of ``--repeat``, on whatever commit this venv has installed
(issue 42: the allowlisted view against 2a1420f's hidden-path view). Run it from each
commit's own venv in one sitting and put the two figures side by side:

    .venv/bin/python benchmarks/sandbox_command.py [--repeat 9] [--network]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from aeval.adapters.sandbox.bwrap import make_sandbox
from aeval.isolation.sandbox import SandboxPolicy
from aeval.isolation.shell import base_env, run_command


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--network", action="store_true", help="policy network: true")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="aeval-bench-"))
    try:
        (root / "ws").mkdir()
        (root / "home").mkdir()
        policy = SandboxPolicy(root=root, **({"network": True} if args.network else {}))
        sb = make_sandbox("require", policy)
        env = base_env(root / "home")
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            r = run_command("true", root / "ws", env, 60, sandbox=sb)
            times.append(time.perf_counter() - t)
            if not r.ok:
                raise SystemExit(f"the sandboxed command failed: {r.combined()}")
        print(f"one sandboxed command: {statistics.median(times) * 1000:.1f} ms "
              f"(median of {args.repeat})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
