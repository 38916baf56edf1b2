"""Where bubblewrap cannot run: `auto` falls back to no sandbox and says why, `require`
refuses with a clear line, `none` is what was asked. Runs everywhere, bwrap or not."""

from __future__ import annotations

import pytest

from aeval.adapters.sandbox.bwrap import NoSandbox, make_sandbox, sandbox_status
from aeval.isolation.sandbox import Sandbox, SandboxPolicy, SandboxUnavailable
from aeval.isolation.shell import base_env, run_command


def test_without_bubblewrap_auto_falls_back_and_require_refuses(tmp_path):
    policy = SandboxPolicy(root=tmp_path)
    missing = str(tmp_path / "no-such-bwrap")
    sb = make_sandbox("auto", policy, bwrap=missing)
    assert isinstance(sb, NoSandbox) and sb.status.used == "none"
    assert "not found" in sb.status.reason
    with pytest.raises(SandboxUnavailable, match=r"--sandbox require: .*not found"):
        make_sandbox("require", policy, bwrap=missing)
    # a bwrap that exists but cannot make namespaces (a container without user namespaces)
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\n"
                      "exit 1\n")
    broken.chmod(0o755)
    sb = make_sandbox("auto", policy, bwrap=str(broken))
    assert isinstance(sb, NoSandbox) and "No permissions to creating new namespace" in \
        sb.status.reason
    r = run_command("echo still-runs", tmp_path, base_env(tmp_path), 10, sandbox=sb)
    assert r.ok and r.stdout == "still-runs\n"
    assert make_sandbox("none", policy).status.reason == "requested"


def test_status_says_what_was_asked_and_what_is_used(tmp_path):
    missing = str(tmp_path / "no-such-bwrap")
    assert sandbox_status("none", missing).model_dump() == {
        "requested": "none", "used": "none", "reason": "requested"}
    auto = sandbox_status("auto", missing)
    assert auto.requested == "auto" and auto.used == "none" and "no-such-bwrap" in auto.reason
    sb = make_sandbox("auto", SandboxPolicy(root=tmp_path), bwrap=missing)
    assert isinstance(sb, Sandbox) and sb.argv(["echo", "x"], tmp_path, {}) == ["echo", "x"]
