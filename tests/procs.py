"""Host processes, for the tests that prove a command left none behind."""

from __future__ import annotations

import os
import time


def alive(marker: str) -> list[int]:
    """Pids of host processes whose command line holds ``marker``."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    out.append(int(pid))
        except OSError:
            continue
    return out


def gone(marker: str, within_s: float = 10.0) -> list[int]:
    """`alive` once no process holds ``marker`` or ``within_s`` has passed (a loaded machine
    reaps a killed namespace in its own time): what is still alive then."""
    deadline = time.monotonic() + within_s
    while (left := alive(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
