"""Process hardening: keep the secrets of the harness away from the executor's tools."""

from __future__ import annotations

import os
import re
import sys


def harden_process() -> bool:
    """Make this process non-dumpable (Linux), so its /proc/<pid>/environ and memory cannot be
    read by the executor's tool processes running as the same user. It holds the model API key
    (and, with --post, the GitLab token). Root can still read them: run untrusted skills as
    an unprivileged user or in a container. Returns True when applied."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        return False


M_ARENA_MAX = -8  # glibc mallopt parameter
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas (default: 8 per core) before threads start. Each worker
    thread otherwise gets an arena of its own that keeps what it once held: two arenas hold a
    long run's memory lower at the same speed (benchmarks/literal_sweep.py measures it).
    ``MALLOC_ARENA_MAX`` in the environment wins. True when applied."""
    if not sys.platform.startswith("linux") or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    import ctypes

    try:
        return ctypes.CDLL(None).mallopt(M_ARENA_MAX, arenas) == 1
    except (OSError, AttributeError):
        return False


# Secrets of the harness itself: a contract (written by whoever opens the MR) must not be able
# to hand them to the executor. aeval's own settings and CI tokens; every key a model
# provider reads (litellm's providers, the Claude Code / Codex / OpenCode CLIs), named one by
# one: a blanket `*_API_KEY` would also refuse what skills legitimately need (HF_TOKEN,
# SERPAPI_API_KEY, TAVILY_API_KEY ...). Whole prefixes where the provider owns the prefix.
RESERVED_CREDENTIALS = re.compile(
    r"^(AEVAL_.*|PREFECT_.*|CI_JOB_TOKEN|CI_JOB_JWT.*|CI_REGISTRY_PASSWORD|CI_DEPLOY_PASSWORD|"
    r"GITLAB_TOKEN|GITLAB_.*_TOKEN|.*_GITLAB_TOKEN|ACTIONS_.*TOKEN|GITHUB_TOKEN|"
    # the GitHub CLI's and PyGithub users' token variables
    r"GH_TOKEN|GH_ENTERPRISE_TOKEN|GITHUB_ENTERPRISE_TOKEN|.*_GITHUB_TOKEN|"
    # providers that own their prefix, and cloud credentials models are reached with
    r"OPENAI_.*|ANTHROPIC_.*|AZURE_.*|AWS_.*|BEDROCK_.*|VERTEX.*|GEMINI_.*|LITELLM_.*|"
    r"CLAUDE_CODE_.*|CODEX_.*API_KEY|OPENCODE_.*API_KEY|SNOWFLAKE_.*|WATSONX_.*|"
    r"GOOGLE_APPLICATION_CREDENTIALS|GOOGLE_API_KEY|PALM_API_KEY|"
    # one key (or token) per litellm model provider
    r"(MISTRAL|MISTRAL_AZURE|CODESTRAL|COHERE|CO|GROQ|REPLICATE|HUGGINGFACE|DEEPSEEK|XAI|"
    r"PERPLEXITY|PERPLEXITYAI|OPENROUTER|OR|DEEPINFRA|ANYSCALE|CEREBRAS|SAMBANOVA|NVIDIA_NIM|"
    r"AI21|NLP_CLOUD|ALEPH_ALPHA|ALEPHALPHA|VOYAGE|VOYAGE_AI|DATABRICKS|WX|CLOUDFLARE|CLARIFAI|"
    r"PREDIBASE|FRIENDLI|FRIENDLIAI|GITHUB|MOONSHOT|DASHSCOPE|VOLCENGINE|ARK|OLLAMA|HOSTED_VLLM|"
    r"VLLM|LM_STUDIO|NEBIUS|NOVITA|HYPERBOLIC|LAMBDA|GALADRIEL|NSCALE|BASETEN|MINIMAX|ZAI|LLAMA|"
    r"META|FEATHERLESS|FEATHERLESS_AI|AIML|GIGACHAT|INFINITY|XINFERENCE|CHUTES|MODELSCOPE|"
    r"TENCENT|QWENCLOUD|QWEN_AI_PLATFORM|BIGMODEL|POE|NANOGPT|OVHCLOUD|COMETAPI|V0|"
    r"VERCEL_AI_GATEWAY|EMPOWER|MARITALK|LLAMAFILE|DOCKER_MODEL_RUNNER|GRADIENT_AI|"
    r"AMAZON_NOVA|INCEPTION|MORPH|PUBLICAI|TOGETHER|TOGETHERAI|TOGETHER_AI|FIREWORKS|"
    r"FIREWORKSAI|FIREWORKS_AI|JINA|JINA_AI)_(API_KEY|APIKEY|API_TOKEN|TOKEN|PAT|ACCESS_TOKEN|"
    r"CLIENT_SECRET)"
    r")$")

_SECRETISH = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.I)


def scrubbed_environ(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``environ`` without secrets: model-provider keys, aeval's and CI's tokens, anything
    named like a key, token, secret, password or credential. What the processes aeval starts
    for itself (the embedded Prefect server) inherit."""
    environ = dict(os.environ if environ is None else environ)
    return {k: v for k, v in environ.items() if not _SECRETISH.search(k) and (
        k.startswith("PREFECT_") or not RESERVED_CREDENTIALS.match(k))}
