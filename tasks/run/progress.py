"""Progress lines: to the console of `aeval run` (the `aeval.progress` logger, which the
command line sets up) and to the Prefect run's log (the UI)."""

from __future__ import annotations

import logging
import os

CONSOLE = logging.getLogger("aeval.progress")


def progress(msg: str, *args: object, warning: bool = False) -> None:
    level = logging.WARNING if warning else logging.INFO
    CONSOLE.log(level, msg, *args)
    try:
        from prefect import get_run_logger

        get_run_logger().log(level, msg, *args)
    except Exception:  # outside a Prefect run (a plain function call): the console is enough
        pass


_REDACTED: dict[str, str] = {}


def redact_logs(secrets: dict[str, str], add: bool = False) -> int:
    """Redact ``secrets`` (and their encodings) from every record that reaches a handler of any
    logger of this process: the console, Prefect's API log handler (its database), aeval's
    progress lines; and make every such record inert (`aeval.isolation.text.InertFilter`: control
    characters and ESC sequences escaped, for the console and the Prefect UI). Replaces what
    an earlier call installed, or with ``add`` adds to it (a case
    chain in a Dask worker process adds its own case's). Returns the handlers covered."""
    from aeval.isolation.redact import RedactingFilter, Redactor
    from aeval.isolation.text import InertFilter

    if not add:
        _REDACTED.clear()
    _REDACTED.update(secrets)
    redactor = Redactor(dict(_REDACTED))
    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in
                                      list(logging.root.manager.loggerDict))]
    handlers = {id(h): h for lg in loggers for h in getattr(lg, "handlers", [])}
    for h in handlers.values():
        for f in [f for f in h.filters if isinstance(f, RedactingFilter | InertFilter)]:
            h.removeFilter(f)
        if redactor:
            h.addFilter(RedactingFilter(redactor))
        h.addFilter(InertFilter())  # after the redaction: a secret is matched as it was given
    return len(handlers)


_INERT_PID: int | None = None


def ensure_inert_logs() -> None:
    """Make every log handler of this process inert (`aeval.isolation.text.InertFilter`), once per
    process: for a Dask worker, where `redact_logs` of the flow's process never ran."""
    global _INERT_PID
    if os.getpid() == _INERT_PID:
        return
    from aeval.isolation.text import InertFilter

    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in
                                      list(logging.root.manager.loggerDict))]
    for h in {id(h): h for lg in loggers for h in getattr(lg, "handlers", [])}.values():
        if not any(isinstance(f, InertFilter) for f in h.filters):
            h.addFilter(InertFilter())
    _INERT_PID = os.getpid()
