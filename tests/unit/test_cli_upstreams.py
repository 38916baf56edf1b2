"""Where each CLI runtime's key proxy grant points: the upstream and its header style."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeval.adapters.runtimes.claude_code import ClaudeCodeRuntime
from aeval.adapters.runtimes.opencode import upstream
from aeval.errors import RuntimeUnavailable
from aeval.runtime.protocol import ExecutionRequest


def request(tmp_path: Path, model: str, api_base: str | None = None) -> ExecutionRequest:
    ws = tmp_path / "workspace"
    return ExecutionRequest(prompt="Summarise the report.", case_id="summary", workspace=ws,
                            home=tmp_path / "home", skill_name="report",
                            skill_description="Summarises reports.",
                            skill_dir=ws / ".opencode/skills/report", env={}, model=model,
                            api_base=api_base, raw_log=tmp_path / "raw.jsonl")


def test_opencode_catalogue_providers_map_to_their_api_and_header_style(tmp_path):
    assert upstream(request(tmp_path, "openai/gpt-5")) == ("https://api.openai.com/v1", "bearer")
    assert upstream(request(tmp_path, "anthropic/claude-sonnet-4-5")) == (
        "https://api.anthropic.com/v1", "anthropic")
    assert upstream(request(tmp_path, "mock/x", "http://127.0.0.1:9/v1")) == (
        "http://127.0.0.1:9/v1", "bearer")


def test_opencode_unknown_provider_without_api_base_is_refused_in_one_line(tmp_path):
    with pytest.raises(RuntimeUnavailable, match=r"--api-base for provider 'mistral'"):
        upstream(request(tmp_path, "mistral/large"))


def test_claude_code_upstream_drops_a_version_path(tmp_path):
    up = ClaudeCodeRuntime.upstream
    assert up(request(tmp_path, "claude", "http://127.0.0.1:9/v1/")) == "http://127.0.0.1:9"
    assert up(request(tmp_path, "claude")) == "https://api.anthropic.com"
