"""ExecutionRequest carries the attempt's sandbox (never serialized); the literal runtime runs its
steps inside it and redacts every encoding of a secret from the events."""

from __future__ import annotations

import base64
import json
import shutil

import pytest
from pydantic import ValidationError

from aeval.adapters import get_runtime
from aeval.adapters.sandbox.bwrap import bwrap_problem, make_sandbox
from aeval.events import ToolResultEvent, read_events
from aeval.isolation.redact import Redactor
from aeval.isolation.sandbox import SandboxPolicy
from aeval.isolation.shell import base_env
from aeval.isolation.workspace import prepare_workspace
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, Limits
from tests.conftest import EXAMPLES

CANARY = "sk-ant-canary-27182818284590452353"


def _request(ws, steps, sandbox=None, env_extra=None):
    return ExecutionRequest(prompt="Train with the skill.", case_id="train", workspace=ws.path,
                            home=ws.home, skill_name="segmentation", skill_description="d",
                            skill_dir=ws.skill_dir, steps=steps, sandbox=sandbox,
                            env=base_env(ws.home, {"SKILL_DIR": str(ws.skill_dir),
                                             **(env_extra or {})}),
                            limits=Limits(timeout_s=60), raw_log=ws.root / "raw.jsonl")


@pytest.fixture
def ws(tmp_path):
    original = tmp_path / "marketplace" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", original)
    return prepare_workspace(tmp_path / "attempt", original, "segmentation", ".agents/skills",
                             ["fixtures/"])


def test_the_sandbox_is_not_serialized_and_must_be_a_sandbox(ws):
    sb = make_sandbox("none", SandboxPolicy(root=ws.root))
    req = _request(ws, ["true"], sandbox=sb)
    assert req.sandbox is sb
    assert "sandbox" not in req.model_dump()
    assert "sandbox" not in json.loads(req.model_dump_json())
    assert _request(ws, ["true"]).sandbox is None
    with pytest.raises(ValidationError):
        _request(ws, ["true"], sandbox="bwrap")


def test_literal_redacts_encoded_secrets_from_events(ws, tmp_path):
    rec = EventRecorder(tmp_path / "events.jsonl", Redactor({"LEAK_ME": CANARY}))
    steps = ['echo "$LEAK_ME" | base64 -w 20', 'printf %s "$LEAK_ME" | rev',
             'printf %s "$LEAK_ME" | xxd -p']
    get_runtime("literal").run(_request(ws, steps, env_extra={"LEAK_ME": CANARY}), rec)
    rec.close()
    raw = (tmp_path / "events.jsonl").read_text()
    assert base64.b64encode(CANARY.encode()).decode()[:16] not in raw
    assert CANARY[::-1] not in raw and CANARY.encode().hex() not in raw
    assert raw.count("[REDACTED:LEAK_ME]") >= 3


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap: {bwrap_problem()}")
def test_literal_steps_run_inside_the_sandbox(ws, tmp_path):
    sb = make_sandbox("require", SandboxPolicy(root=ws.root))
    steps = ["python3 $SKILL_DIR/scripts/run.py train --data fixtures --out outputs",
             f"(ls -A {ws.original_skill} 2>/dev/null || true) | wc -l",
             "ls /proc | grep -c '^[0-9]'"]
    rec = EventRecorder(tmp_path / "events.jsonl", Redactor())
    result = get_runtime("literal").run(_request(ws, steps, sandbox=sb), rec)
    rec.close()
    outs = [e for e in read_events(tmp_path / "events.jsonl") if isinstance(e, ToolResultEvent)]
    assert result.status == "completed", [o.output for o in outs]
    assert (ws.path / "outputs" / "model.json").is_file()
    assert outs[1].output.strip() == "0"  # the original skill folder is not there inside
    assert int(outs[2].output.strip()) < 10
