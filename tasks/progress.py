"""Progress lines: to the console of `aeval run` (the `aeval.progress` logger, which the
command line sets up) and to the Prefect run's log (the UI)."""

from __future__ import annotations

import logging

CONSOLE = logging.getLogger("aeval.progress")


def progress(msg: str, *args: object, warning: bool = False) -> None:
    level = logging.WARNING if warning else logging.INFO
    CONSOLE.log(level, msg, *args)
    try:
        from prefect import get_run_logger

        get_run_logger().log(level, msg, *args)
    except Exception:  # outside a Prefect run (a plain function call): the console is enough
        pass
