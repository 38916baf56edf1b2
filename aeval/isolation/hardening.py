"""Process hardening: keep the secrets of the harness away from the executor's tools."""

from __future__ import annotations

import os
import re
import sys


def harden_process() -> bool:
    """Make this process non-dumpable (Linux), so its /proc/<pid>/environ and memory cannot be
    read by the executor's tool processes running as the same user. It holds the model API key
    (and, with --post, the GitLab token). Root can still read them: run untrusted skills as
    an unprivileged user or in a container. Returns True when applied."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        return False


M_ARENA_MAX = -8  # glibc mallopt parameter
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas (default: 8 per core) before threads start. Each worker
    thread otherwise gets an arena of its own that keeps what it once held: a 300-case literal
    run peaked at 454 MiB with the default and 339 MiB with 2 (benchmarks/literal_sweep.py),
    at the same speed. ``MALLOC_ARENA_MAX`` in the environment wins. True when applied."""
    if not sys.platform.startswith("linux") or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    import ctypes

    try:
        return ctypes.CDLL(None).mallopt(M_ARENA_MAX, arenas) == 1
    except (OSError, AttributeError):
        return False


_SECRETISH = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.I)


def scrubbed_environ(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``environ`` without secrets: model-provider keys, aeval's and CI's tokens, anything
    named like a key, token, secret, password or credential. What the processes aeval starts
    for itself (the embedded Prefect server) inherit."""
    from aeval.skill.contract import RESERVED_CREDENTIALS

    environ = dict(os.environ if environ is None else environ)
    return {k: v for k, v in environ.items() if not _SECRETISH.search(k) and (
        k.startswith("PREFECT_") or not RESERVED_CREDENTIALS.match(k))}
