"""Session fixtures. Prefect gets a private PREFECT_HOME and one ephemeral server per session;
no test can reach a real model provider (only loopback servers the tests start)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.strict_skips import pytest_runtest_makereport  # noqa: F401  (a hook: .ci/run's skips)

_PREFECT_HOME = tempfile.mkdtemp(prefix="aeval-test-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
# aeval's cache (the migrated Prefect database a fresh PREFECT_HOME starts from) stays private
os.environ["AEVAL_CACHE_DIR"] = os.path.join(_PREFECT_HOME, "aeval-cache")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "WARNING"
os.environ["PREFECT_SERVER_LOGGING_LEVEL"] = "CRITICAL"
# one embedded server per `aeval` process (as under CI), so no test leaves a reused server
# behind; tests/integration/test_reused_server.py sets AEVAL_SERVER=reuse itself
os.environ["AEVAL_SERVER"] = "embedded"
# Guard against accidental spend: any SDK that ignores our base URLs fails to authenticate.
for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AEVAL_MODEL", "AEVAL_GRADER_MODEL",
            "AEVAL_GITLAB_TOKEN", "AEVAL_HOME"):
    os.environ.pop(key, None)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "marketplace"


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect ephemeral server for the whole session (it takes 5-14 s to start)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture
def marketplace(tmp_path: Path) -> Path:
    """A private copy of the example marketplace (tests may modify it)."""
    dst = tmp_path / "marketplace"
    shutil.copytree(EXAMPLES, dst)
    return dst


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)
