"""Under CI, a test skipped for want of something `.ci/run` installs is a failure.

The tests that need bubblewrap, slirp4netns, the pinned agent CLIs, Chromium or PostgreSQL
skip, saying why, on a machine without them (a developer's laptop). `.ci/run` installs all of
them, so there a skip means its install failed or went missing, and a green run would have
tested less than it says. With ``AEVAL_TESTS_STRICT_SKIPS=1`` (`.ci/run` sets it) such a skip
is reported as a failure with its reason. Skips that no install can lift stay skips:
`NOT_INSTALLABLE`.
"""

from __future__ import annotations

import os

import pytest

VARIABLE = "AEVAL_TESTS_STRICT_SKIPS"

NOT_INSTALLABLE = (
    "needs the network",  # a documented `npx`/`bunx` tool: the reader's sandbox is offline
    "fetches them from the registry",  # a `uv run` script's PEP 723 dependencies: offline too
    "is installed here",  # a missing-tool case that needs the tool absent, on a richer machine
    # what the machine is, not what it has installed: a CI runner that is not root, a
    # container without a writable cgroup or inotify
    "needs root", "running as root without", "cgroup here", "is not available here",
)


def strict() -> bool:
    return os.environ.get(VARIABLE, "") not in ("", "0")


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.skipped or hasattr(report, "wasxfail") or not strict():
        return
    reason = skip_reason(report).removeprefix("Skipped: ")
    if any(phrase in reason for phrase in NOT_INSTALLABLE):
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped, but {VARIABLE}=1 (.ci/run installs what the tests need): "
                       f"{reason}")
