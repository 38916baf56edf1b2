"""The embedded Prefect server is a process of aeval's own: it must not hold the model keys
(a tool running as the same user could read /proc/<pid>/environ)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from aeval.flows.runners import scrubbed_environ

pytestmark = pytest.mark.integration

CANARY = "sk-embedded-canary-7781"


def test_the_embedded_server_starts_without_the_keys(tmp_path):
    code = (
        "import os, sys\n"
        "from aeval.flows.runners import start_embedded_server\n"
        "from prefect.server.api.server import SubprocessASGIServer\n"
        "start_embedded_server()\n"
        "srv = SubprocessASGIServer()\n"
        "env = open(f'/proc/{srv.server_process.pid}/environ', 'rb').read()\n"
        "mine = os.environ.get('OPENAI_API_KEY')\n"
        "srv.stop()\n"
        f"sys.exit(3 if b'{CANARY}' in env else 4 if mine != '{CANARY}' else 0)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(OPENAI_API_KEY=CANARY, AEVAL_GITLAB_TOKEN=CANARY + "-gl",
               HF_TOKEN=CANARY + "-hf", PREFECT_HOME=str(tmp_path / "ph"),
               PREFECT_SERVER_ANALYTICS_ENABLED="false")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=180)
    assert r.returncode != 3, "the embedded server inherited the model key"
    assert r.returncode != 4, "aeval's own environment lost the key"
    assert r.returncode == 0, r.stderr[-2000:]


def test_scrubbing_keeps_what_a_server_needs():
    env = scrubbed_environ({"PATH": "/usr/bin", "HOME": "/root", "PREFECT_HOME": "/p",
                            "OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "y",
                            "AEVAL_GITLAB_TOKEN": "z", "MY_SERVICE_PASSWORD": "w",
                            "AWS_SECRET_ACCESS_KEY": "v", "LANG": "C.UTF-8"})
    assert env == {"PATH": "/usr/bin", "HOME": "/root", "PREFECT_HOME": "/p",
                   "LANG": "C.UTF-8"}
