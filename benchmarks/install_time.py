"""Install time and size, pip and uv side by side in one run, with the machine's load stated.

    .venv/bin/python benchmarks/install_time.py                  the README's quickstart install
    .venv/bin/python benchmarks/install_time.py --cold           also with empty caches
    .venv/bin/python benchmarks/install_time.py --form template  the GitLab template's install
    .venv/bin/python benchmarks/install_time.py --installers uv  one installer
    .venv/bin/python benchmarks/install_time.py --extras models  with the model client

Two forms of install, each row into a fresh virtual environment with a cache folder of the
row's own (PIP_CACHE_DIR / UV_CACHE_DIR):

- ``quickstart`` (default): the README's first command, without its run, in a fresh copy of
  this checkout (what a clone holds): ``python3 -m venv .venv && .venv/bin/pip install -q uv &&
  .venv/bin/uv pip install -e .`` for uv, and the
  alternative it gives, ``python3 -m venv .venv && .venv/bin/pip install -e .``, for pip
  (`QUICKSTART`; tests/unit/test_readme.py keeps the README and this table equal);
- ``template``: what the GitLab template's before_script does, ``pip install`` or ``uv pip
  install`` of ``git+file://<this checkout>@HEAD`` into a fresh environment.

The cache of a row is ``cold`` (an empty folder: every package downloaded, as a first install)
or ``warm`` (the same folder again, as every later one). Without ``--cold`` a first, unreported
install warms it. Rows run side by side (pip, then uv, for each cache state), each with the
1-minute load average before and after (``os.getloadavg()``: on a shared machine a row's
seconds mean little without it), the packages installed, and the environment's size on disk.
The uv binary is the one on PATH, else this interpreter's (aeval depends on uv), else one
``pip install uv`` brings into a helper environment. The installers use the machine's own
configuration (pip.conf, uv.toml). Prints one JSON line per row, then a table.
Stdlib only; it imports nothing of aeval.
"""

from __future__ import annotations

import argparse
import contextlib
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
QUICKSTART = {
    "uv": "python3 -m venv .venv && .venv/bin/pip install -q uv && .venv/bin/uv pip install -e "
          "{target}",
    "pip": "python3 -m venv .venv && .venv/bin/pip install -e {target}",
}
"""The README's install commands (``{target}``: ``.``, or ``'.[extras]'``)."""
RUN = ".venv/bin/aeval run examples/marketplace"
"""What the README's first command runs after installing."""


def fresh_env(where: Path) -> Path:
    """A new virtual environment with pip; returns its python."""
    venv.EnvBuilder(with_pip=True).create(where)
    return where / "bin" / "python"


def uv_binary(tmp: Path) -> Path:
    """uv: on PATH, beside this interpreter, or from PyPI in a helper environment; linked
    alone into a folder of its own (put first on PATH, it brings no other program)."""
    found = shutil.which("uv") or Path(sys.executable).parent / "uv"
    if not Path(found).is_file():
        py = fresh_env(tmp / "uv-env")
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "uv"], check=True)
        found = tmp / "uv-env" / "bin" / "uv"
    (tmp / "uv-bin").mkdir()
    (tmp / "uv-bin" / "uv").symlink_to(Path(found).resolve())
    return tmp / "uv-bin" / "uv"


def checkout_copy(dest: Path) -> Path:
    """What a clone of this checkout holds: its tracked and untracked-but-not-ignored files."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def size_mb(folder: Path) -> float:
    """The apparent size of everything under ``folder`` (symlinks not followed), in MB."""
    total = 0
    for base, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):  # gone meanwhile
                total += os.lstat(os.path.join(base, name)).st_size
    return round(total / 1e6, 1)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def install(installer: str, form: str, extras: str, cache: Path, tmp: Path, uv: Path) -> dict:
    """One install into a fresh environment: its seconds, packages, size and the load."""
    n = time.monotonic_ns()
    env = {**os.environ, "PIP_CACHE_DIR": str(cache / "pip"), "UV_CACHE_DIR": str(cache / "uv"),
           "PATH": os.pathsep.join([str(uv.parent), os.environ.get("PATH", "")])}
    env.pop("VIRTUAL_ENV", None)
    if form == "quickstart":
        where = checkout_copy(tmp / f"clone-{installer}-{n}")
        target = f"'.[{extras}]'" if extras else "."
        cmd = ["bash", "-c", QUICKSTART[installer].format(target=target)]
        prefix = where / ".venv"
    else:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        spec = f"aeval-skills{f'[{extras}]' if extras else ''} @ git+file://{ROOT}@{head}"
        where = prefix = tmp / f"target-{installer}-{n}"
        py = fresh_env(prefix)
        cmd = ([str(uv), "pip", "install", "--quiet", "--python", str(py), spec]
               if installer == "uv" else
               [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", spec])
    load_before = load()
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True)
    took = time.monotonic() - t0
    load_after = load()
    if proc.returncode != 0:
        raise SystemExit(f"{installer} install failed:\n{proc.stderr[-2000:]}")
    listed = subprocess.run([str(uv), "pip", "list", "--python", str(prefix / "bin" / "python"),
                             "--format=json"], capture_output=True, text=True, check=True).stdout
    works = subprocess.run([str(prefix / "bin" / "aeval"), "--version"], capture_output=True,
                           text=True).stdout.strip()
    row = {"seconds": round(took, 1), "packages": len(json.loads(listed)),
           "size_mb": size_mb(prefix), "load_before": load_before, "load_after": load_after,
           "aeval": works}
    shutil.rmtree(where, ignore_errors=True)
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--installers", default="pip,uv", help="comma-separated: pip, uv")
    p.add_argument("--form", choices=("quickstart", "template"), default="quickstart",
                   help="the README's install (default) or the GitLab template's")
    p.add_argument("--extras", default="", help="extras to install, e.g. models")
    p.add_argument("--cold", action="store_true",
                   help="also measure with an empty cache (downloads every package)")
    p.add_argument("--cache", type=Path,
                   help="the warm cache folder (default: a fresh one, warmed by a first, "
                        "unreported install)")
    args = p.parse_args(argv)
    installers = args.installers.split(",")
    rows = []
    start_load = os.getloadavg()
    print(f"form {args.form}{f' [{args.extras}]' if args.extras else ''}; "
          f"{os.cpu_count()} CPUs; load average at start {start_load[0]:.2f} "
          f"{start_load[1]:.2f} {start_load[2]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="aeval-install-") as t:
        tmp = Path(t)
        uv = uv_binary(tmp)
        caches = {i: args.cache or tmp / f"cache-{i}" for i in installers}

        def measure(installer: str, state: str) -> None:
            row = install(installer, args.form, args.extras, caches[installer], tmp, uv)
            rows.append({"installer": installer, "cache": state, **row})
            print(json.dumps(rows[-1]), flush=True)

        if args.cold or args.cache is None:
            for installer in installers:  # fills each cache
                if args.cold:
                    measure(installer, "cold")
                else:
                    install(installer, args.form, args.extras, caches[installer], tmp, uv)
        for installer in installers:
            measure(installer, "warm")
    end_load = os.getloadavg()
    print(f"\nload average at end {end_load[0]:.2f} {end_load[1]:.2f} {end_load[2]:.2f}")
    print(f"{'installer':<10} {'cache':<6} {'seconds':>8} {'packages':>9} {'MB':>7} "
          f"{'load':>11}  aeval")
    for r in rows:
        print(f"{r['installer']:<10} {r['cache']:<6} {r['seconds']:>8} {r['packages']:>9} "
              f"{r['size_mb']:>7} {r['load_before']:>5}-{r['load_after']:<5}  {r['aeval']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
