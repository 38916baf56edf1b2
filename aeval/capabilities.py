"""Which runtimes exist and what each can do, by name: the domain's mirror of the adapters'
class flags (``needs_model``, ``runs_steps_verbatim``; `aeval.adapters` registers them, and a
test keeps the two equal). The request models, the verdicts and the command line read these
without importing any adapter."""

from __future__ import annotations

# MODEL_RUNTIMES: those whose class says ``needs_model``; VERBATIM_RUNTIMES: those
# whose class says ``runs_steps_verbatim``.
RUNTIME_NAMES: tuple[str, ...] = ("builtin", "claude-code", "codex", "opencode", "literal",
                                  "replay")
MODEL_RUNTIMES: frozenset[str] = frozenset({"builtin", "claude-code", "codex", "opencode"})
NO_MODEL_RUNTIMES: frozenset[str] = frozenset(RUNTIME_NAMES) - MODEL_RUNTIMES
"""The runtimes that run without a model: no agent chooses anything (not for uplift, compare's
models or trigger accuracy)."""
VERBATIM_RUNTIMES: frozenset[str] = frozenset({"literal"})
"""The runtimes that run the documented commands once, verbatim: no executor that could try
again, so nothing in their run is ever corrected."""
