"""Misconfiguration found before anything runs (aeval/runtime/model_keys.py) and in the request
models: unknown runtimes, agent runtimes without a model, models without their key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from aeval.capabilities import MODEL_RUNTIMES, RUNTIME_NAMES, VERBATIM_RUNTIMES
from aeval.run.requests import EvalRequest, MrRequest, SweepRequest
from aeval.runtime.model_keys import config_problem, key_vars, provider_of


def test_the_runtime_names_are_the_registered_ones():
    """aeval/ checks names without importing adapters: the two lists must not drift."""
    from aeval.adapters import RUNTIMES, runtime_class

    assert set(RUNTIME_NAMES) == set(RUNTIMES)
    assert {n for n in RUNTIMES if runtime_class(n).needs_model} == MODEL_RUNTIMES
    assert {n for n in RUNTIMES if runtime_class(n).runs_steps_verbatim} == VERBATIM_RUNTIMES


def test_only_a_runtime_without_a_model_runs_steps_verbatim():
    """The doc test of SKILL.md is planned for, and judged under, the runtimes whose class
    says it runs steps verbatim: the literal one, never an agent, never a replay."""
    from aeval.adapters import RUNTIMES, runs_steps_verbatim

    assert {n for n in RUNTIMES if runs_steps_verbatim(n)} == {"literal"}
    assert not runs_steps_verbatim("literall")


@pytest.mark.parametrize(("runtimes", "model", "grader", "api_base", "env", "expected"), [
    (["literall"], None, None, None, {}, "--runtime literall: unknown runtime; known: builtin"),
    (["builtin"], None, None, None, {}, "--runtime builtin needs a model"),
    (["codex"], None, None, None, {}, "--runtime codex needs a model"),
    (["builtin"], "openai/gpt-4o", None, None, {}, "--model openai/gpt-4o: OPENAI_API_KEY is "
     "not set"),
    (["builtin"], "gpt-4o", None, None, {}, "OPENAI_API_KEY is not set"),
    (["builtin"], "claude-sonnet-4-5", None, None, {}, "ANTHROPIC_API_KEY is not set"),
    (["claude-code"], "claude-sonnet-4-5", None, None, {"OPENAI_API_KEY": "k"},
     "ANTHROPIC_API_KEY is not set (the provider's key for claude-code"),
    (["codex"], "openai/gpt-5-codex", None, None, {"ANTHROPIC_API_KEY": "k"},
     "OPENAI_API_KEY is not set"),
    (["opencode"], "mistral/large", None, None, {}, "MISTRAL_API_KEY is not set"),
    (["literal"], None, "anthropic/claude-haiku", None, {},
     "--grader-model anthropic/claude-haiku: ANTHROPIC_API_KEY is not set"),
])
def test_misconfiguration_is_one_line_naming_the_option(runtimes, model, grader, api_base, env,
                                                        expected):
    problem = config_problem(runtimes, model, grader, api_base, env)
    assert problem is not None and expected in problem, problem
    assert "\n" not in problem


@pytest.mark.parametrize(("runtimes", "model", "grader", "api_base", "env"), [
    (["literal"], None, None, None, {}),
    (["builtin"], "openai/gpt-4o", None, None, {"OPENAI_API_KEY": "sk"}),
    (["builtin"], "openai/scripted", "openai/scripted", "http://127.0.0.1:9/v1", {}),
    (["builtin"], "ollama/llama3", None, None, {}),             # a local provider: no key
    (["builtin"], "someprovider/model", None, None, {}),        # not known here: not checked
    (["builtin"], "gemini/gemini-2.5-pro", None, None, {"GOOGLE_API_KEY": "g"}),
])
def test_a_complete_configuration_has_no_problem(runtimes, model, grader, api_base, env):
    assert config_problem(runtimes, model, grader, api_base, env) is None


def test_providers_and_their_variables():
    assert provider_of("openai/gpt-4o") == "openai" and provider_of("o3-mini") == "openai"
    assert provider_of("llama3") is None
    assert key_vars("builtin", "together_ai/x")[0] == "TOGETHERAI_API_KEY"


@pytest.mark.parametrize("model_cls, extra", [
    (EvalRequest, {}), (MrRequest, {"repo": "/r", "base": "a", "head": "b"}),
    (SweepRequest, {"marketplace": "/m"})])
def test_request_models_reject_an_unknown_runtime_and_a_runtime_without_model(model_cls,
                                                                               extra):
    """A served deployment accepted `literall` and ended exit 3 after retries."""
    with pytest.raises(ValidationError, match="unknown runtime 'literall'"):
        model_cls(runtimes=["literall"], **extra)
    with pytest.raises(ValidationError, match="runtime builtin needs a model"):
        model_cls(runtimes=["builtin"], **extra)
    assert model_cls(runtimes=["builtin"], model="openai/x", **extra).model == "openai/x"


def test_the_nightly_has_no_default_marketplace():
    with pytest.raises(ValidationError, match="marketplace"):
        SweepRequest()
    with pytest.raises(ValidationError, match="unfilled placeholder"):
        SweepRequest(marketplace="{{ $AEVAL_MARKETPLACE }}")
    with pytest.raises(ValidationError, match="repo"):
        MrRequest(base="a", head="b")
