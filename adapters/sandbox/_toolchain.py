"""The Python toolchain a sandboxed command runs: made by aeval, read-only to every attempt.

Inside the bubblewrap sandbox, first on ``PATH`` is a small virtual environment: ``python``
(the base interpreter), ``pip`` shims, and the base interpreter's site-packages as the sandbox
shows it: pip alone (`aeval.adapters.sandbox._view.python_view`). Neither aeval's
site-packages nor what else the host's Python holds is importable: a skill that needs pandas
is ``untested: needs pandas`` (or installs it in its setup) whatever aeval was installed with.

Why it lives outside the attempt (the boundary rule "aeval never acts through paths an
attempt controls"): it used to be made under the attempt root and rebuilt on demand, so a
step that replaced ``$VIRTUAL_ENV/bin/pip`` with a symlink to a host file, or
``$VIRTUAL_ENV`` itself with a symlink to a host folder, had aeval (unsandboxed, often root)
overwrite that file or fill that folder; and ``bash`` planted in its writable ``bin`` ran
for every later step and check. Now it is made once per aeval process, in a private temporary
folder no sandbox can write (bound read-only at its own path), and never touched again.

``uv`` is there too (the ``uv`` wheel's binary, a product dependency, copied in): a skill
that documents ``uv run scripts/x.py`` runs as documented, with the base interpreter
(``UV_PYTHON``; uv never downloads one) and, for the packages a script's PEP 723 header
declares, the wheelhouse the provisioning phase fetched (`aeval.adapters.sandbox.provision`).

Installs still land in the attempt: the environment's site-packages is read-only, so a plain
``pip install`` defaults to a user install (``PYTHONUSERBASE=$HOME/.local``, the attempt's
private HOME) and ``--target`` / ``--prefix`` work as usual. ``PIP_USER=1`` is deliberately
not set: pip refuses it together with ``--target`` or ``--prefix``. That user site is the
attempt's, so the startup hooks Python runs from it (``usercustomize``, ``sitecustomize``,
``.pth`` files) are part of Δ (`aeval.isolation.startup_hooks`): one the run writes is a change of
the skill's execution.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

_PIP_SHIM = "#!{python}\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"


_MADE = threading.Lock()


def toolchain() -> Path:
    """The toolchain folder of this process (made on first use, removed at exit); its ``bin``
    goes first on PATH inside every sandbox. Made once even when cases start at once on
    several threads (an unlocked cache made two, and a case could bind one folder while its
    PATH named the other: the toolchain's python was then missing inside)."""
    with _MADE:
        return _toolchain()


@functools.lru_cache(maxsize=1)
def _toolchain() -> Path:
    env = Path(tempfile.mkdtemp(prefix="aeval-toolchain-"))
    atexit.register(shutil.rmtree, env, True)
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    site_dir = env / "lib" / f"python{ver}" / "site-packages"
    site_dir.mkdir(parents=True)
    bin_dir = env / "bin"
    bin_dir.mkdir()
    for name in ("python", "python3", f"python{ver}"):
        (bin_dir / name).symlink_to(base)
    for name in ("pip", "pip3", f"pip{ver}"):
        shim = bin_dir / name
        shim.write_text(_PIP_SHIM.format(python=bin_dir / "python"))
        shim.chmod(0o755)
    uv = uv_binary()
    if uv is not None:
        shutil.copy2(uv, bin_dir / "uv")
    (env / "pyvenv.cfg").write_text(
        f"home = {base.parent}\ninclude-system-site-packages = true\nversion = "
        f"{'.'.join(map(str, sys.version_info[:3]))}\n")
    return env


def base_python() -> Path:
    """The base interpreter (resolved): what the toolchain's ``python`` is."""
    return Path(getattr(sys, "_base_executable", sys.executable)).resolve()


@functools.lru_cache(maxsize=1)
def uv_binary() -> Path | None:
    """The ``uv`` binary of the installed ``uv`` package (else one on PATH), or None."""
    try:
        from uv import find_uv_bin
        return Path(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv", path=os.environ.get("PATH", os.defpath))
        return Path(found) if found else None


@functools.lru_cache(maxsize=1)
def uv_version() -> str:
    """``uv --version`` (part of a wheelhouse's cache key), or "none"."""
    uv = uv_binary()
    if uv is None:
        return "none"
    try:
        r = subprocess.run([str(uv), "--version"], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return r.stdout.strip() or "unknown"
