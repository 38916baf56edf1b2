"""The three CLI runtimes (claude-code, codex, opencode) run wholly inside aeval's bubblewrap
sandbox, with the model key held outside it by the key proxy: the real CLIs against the
scripted model server on loopback, through the whole pipeline. A scripted agent looks around
with its shell tool (/proc, every process's command line and environment), then tries to
write outside the workspace and into the original skill.

Skipped per runtime when its CLI is not installed, and wholly when bubblewrap cannot run."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from aeval.adapters.runtimes.claude_code import ClaudeCodeRuntime
from aeval.adapters.runtimes.codex import CodexRuntime
from aeval.adapters.runtimes.opencode import OpenCodeRuntime
from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.deployments.cli.main import main
from aeval.isolation.workspace import manifest
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.segmentation_case import MATCH, TRAIN_CASE, load, segmentation_copy

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

FRAGMENT = "Q7R2X9K4"
REAL_KEY = f"sk-live-{FRAGMENT}-sandbox-canary-8d1e"
"""A distinctive model key in aeval's environment: it must reach the upstream and nothing
else (no process in the sandbox, no artifact, no Prefect state)."""
# The probe builds the fragment at run time and hands it to grep as a file, so no command
# line (its own, grep's) contains it.
PROBE = ("echo PIDS: $(ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '); "
         "F=Q7R2; F=${F}X9K4; "
         "echo hits=$(cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null "
         "| tr '\\0' '\\n' | grep -acf <(echo \"$F\")); "
         "echo CMDLINES:; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; "
         "echo; done; echo ENVIRON:; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' "
         "| cut -c1-60 | sort -u | head -80; echo PROBE-END")


@dataclass(frozen=True)
class Cli:
    name: str
    runtime: object
    model: str
    key_env: str
    base: Callable[[ScriptedModelServer], str]
    shell: Callable[[str], ToolCall]
    match: str


CLIS = [
    Cli("claude-code", ClaudeCodeRuntime(), "claude-sonnet-4-5", "ANTHROPIC_API_KEY",
        lambda s: s.url,
        lambda c: ToolCall(name="Bash", arguments={"command": c, "description": "run"}),
        r"(?s)EXECUTOR of an aeval test run.*Train a segmentation model on fixtures/"),
    Cli("codex", CodexRuntime(), "openai/scripted", "OPENAI_API_KEY",
        lambda s: s.base_url_openai,
        lambda c: ToolCall(name="exec_command", arguments={"cmd": c}), MATCH),
    Cli("opencode", OpenCodeRuntime(), "mock/scripted", "MOCK_API_KEY",
        lambda s: s.base_url_openai,
        lambda c: ToolCall(name="bash", arguments={"command": c, "description": "run"}), MATCH),
]


def _available(cli: Cli) -> bool:
    try:
        cli.runtime.check_available()  # type: ignore[attr-defined]
    except Exception:
        return False
    return True


PARAMS = [pytest.param(c, id=c.name, marks=pytest.mark.skipif(
    not _available(c), reason=f"{c.name} is not installed: {c.runtime.install_hint}"))  # type: ignore[attr-defined]
    for c in CLIS]


@pytest.fixture
def env(monkeypatch, tmp_path):
    for c in CLIS:
        monkeypatch.setenv(c.key_env, REAL_KEY)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    home = tmp_path / "real-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AEVAL_RETRY_DELAY_S", "0.05")


def run(cli: Cli, skill: Path, srv: ScriptedModelServer, out: Path,
        *extra: str) -> tuple[int, Path]:
    code = main(["run", str(skill), "--runtime", cli.name, "--model", cli.model,
                 "--api-base", cli.base(srv), "--out", str(out), "-q", "--no-grader", *extra])
    (run_dir,) = (out / "runs").iterdir()
    return code, run_dir / "segmentation" / cli.name / "train"


def tool_outputs(case: Path) -> list[str]:
    events = [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]
    return [e.get("output") or "" for e in events if e["kind"] == "tool_result"]


def key_forms(key: str) -> list[bytes]:
    raw = key.encode()
    return [raw, base64.b64encode(raw), raw.hex().encode(), raw.hex().upper().encode(),
            base64.urlsafe_b64encode(raw)]


def assert_key_nowhere(*roots: Path) -> None:
    forms = key_forms(REAL_KEY)
    for root in roots:
        for p in root.rglob("*"):
            if p.is_file() and not p.is_symlink():
                data = p.read_bytes()
                assert not any(f in data for f in forms), p


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"bwrap cannot run: {bwrap_problem()}")
@pytest.mark.parametrize("cli", PARAMS)
def test_cli_runs_wholly_sandboxed_and_never_holds_the_key(cli, tmp_path, env):
    skill = segmentation_copy(tmp_path)
    before = manifest(skill)
    escape = Path(__file__).parent / f".escape-{cli.name}-{tmp_path.name}"
    script = Script(name="probe", match=cli.match, turns=[
        Turn(text="Looking around first.", tool_calls=[cli.shell(PROBE)]),
        Turn(tool_calls=[cli.shell(
            f"echo outside > {escape} && echo escaped-host || echo host-write-refused; "
            f"echo tamper >> {skill}/SKILL.md && echo tampered || echo skill-write-refused")]),
        Turn(text="Looked around; nothing to do.")])
    with ScriptedModelServer([script]) as srv:
        _, case = run(cli, skill, srv, tmp_path / "s")
        convo = srv.requests_for("probe")
    assert len(convo) == 3
    # the upstream got the real key (from the proxy); the CLI itself never had it
    assert {r.credential_sha256 for r in convo} == {sha(REAL_KEY)}
    meta = load(case / "eval_metadata.json")
    assert meta["sandbox"]["used"] == "bwrap"
    probe, writes = tool_outputs(case)
    assert "PROBE-END" in probe and "hits=0" in probe
    pids = [int(p) for p in re.search(r"PIDS: ([\d ]*)", probe).group(1).split()]
    assert pids and os.getpid() not in pids and max(pids) < 1000  # its own PID namespace
    cmdlines = probe.split("CMDLINES:")[1].split("ENVIRON:")[0]
    for absent in ("pytest", "prefect", "uvicorn", str(skill), str(tmp_path / "s")):
        assert absent not in cmdlines, absent
    environ = probe.split("ENVIRON:")[1]
    assert "ANTHROPIC_API_KEY=" not in environ and "OPENAI_API_KEY=" not in environ
    assert "host-write-refused" in writes and "skill-write-refused" in writes
    assert not escape.exists()
    assert manifest(skill) == before
    assert_key_nowhere(tmp_path / "s", Path(os.environ["PREFECT_HOME"]))


@pytest.mark.parametrize("cli", PARAMS)
def test_unsandboxed_cli_still_goes_through_the_proxy(cli, tmp_path, env):
    skill = segmentation_copy(tmp_path)
    script = Script(name="probe", match=cli.match, turns=[
        Turn(tool_calls=[cli.shell("F=Q7R2; F=${F}X9K4; echo parent=$(tr '\\0' '\\n' "
                                   "< /proc/$PPID/environ | grep -acf <(echo \"$F\")); "
                                   "echo pid=$$ parent_name=$(cat /proc/$PPID/comm)")]),
        Turn(text="Done.")])
    with ScriptedModelServer([script]) as srv:
        _, case = run(cli, skill, srv, tmp_path / "s", "--sandbox", "none")
        convo = srv.requests_for("probe")
    assert len(convo) == 2 and {r.credential_sha256 for r in convo} == {sha(REAL_KEY)}
    assert load(case / "eval_metadata.json")["sandbox"]["used"] == "none"
    (probe,) = tool_outputs(case)
    assert "parent=0" in probe  # the CLI that started the tool holds no key
    assert re.search(r"parent_name=(claude|codex|opencode|node)", probe), probe
    assert int(re.search(r"pid=(\d+)", probe).group(1)) > 1  # host PIDs: not sandboxed
    assert_key_nowhere(tmp_path / "s")


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"bwrap cannot run: {bwrap_problem()}")
@pytest.mark.parametrize("cli", PARAMS)
def test_case_without_network_reaches_the_model_through_the_bridge(cli, tmp_path, env):
    skill = segmentation_copy(tmp_path, {**TRAIN_CASE, "network": False})
    script = Script(name="offline", match=cli.match, turns=[
        Turn(tool_calls=[cli.shell("python3 -c \"import urllib.request as u; "
                                   "u.urlopen('http://example.com', timeout=5)\" "
                                   "&& echo online || echo offline")]),
        Turn(text="Done.")])
    with ScriptedModelServer([script]) as srv:
        _, case = run(cli, skill, srv, tmp_path / "s")
        convo = srv.requests_for("offline")
    assert len(convo) == 2 and {r.credential_sha256 for r in convo} == {sha(REAL_KEY)}
    (out,) = tool_outputs(case)
    assert "offline" in out and "online" not in out.replace("offline", "")
