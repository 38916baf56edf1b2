"""The agent runtimes, one module each: `builtin` (aeval's own loop on litellm, its tools in
`_agent_tools`), `claude_code`, `codex`, `opencode`, `literal` (no model) and `replay`; the
key-holding proxy the CLI runtimes talk through (`keyproxy`); private helpers: `_cli` (driving
an agent CLI) and the stream parsers `_*_parse`. They are registered by name, and imported
lazily, in `aeval.adapters` (``RUNTIMES``, ``get_runtime``)."""
