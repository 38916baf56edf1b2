"""Where this user's local Prefect server of a PREFECT_HOME keeps its state, and whether an
invocation reuses it: the part of `aeval.local_server` the warm command line
(`aeval.deployments.warm`) needs before anything else is imported (no pydantic, no Prefect)."""

from __future__ import annotations

import os
from pathlib import Path

MODE_VAR = "AEVAL_SERVER"
"""``reuse`` (default, except under CI) or ``embedded`` (one server per invocation)."""
IDLE_VAR = "AEVAL_SERVER_IDLE_S"
DEFAULT_IDLE_S = 600.0

def mode(environ: dict[str, str] | None = None) -> str:
    """``reuse`` or ``embedded``: AEVAL_SERVER when set, else embedded under CI (a job's
    container ends with it: nothing to reuse) and reuse elsewhere."""
    environ = os.environ if environ is None else environ
    value = (environ.get(MODE_VAR) or "").strip().lower()
    if value in ("reuse", "embedded"):
        return value
    return "embedded" if environ.get("CI") else "reuse"


def idle_seconds() -> float:
    try:
        return max(1.0, float(os.environ.get(IDLE_VAR) or DEFAULT_IDLE_S))
    except ValueError:
        return DEFAULT_IDLE_S


def prefect_home() -> Path:
    """This invocation's PREFECT_HOME (Prefect's default ``~/.prefect`` when unset)."""
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def state_dir() -> Path:
    """The reused server's state folder (0700): its record with the auth string, its locks
    and log, and the warm process's socket, token and log."""
    return prefect_home() / "aeval-server"
