"""The documentation's "Testing your skills offline" section (docs/offline-testing.md), run as
written: the scripted model server on the example script, `aeval run` with the builtin
runtime against it, and the self-correction it is there to show. The commands are read from
the page itself, so the docs cannot drift from what works."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.testing import ScriptFile, load_script_file
from tests.conftest import ROOT
from tests.docs import documented_section

pytestmark = pytest.mark.integration

SCRIPT = ROOT / "examples" / "model-server" / "segmentation.json"


def section() -> str:
    return documented_section("Testing your skills offline")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section(), flags=re.S)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_example_script_and_the_documented_format_are_valid_scripts():
    scripts = load_script_file(SCRIPT)
    assert [s.name for s in scripts.scripts] == ["builtin-train", "builtin-inference"]
    (shown,) = blocks("json")
    assert ScriptFile.model_validate(json.loads(shown)).scripts[0].name == "train"


def test_the_documented_commands_run_the_segmentation_skill_offline(tmp_path):
    bash = blocks("bash")[0]  # the first: one runtime; the second compares all four
    lines = bash.replace("\\\n", " ").splitlines()
    serve, run, stop = lines
    assert serve.endswith(" &") and stop == "kill %1"
    assert "OPENAI_API_KEY=placeholder" in run and "--model openai/scripted" in run
    port = str(free_port())
    bindir = str(Path(sys.executable).parent)
    serve = serve.removesuffix(" &").replace("8123", port).replace(".venv/bin", bindir)
    run = run.replace("8123", port).replace(".venv/bin", bindir)
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["AEVAL_HOME"] = str(tmp_path / "store")
    server = subprocess.Popen(serve.split(), cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert server.stdout.readline().strip() == f"http://127.0.0.1:{port}"
        proc = subprocess.run(["bash", "-c", run], cwd=ROOT, capture_output=True, text=True,
                              timeout=600, env=env)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the skill defect, caught
    assert "Traceback" not in proc.stdout + proc.stderr
    (run_dir,) = (tmp_path / "store" / "runs").iterdir()
    train = json.loads((run_dir / "segmentation" / "builtin" / "train" / "grading.json")
                       .read_text())
    by = {e["id"]: e for e in train["expectations"]}
    assert by["S1"]["passed"] is False  # the agent edited SKILL.md: found by the diff
    assert by["A1"]["passed"] is True  # ... after which training "worked"
    (change,) = train["self_correction"]["changes_made"]
    assert change["path"] == "SKILL.md" and change["tool"] == "edit_file"
    assert "S1 The skill's files were not modified during execution" in proc.stdout
