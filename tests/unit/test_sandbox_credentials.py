"""A contract cannot ask for aeval's model keys (or any model provider's, or the runtimes'),
while the credentials skills legitimately need stay allowed."""

from __future__ import annotations

import json
import shutil

import pytest

from aeval.errors import ContractError
from aeval.skill.contract import load_contract, parse_config
from aeval.skill.skill_md import load_skill
from tests.conftest import EXAMPLES

RESERVED = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_API_KEY",
            "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
            "GOOGLE_APPLICATION_CREDENTIALS", "VERTEXAI_PROJECT", "GEMINI_API_KEY",
            "GOOGLE_API_KEY", "MISTRAL_API_KEY", "GROQ_API_KEY", "COHERE_API_KEY",
            "TOGETHERAI_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY",
            "FIREWORKS_AI_API_KEY", "HUGGINGFACE_API_KEY", "REPLICATE_API_TOKEN",
            "DATABRICKS_TOKEN", "WATSONX_APIKEY", "LITELLM_MASTER_KEY", "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN", "CODEX_API_KEY", "OPENCODE_API_KEY",
            "AEVAL_GITLAB_TOKEN", "PREFECT_API_KEY", "CI_JOB_TOKEN", "GITLAB_TOKEN",
            "AEVAL_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN"]
ALLOWED = ["HF_TOKEN", "SERPAPI_API_KEY", "TAVILY_API_KEY", "E2B_API_KEY", "WANDB_API_KEY",
           "DATABASE_URL", "CODEX_HOME_HINT", "MY_OPENAI_PROXY_URL"]


@pytest.fixture
def skill(tmp_path):
    d = tmp_path / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", d)
    return d


def _declare(skill, names):
    cfg = skill / "eval.config"
    data = json.loads(cfg.read_text())
    data["evals"][0]["required_credentials"] = names
    cfg.write_text(json.dumps(data, indent=2))
    return cfg


@pytest.mark.parametrize("name", RESERVED)
def test_a_model_key_in_required_credentials_is_one_clear_line(skill, name):
    cfg = _declare(skill, ["HF_TOKEN", name])
    with pytest.raises(ContractError) as exc:
        parse_config(cfg)
    lines = str(exc.value).splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{cfg}:evals[0].required_credentials: {name} is reserved")


def test_the_skill_is_invalid_not_run(skill):
    _declare(skill, ["OPENAI_API_KEY"])
    with pytest.raises(ContractError, match="OPENAI_API_KEY is reserved"):
        load_contract(load_skill(skill), None)


def test_what_skills_need_is_still_allowed(skill):
    cfg = _declare(skill, ALLOWED)
    parsed = parse_config(cfg)
    assert parsed.evals[0].required_credentials == ALLOWED
