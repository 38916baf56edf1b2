"""The disk bound holds for the CLI runtimes too (issue 42, item 4): a scripted agent's shell
tool, run by the real Claude Code, Codex and OpenCode CLIs inside aeval's sandbox, writes
shards past the case's `max_disk_mb`; the CLI with its whole process tree is killed and the
case fails with the reason "wrote more than 64 MiB" (never an environment error, never
retried). Skipped per runtime when its CLI is not installed."""

from __future__ import annotations

import json
import time

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.deployments.cli.main import main
from aeval.testing.model_server import Script, ScriptedModelServer, Turn
from tests.integration.test_cli_runtimes_sandboxed import PARAMS
from tests.segmentation_case import TRAIN_CASE, load, segmentation_copy

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness"),
              pytest.mark.skipif(bwrap_problem() is not None,
                                 reason=f"bwrap cannot run: {bwrap_problem()}")]

WRITE = ("mkdir -p data && for i in $(seq 20); do head -c 16777216 /dev/urandom "
         "> data/shard-$i.bin; done; echo all-shards-written")


@pytest.fixture
def keys(monkeypatch, tmp_path):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MOCK_API_KEY"):
        monkeypatch.setenv(name, "sk-test-disk-bound")
    monkeypatch.delenv("CODEX_HOME", raising=False)
    home = tmp_path / "real-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")


@pytest.mark.parametrize("cli", PARAMS)
def test_an_agent_writing_past_the_bound_is_killed_and_the_case_fails(cli, tmp_path, keys):
    skill = segmentation_copy(tmp_path, {**TRAIN_CASE, "max_disk_mb": 64})
    script = Script(name="shards", match=cli.match, turns=[
        Turn(text="Fetching the shards first.", tool_calls=[cli.shell(WRITE)]),
        Turn(text="All shards are there.")])
    start = time.monotonic()
    with ScriptedModelServer([script]) as srv:
        code = main(["run", str(skill), "--runtime", cli.name, "--model", cli.model,
                     "--api-base", cli.base(srv), "--out", str(tmp_path / "s"), "-q",
                     "--no-grader"])
        convo = srv.requests_for("shards")
    (run_dir,) = (tmp_path / "s" / "runs").iterdir()
    case = run_dir / "segmentation" / cli.name / "train"
    g = load(case / "grading.json")
    assert g["status"] == "fail", g["status_reason"]
    assert g["status_reason"].startswith("wrote more than 64 MiB"), g["status_reason"]
    assert code == 1
    attempts = sorted((case / "attempts").glob("*/attempt.json"))
    assert len(attempts) == 1  # not retried as an environment error
    assert json.loads(attempts[0].read_text())["exceeded"].startswith("wrote more than 64 MiB")
    assert len(convo) == 1  # the CLI died in its first tool call: no second model turn
    events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
    assert not any("all-shards-written" in (e.get("output") or "") for e in events
                   if e["kind"] == "tool_result")
    assert time.monotonic() - start < 120
