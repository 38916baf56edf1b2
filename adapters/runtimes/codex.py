"""`codex`: the Codex CLI (npm ``@openai/codex``, pinned) run as ``codex exec --json``.

One attempt is one ``codex exec`` process in the workspace, with a private ``CODEX_HOME``
(``<home>/.codex``) and ``HOME`` outside the workspace, configured by a ``config.toml``
written there:

- a model provider ``aeval`` (Responses API) at aeval's key proxy
(`aeval.adapters.runtimes.keyproxy`),
  which forwards to ``--api-base`` (default: OpenAI) with the real key. Codex only gets the
  attempt's proxy token, in the variable ``AEVAL_CODEX_API_KEY``; the real key never leaves
  aeval's process. Codex's own request and stream retries are 0, so a 429 / 5xx ends the
  attempt as a `ModelTransientError` and aeval retries the case from a fresh workspace;
- the executor prompt as ``developer_instructions`` (a developer message beside Codex's own
  base instructions); the skill copy at ``.agents/skills/<name>/`` is discovered by Codex;
- ``shell_environment_policy``: commands inherit the Codex process environment (the case's
  environment, nothing else from aeval) minus ``CODEX_HOME`` and the key variable; no login
  shell, so PATH is the case's PATH;
- Codex's own ``workspace-write`` sandbox with network allowed and ``.agents/`` (read-only for
  Codex by default) writable, so edits to the skill copy happen and show up in Δ.

Under aeval's bubblewrap sandbox the whole Codex process runs inside it (`in_sandbox`) and
Codex's own sandbox is off (``-s danger-full-access``): aeval's sandbox keeps no
``CAP_SYS_ADMIN``, so a nested bubblewrap cannot start there (every command would fail with
"setting up uid map"), and aeval's sandbox already confines every command Codex runs (host
read-only, only the attempt writable, its own PID namespace). Unsandboxed, Codex's own
``workspace-write`` sandbox runs as described above. Codex's tools can see the Codex process,
and so the proxy token (never the key).

Codex has no turn limit: the adapter counts tool calls and stops the process after
``max_turns`` of them. The raw JSONL goes to ``request.raw_log``;
`aeval.adapters.runtimes._codex_parse` turns it into events, live and on re-parse alike. ``codex
exec --json`` leaves out the calls Codex did not carry out (a tool it has not got, a command its
policy rejected) and counts no requests, so the adapter also reads Codex's session record as it
grows (`SessionTail`, ``$CODEX_HOME/sessions/...``, never through a symlink the agent planted) and
interleaves the records the parser needs into the raw log: every call the model made is an event,
and every model response a request.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, ClassVar

from aeval.adapters.runtimes._cli import (
    SessionTail,
    cli_version,
    emit,
    executor_prompt,
    find_cli,
    guard,
    in_sandbox,
    raise_if_killed_from_outside,
    sandboxed,
    stream_jsonl,
)
from aeval.adapters.runtimes._codex_parse import CodexParser, classify_error_text, wants_rollout
from aeval.adapters.runtimes.keyproxy import grant
from aeval.errors import (
    ModelPermanentError,
    ModelTransientError,
    RuntimeUnavailable,
)
from aeval.isolation.tree import ensure_folder, write_private
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, ExecutionResult

CODEX_VERSION = "0.171.0"
CODEX_PACKAGE = f"@openai/codex@{CODEX_VERSION}"
"""Where ``.ci/install-clis.sh`` installs the pinned CLIs (``npm install -g --prefix``)."""
KEY_VAR = "AEVAL_CODEX_API_KEY"
SESSION_FILES = ("sessions", "*", "*", "*", "rollout-*.jsonl")
"""Where Codex keeps its session record, under CODEX_HOME (year, month, day)."""
OPENAI_BASE = "https://api.openai.com/v1"


# ---- Codex ----------------------------------------------------------------------------------


def toml_value(value: Any) -> str:
    """A TOML value: strings, integers, booleans, lists and inline tables."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # JSON string escapes are TOML basic-string escapes; DEL must be escaped in TOML.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def codex_config(request: ExecutionRequest, model: str, base_url: str) -> str:
    """config.toml for one attempt (see the module docstring); ``base_url``: the key proxy's."""
    top = {
        "model": model,
        "model_provider": "aeval",
        "developer_instructions": executor_prompt(request),
        "check_for_update_on_startup": False,
        "allow_login_shell": False,
    }
    tables: dict[str, dict[str, Any]] = {
        "analytics": {"enabled": False},
        "skills.bundled": {"enabled": False},
        "shell_environment_policy": {"inherit": "all", "ignore_default_excludes": True,
                                     "exclude": ["CODEX_HOME", KEY_VAR]},
        "sandbox_workspace_write": {"network_access": True,
                                    "writable_roots": [str(request.workspace / ".agents")]},
        "model_providers.aeval": {"name": "aeval", "base_url": base_url,
                                  "wire_api": "responses", "env_key": KEY_VAR,
                                  "request_max_retries": 0, "stream_max_retries": 0},
    }
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for name, table in tables.items():
        lines += ["", f"[{name}]", *(f"{k} = {toml_value(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


class CodexRuntime:
    name: ClassVar[str] = "codex"
    skills_subdir: ClassVar[str | None] = ".agents/skills"
    needs_model: ClassVar[bool] = True
    runs_steps_verbatim: ClassVar[bool] = False
    config_dirs: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = f"npm install -g {CODEX_PACKAGE}"

    def __init__(self, api_key_env: str = "OPENAI_API_KEY"):
        """``api_key_env``: the variable of aeval's environment holding the model key; it
        stays in aeval's key proxy (Codex gets a per-attempt token)."""
        self.api_key_env = api_key_env

    def binary(self) -> str | None:
        return find_cli("AEVAL_CODEX_BIN", "codex")

    def version(self) -> str | None:
        binary = self.binary()
        return cli_version(binary) if binary else None

    def check_available(self) -> None:
        if self.version() is None:
            raise RuntimeUnavailable(
                f"the codex runtime needs the Codex CLI {CODEX_VERSION}: {self.install_hint} "
                "(or run .ci/install-clis.sh, or set AEVAL_CODEX_BIN)")

    def _key(self, request: ExecutionRequest) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if request.api_base:  # local and scripted servers take any key
            return "unused"
        raise RuntimeUnavailable(f"the codex runtime needs the model key in {self.api_key_env}")

    def run(self, request: ExecutionRequest, recorder: EventRecorder) -> ExecutionResult:
        if not request.model:
            raise RuntimeUnavailable("the codex runtime needs --model (e.g. openai/gpt-5-codex)")
        binary = self.binary()
        if binary is None:
            self.check_available()
        assert binary is not None
        model = request.model.removeprefix("openai/")
        root = request.home.parent  # the attempt root: written without following
                                    # (aeval.isolation.tree)
        codex_home = ensure_folder(request.home / ".codex", root)
        tmp = ensure_folder(request.home / ".tmp", root)
        # inside aeval's sandbox Codex's own (a nested bubblewrap) cannot start: see above
        mode = "danger-full-access" if sandboxed(request) else "workspace-write"
        argv = [binary, "exec", "--json", "--skip-git-repo-check", "-C",
                str(request.workspace), "-s", mode, "--", request.prompt]
        recorder.message("user", request.prompt)
        # the run's start on the wall clock the session record stamps its calls with
        start_epoch = time.time() - (time.monotonic() - recorder.clock_start)
        parser = CodexParser(workspace=str(request.workspace),
                             output_cap=request.limits.output_cap, model=request.model,
                             start_epoch=start_epoch)
        max_turns = request.limits.max_turns
        session = SessionTail(codex_home, SESSION_FILES, wants_rollout)

        def on_record(record: dict[str, Any]) -> bool:
            emit(recorder, parser.feed(record))
            return parser.tool_calls > max_turns

        with grant(request.api_base or OPENAI_BASE, self._key(request), "bearer",
                   models=[model], endpoints=("/responses",)) as g:
            write_private(codex_home / "config.toml", codex_config(request, model, g.base_url),
                          root)
            env = {**request.env, "HOME": str(request.home), "CODEX_HOME": str(codex_home),
                   "TMPDIR": str(tmp), KEY_VAR: g.token}
            try:
                outcome = stream_jsonl(in_sandbox(request, argv, env, g),
                                       request.workspace, env, request.limits.timeout_s,
                                       request.raw_log, on_record, side=session.lines,
                                       guard=guard(request))
            finally:
                session.close()
        emit(recorder, parser.finish())
        version = self.version()
        if outcome.exceeded:  # killed over the disk bound: the case fails, with that reason
            recorder.end("failed", outcome.exceeded)
            return ExecutionResult(status="failed", final_text=outcome.exceeded, usage=parser.usage,
                                   wall_s=outcome.wall_s, runtime_version=version)
        raise_if_killed_from_outside("codex", outcome, recorder)
        if parser.turn_failed and parser.failure is not None and not outcome.stopped:
            f = parser.failure
            if f.transient:
                raise ModelTransientError(f"codex: {f.message}", f.status_code)
            raise ModelPermanentError(f"codex: {f.message}")
        if outcome.timed_out:
            status, final = "timeout", f"timeout after {request.limits.timeout_s:g}s"
        elif outcome.stopped:
            status, final = "max_turns", f"stopped at max_turns={max_turns} tool calls"
        elif outcome.returncode != 0:
            message = (f"codex exited with code {outcome.returncode}: "
                       f"{outcome.stderr_tail.strip()[-1500:]}")
            failure = classify_error_text(outcome.stderr_tail)
            recorder.error(message, transient=failure.transient, error_type="codex")
            if failure.transient:
                raise ModelTransientError(message, failure.status_code)
            raise RuntimeUnavailable(message)
        else:
            status, final = "completed", parser.final_text
        recorder.end(status, final)
        return ExecutionResult(status=status, final_text=final, usage=parser.usage,
                               wall_s=outcome.wall_s, runtime_version=version)
