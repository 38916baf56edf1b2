"""Whether a ``--dask`` argument is a way to run the cases, decided from the argument alone:
the command line asks before anything starts (no server, no import of Prefect or Dask), so
a mistyped address is one line and exit 2 at once. Standard library only; `runners` makes
the task runner from an address this module accepts."""

from __future__ import annotations

LOCAL = "local"
INSECURE_OPTION = "--dask-allow-insecure-tcp"
ENCRYPTED_SCHEMES = ("tls://", "wss://")
"""Dask's transports that encrypt and authenticate (mutual TLS); every other (tcp://, ws://,
ucx://) lets anyone who reaches the scheduler in."""


def dask_address_problem(dask: str | None, allow_insecure_tcp: bool = False) -> str | None:
    """Why ``dask`` (None, ``local`` or a scheduler address) with ``allow_insecure_tcp`` is
    not a way to run the cases, in one line naming the option; None when it is."""
    if not dask:
        return f"{INSECURE_OPTION} needs --dask tcp://HOST:PORT" if allow_insecure_tcp else None
    if dask != LOCAL and "://" not in dask:
        return (f"--dask {dask!r}: expected 'local' or a scheduler address such as "
                f"tls://127.0.0.1:8786 (tcp:// only with {INSECURE_OPTION})")
    if dask == LOCAL or dask.startswith(ENCRYPTED_SCHEMES):
        if allow_insecure_tcp:
            return (f"{INSECURE_OPTION} only means something with a plain tcp:// scheduler, "
                    f"not --dask {dask} (encrypted and authenticated)")
        return None
    if not allow_insecure_tcp:
        return (f"--dask {dask}: a plain-TCP Dask scheduler runs whatever anyone who reaches "
                "it sends, as its workers' user; use tls:// with Dask's TLS config "
                f"(deployments/README.md), or pass {INSECURE_OPTION} to accept that risk")
    return None


def insecure_dask_warning(dask: str) -> str:
    """The one warning of a run on a plain-TCP scheduler (``allow_insecure_tcp``)."""
    return (f"warning: --dask {dask} is plain TCP: anyone who can reach the scheduler runs code "
            "on its workers as their user, and sees the cases and the Prefect API's "
            "credentials they carry (use tls://, deployments/README.md)")
