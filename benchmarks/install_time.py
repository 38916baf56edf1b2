"""Install time: what the GitLab template's before_script costs a job, by installer and cache.

    .venv/bin/python benchmarks/install_time.py                       pip and uv, warm caches
    .venv/bin/python benchmarks/install_time.py --cold                also with empty caches
    .venv/bin/python benchmarks/install_time.py --installers uv       one installer

Each row installs aeval the way the template does, into a fresh virtual environment (the job
image's Python): ``git+file://<this checkout>@HEAD`` (the template's git URL at a
ref, here the checkout's HEAD), with ``pip install`` or ``uv pip install``, and a cache folder
of the row's own (the template's ``cache:`` of PIP_CACHE_DIR / UV_CACHE_DIR):

- ``cold``: an empty cache folder, as the first job of a project (every package downloaded
  from the index: run it where the index is reachable);
- ``warm``: the same folder again, as every later job with the template's cache.

The uv binary itself comes from ``pip install uv`` into a helper environment (the job images
with uv, e.g. ghcr.io/astral-sh/uv:python3.11-bookworm, have it already). Prints one JSON
line per row, then a table. Stdlib only; it imports nothing of aeval.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fresh_env(where: Path) -> Path:
    """A new virtual environment with pip; returns its python."""
    venv.EnvBuilder(with_pip=True).create(where)
    return where / "bin" / "python"


def uv_binary(tmp: Path) -> Path:
    """uv, from PyPI through pip, in a helper environment of its own."""
    found = shutil.which("uv")
    if found:
        return Path(found)
    py = fresh_env(tmp / "uv-env")
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", "uv"], check=True)
    return tmp / "uv-env" / "bin" / "uv"


def install(installer: str, spec: str, cache: Path, tmp: Path, uv: Path | None) -> dict:
    """One install into a fresh environment; the seconds it took and what it installed."""
    target = tmp / f"target-{installer}-{time.monotonic_ns()}"
    py = fresh_env(target)
    env = {**os.environ, "PIP_CACHE_DIR": str(cache / "pip"), "UV_CACHE_DIR": str(cache / "uv")}
    cmd = ([str(uv), "pip", "install", "--quiet", "--python", str(py), spec] if installer == "uv"
           else [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 spec])
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{installer} install failed:\n{proc.stderr[-2000:]}")
    freeze = subprocess.run([str(py), "-m", "pip", "list", "--format=json"],
                            capture_output=True, text=True, check=True).stdout
    works = subprocess.run([str(target / "bin" / "aeval"), "--version"], capture_output=True,
                           text=True).stdout.strip()
    shutil.rmtree(target, ignore_errors=True)
    return {"seconds": round(took, 1), "packages": len(json.loads(freeze)), "aeval": works}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--installers", default="pip,uv", help="comma-separated: pip, uv")
    p.add_argument("--cold", action="store_true",
                   help="also measure with an empty cache (downloads every package)")
    p.add_argument("--cache", type=Path,
                   help="the warm cache folder (default: a fresh one, warmed by a first, "
                        "unreported install)")
    args = p.parse_args(argv)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    spec = f"git+file://{ROOT}@{head}"  # pip reads a named file: URL as a path
    rows = []
    with tempfile.TemporaryDirectory(prefix="aeval-install-") as t:
        tmp = Path(t)
        uv = uv_binary(tmp) if "uv" in args.installers else None
        for installer in args.installers.split(","):
            cache = args.cache or tmp / f"cache-{installer}"
            if args.cold or args.cache is None:
                row = install(installer, spec, cache, tmp, uv)  # fills the cache
                if args.cold:
                    rows.append({"installer": installer, "cache": "cold", **row})
                    print(json.dumps(rows[-1]), flush=True)
            row = install(installer, spec, cache, tmp, uv)
            rows.append({"installer": installer, "cache": "warm", **row})
            print(json.dumps(rows[-1]), flush=True)
    print(f"\n{'installer':<10} {'cache':<6} {'seconds':>8} {'packages':>9}  aeval")
    for r in rows:
        print(f"{r['installer']:<10} {r['cache']:<6} {r['seconds']:>8} {r['packages']:>9}  "
              f"{r['aeval']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
