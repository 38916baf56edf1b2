"""Misconfiguration found before anything runs: a runtime that needs a model without one, a
model asked for without the model client installed (the ``models`` extra), a model whose
provider key is absent, an unknown runtime. Each is a usage error (exit 2, one
line), never an environment error: a retry cannot fix it.

    config_problem(["builtin"], None, None, None, os.environ)
        -> "--runtime builtin needs a model: pass --model (...) or set AEVAL_MODEL; ..."
    config_problem(["builtin"], "openai/gpt-4o", None, None, {})
        -> "--model openai/gpt-4o: OPENAI_API_KEY is not set (the provider's key; ...)"

The key check is a table of the providers' usual variables, not the model client itself
(litellm takes seconds to import): a provider it does not know is not checked, and an
``api_base`` (a server of one's own, which may take any key or none) turns the check off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aeval.capabilities import MODEL_RUNTIMES, RUNTIME_NAMES

CLIENT = "litellm"
"""The model client every model call goes through (`aeval.adapters.llm`), an extra: the
``literal`` runtime never needs it."""
MODELS_INSTALL = "pip install 'aeval-skills[models]'"
"""The exact command that installs the model client."""

# litellm provider prefix -> the variables that hold its key (any one is enough)
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "cohere": ("COHERE_API_KEY",),
    "together_ai": ("TOGETHERAI_API_KEY", "TOGETHER_API_KEY", "TOGETHER_AI_TOKEN"),
    "fireworks_ai": ("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY"),
    "perplexity": ("PERPLEXITYAI_API_KEY", "PERPLEXITY_API_KEY"),
}
# model names litellm maps to a provider without a prefix
BARE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("gpt-", "openai"), ("chatgpt-", "openai"), ("o1", "openai"), ("o3", "openai"),
    ("o4", "openai"), ("claude-", "anthropic"))
# the CLI runtimes read one variable whatever the model string (their adapters' defaults)
RUNTIME_KEYS: dict[str, tuple[str, ...]] = {
    "claude-code": ("ANTHROPIC_API_KEY",),
    "codex": ("OPENAI_API_KEY",),
}


def provider_of(model: str) -> str | None:
    """The provider a litellm model string names (``openai/gpt-4o`` -> openai), or None."""
    prefix, slash, _ = model.partition("/")
    if slash:
        return prefix
    return next((p for start, p in BARE_PREFIXES if model.startswith(start)), None)


def key_vars(runtime: str, model: str) -> tuple[str, ...]:
    """The variables one of which must hold the key for ``model`` under ``runtime`` (empty:
    not known here, so not checked)."""
    if runtime in RUNTIME_KEYS:
        return RUNTIME_KEYS[runtime]
    provider = provider_of(model)
    if runtime == "opencode" and provider:  # <PROVIDER>_API_KEY, as its adapter reads it
        return (provider.upper().replace("-", "_") + "_API_KEY",)
    return PROVIDER_KEYS.get(provider or "", ())


def missing_key(runtime: str, model: str, api_base: str | None,
                environ: Mapping[str, str]) -> str | None:
    """The problem when ``model`` under ``runtime`` has no key in ``environ``, else None."""
    if api_base:
        return None
    names = key_vars(runtime, model)
    if not names or any(environ.get(n) for n in names):
        return None
    what = " or ".join(names)
    whose = f" for {runtime}" if runtime in RUNTIME_KEYS else ""
    return (f"--model {model}: {what} is not set (the provider's key{whose}; or --api-base "
            "for a server of your own)")


def missing_client(model: str | None, grader_model: str | None) -> str | None:
    """The problem when a model is asked for and the model client (litellm, the ``models``
    extra) is not installed, else None. A model is asked for by ``--model`` (the builtin
    agent's, and the grader's by default) or ``--grader-model``; found, never imported."""
    from importlib.util import find_spec

    if not (model or grader_model) or find_spec(CLIENT) is not None:
        return None
    option = f"--model {model}" if model else f"--grader-model {grader_model}"
    return f"{option} needs the model client ({CLIENT}), not installed: {MODELS_INSTALL}"


def config_problem(runtimes: Iterable[str], model: str | None, grader_model: str | None,
                   api_base: str | None, environ: Mapping[str, str]) -> str | None:
    """The first misconfiguration of a run, as one line naming the option; None if none."""
    runtimes = list(runtimes)
    for rt in runtimes:
        if rt not in RUNTIME_NAMES:
            return f"--runtime {rt}: unknown runtime; known: {', '.join(sorted(RUNTIME_NAMES))}"
    for rt in runtimes:
        if rt in MODEL_RUNTIMES and not model:
            return (f"--runtime {rt} needs a model: pass --model (a litellm model string, e.g. "
                    "openai/gpt-4o) or set AEVAL_MODEL; without one, --runtime literal runs "
                    "each case's `steps`")
    if problem := missing_client(model, grader_model):
        return problem
    for rt in runtimes:
        if rt in MODEL_RUNTIMES and model and (problem := missing_key(rt, model, api_base,
                                                                      environ)):
            return problem
    if grader_model and (problem := missing_key("builtin", grader_model, api_base, environ)):
        return problem.replace("--model", "--grader-model", 1)
    return None
