"""`opencode`: OpenCode (npm ``opencode-ai``, pinned) run as ``opencode run --format json``.

One attempt is one ``opencode run`` process with the workspace as working directory, always
under the case's timeout (OpenCode retries an unreachable server for a long time, silently).
Everything it reads or writes outside the workspace lives under the attempt's private home:
``HOME`` and ``XDG_{CONFIG,DATA,CACHE,STATE}_HOME``. Its configuration comes from
``OPENCODE_CONFIG_CONTENT``:

- with ``--api-base``: a provider ``aeval`` (``@ai-sdk/openai-compatible``, bundled) at that
  URL, the model id being ``--model`` without its ``provider/`` prefix; without it, the
  ``provider/model`` of OpenCode's own catalogue (``openai`` or ``anthropic``: the providers
  whose API address aeval knows). Either way the provider's base URL is aeval's key proxy
  (`aeval.adapters.runtimes.keyproxy`), which holds the real key; OpenCode only gets the attempt's
  token, written to a pipe the process inherits and read once as ``{file:/dev/fd/N}``;
- the executor prompt as an ``instructions`` file in the private home (added to OpenCode's own
  system prompt), ``agent.build.steps`` = max turns, bash and edits allowed; paths outside
  the project (``external_directory``) allowed only inside aeval's sandbox (unsandboxed,
  OpenCode's default asks, and nobody answers: refused);
- offline: no model catalogue fetch, no autoupdate, no LSP download, no default or external
  plugins, and every config dir it uses (``$XDG_CONFIG_HOME/opencode``, ``.opencode/``)
  pre-filled with the ``node_modules/`` + package files that stop its plugin install.
  ``rg`` must be on PATH (else it downloads ripgrep).

Under aeval's bubblewrap sandbox the whole OpenCode process runs inside it (`in_sandbox`).

Tool processes: OpenCode starts its bash tool with its own environment. ``SHELL`` points to a
wrapper in the private home that ``exec env -i`` the case's environment and then bash, so
commands see only ``request.env`` (not the key, not OpenCode's settings). The skill copy sits
at ``.opencode/skills/<name>/``; ``.opencode/`` is a config dir (never an output).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import Any, ClassVar

from aeval.adapters.runtimes._cli import (
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
from aeval.adapters.runtimes._opencode_parse import OpenCodeParser
from aeval.adapters.runtimes.keyproxy import AuthStyle, grant
from aeval.errors import ModelPermanentError, ModelTransientError, RuntimeUnavailable
from aeval.isolation.tree import ensure_folder, write_private
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, ExecutionResult

OPENCODE_VERSION = "1.18.33"
OPENCODE_PACKAGE = f"opencode-ai@{OPENCODE_VERSION}"
OFFLINE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}
PLUGIN_FILES = {
    "package.json": {"dependencies": {"@opencode-ai/plugin": "*"}},
    "package-lock.json": {"lockfileVersion": 3,
                          "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}},
}
PROVIDER_APIS: dict[str, tuple[str, AuthStyle]] = {
    "openai": ("https://api.openai.com/v1", "bearer"),
    "anthropic": ("https://api.anthropic.com/v1", "anthropic"),
}
"""Catalogue providers aeval can put behind its key proxy without ``--api-base``."""
_MODEL_STALL = re.compile(r"stream error|APICallError|Cannot connect|socket connection",
                          re.IGNORECASE)


def prefill_config_dir(path: Path, trusted: Path) -> None:
    """What stops OpenCode's background ``npm install @opencode-ai/plugin`` in a config dir
    (written beneath ``trusted`` without following a symlink: `aeval.isolation.tree`)."""
    ensure_folder(path / "node_modules", trusted)
    for name, content in PLUGIN_FILES.items():
        if not (path / name).is_file() or (path / name).is_symlink():
            write_private(path / name, json.dumps(content), trusted)


def shell_wrapper(env: dict[str, str]) -> str:
    """A bash stand-in that runs bash with exactly ``env`` (what tools may see)."""
    bash = shutil.which("bash", path=env.get("PATH")) or "/bin/bash"
    envbin = shutil.which("env") or "/usr/bin/env"
    assigns = " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items()))
    return f"#!/bin/sh\nexec {shlex.quote(envbin)} -i {assigns} {shlex.quote(bash)} \"$@\"\n"


def upstream(request: ExecutionRequest) -> tuple[str, AuthStyle]:
    """Where the key proxy sends the model requests, and how it authenticates there."""
    assert request.model
    if request.api_base:
        return request.api_base, "bearer"
    prefix = request.model.partition("/")[0]
    if prefix not in PROVIDER_APIS:
        raise RuntimeUnavailable(
            f"the opencode runtime needs --api-base for provider {prefix!r} (aeval's key proxy "
            f"knows the API address of: {', '.join(sorted(PROVIDER_APIS))})")
    return PROVIDER_APIS[prefix]


def opencode_config(request: ExecutionRequest, instructions: Path, key_fd: int,
                    base_url: str) -> tuple[dict[str, Any], str]:
    """The configuration and the ``provider/model`` to run; the key (the proxy's token) is
    read from ``key_fd``, ``base_url`` is the proxy's."""
    assert request.model
    key_ref = "{file:/dev/fd/" + str(key_fd) + "}"
    prefix, _, model_id = request.model.partition("/")
    if request.api_base:
        model_id = model_id or prefix
        provider = {"aeval": {
            "npm": "@ai-sdk/openai-compatible", "name": "aeval",
            "options": {"baseURL": base_url, "apiKey": key_ref},
            "models": {model_id: {"name": model_id, "tool_call": True}}}}
        model = f"aeval/{model_id}"
    else:
        provider = {prefix: {"options": {"apiKey": key_ref, "baseURL": base_url}}}
        model = request.model
    config = {
        "provider": provider,
        "model": model,
        "instructions": [str(instructions)],
        "agent": {"build": {"steps": request.limits.max_turns}},
        "permission": {"bash": "allow", "edit": "allow",
                       # inside aeval's sandbox the host is read-only and the original skill
                       # hidden: reading outside the project needs no person to approve it
                       **({"external_directory": "allow"} if sandboxed(request) else {})},
        "autoupdate": False,
        "share": "disabled",
    }
    return config, model


class OpenCodeRuntime:
    name: ClassVar[str] = "opencode"
    skills_subdir: ClassVar[str | None] = ".opencode/skills"
    needs_model: ClassVar[bool] = True
    runs_steps_verbatim: ClassVar[bool] = False
    config_dirs: ClassVar[tuple[str, ...]] = (".opencode",)
    install_hint: ClassVar[str] = f"npm install -g {OPENCODE_PACKAGE}"

    def __init__(self, api_key_env: str | None = None):
        """``api_key_env``: the variable of aeval's environment holding the model key
        (default: ``<PROVIDER>_API_KEY`` of ``--model``, e.g. OPENAI_API_KEY); it stays in
        aeval's key proxy (OpenCode gets a per-attempt token)."""
        self.api_key_env = api_key_env

    def binary(self) -> str | None:
        return find_cli("AEVAL_OPENCODE_BIN", "opencode")

    def version(self) -> str | None:
        binary = self.binary()
        found = cli_version(binary) if binary else None
        return f"opencode {found}" if found else None

    def check_available(self) -> None:
        if self.version() is None:
            raise RuntimeUnavailable(
                f"the opencode runtime needs OpenCode {OPENCODE_VERSION}: {self.install_hint} "
                "(or run .ci/install-clis.sh, or set AEVAL_OPENCODE_BIN)")
        if shutil.which("rg") is None:
            raise RuntimeUnavailable("the opencode runtime needs ripgrep (`rg`) on PATH, or it "
                                     "downloads one: apt-get install ripgrep / pip install "
                                     "ripgrep")

    def _key(self, request: ExecutionRequest) -> str:
        assert request.model
        var = self.api_key_env or request.model.partition("/")[0].upper().replace("-", "_") \
            + "_API_KEY"
        key = os.environ.get(var)
        if key:
            return key
        if request.api_base:  # local and scripted servers take any key
            return "unused"
        raise RuntimeUnavailable(f"the opencode runtime needs the model key in {var}")

    def _prepare_home(self, request: ExecutionRequest) -> dict[str, str]:
        """Private HOME / XDG dirs, the instructions file and the shell wrapper; returns the
        OpenCode process environment (without the config and key)."""
        home = request.home
        xdg = {"XDG_CONFIG_HOME": home / ".config", "XDG_DATA_HOME": home / ".local" / "share",
               "XDG_CACHE_HOME": home / ".cache", "XDG_STATE_HOME": home / ".local" / "state"}
        root = home.parent  # the attempt root: written without following (aeval.isolation.tree)
        for d in xdg.values():
            ensure_folder(d, root)
        prefill_config_dir(xdg["XDG_CONFIG_HOME"] / "opencode", root)
        prefill_config_dir(request.workspace / ".opencode", root)
        own = home / ".aeval"
        wrapper = own / "bin" / "bash"
        inside = request.sandbox.inside_env(request.env) if sandboxed(request) else request.env  # type: ignore[union-attr]
        write_private(wrapper, shell_wrapper(inside), root, 0o700)
        return {**request.env, "HOME": str(home), **{k: str(v) for k, v in xdg.items()},
                **OFFLINE_ENV, "SHELL": str(wrapper)}

    def run(self, request: ExecutionRequest, recorder: EventRecorder) -> ExecutionResult:
        if not request.model:
            raise RuntimeUnavailable("the opencode runtime needs --model (provider/model)")
        binary = self.binary()
        if binary is None:
            self.check_available()
        assert binary is not None
        env = self._prepare_home(request)
        instructions = write_private(request.home / ".aeval" / "executor.md",
                                     executor_prompt(request), request.home.parent)
        base, style = upstream(request)
        key = self._key(request)
        recorder.message("user", request.prompt)
        # the run's start on the wall clock OpenCode stamps its tool calls with
        start_epoch = time.time() - (time.monotonic() - recorder.clock_start)
        parser = OpenCodeParser(workspace=str(request.workspace),
                                output_cap=request.limits.output_cap, model=request.model,
                                start_epoch=start_epoch)
        max_turns = request.limits.max_turns

        def on_record(record: dict[str, Any]) -> bool:
            emit(recorder, parser.feed(record))
            return parser.steps > max_turns + 1  # backstop: agent.build.steps is the limit

        prefix, _, model_id = request.model.partition("/")
        with grant(base, key, style, models=[model_id or prefix]) as g:
            key_fd, key_writer = os.pipe()  # the token travels in a pipe, in no environment
            try:
                os.write(key_writer, g.token.encode())
            finally:
                os.close(key_writer)
            config, model = opencode_config(request, instructions, key_fd, g.base_url)
            env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
            argv = [binary, "run", "--format", "json", "--pure", "--print-logs", "--log-level",
                    "ERROR", "--title", f"aeval {request.case_id}", "-m", model, "--",
                    request.prompt]
            try:
                outcome = stream_jsonl(in_sandbox(request, argv, env, g),
                                       request.workspace, env, request.limits.timeout_s,
                                       request.raw_log, on_record, pass_fds=(key_fd,),
                                       guard=guard(request))
            finally:
                os.close(key_fd)
        version = self.version()
        if outcome.exceeded:  # killed over the disk bound: the case fails, with that reason
            recorder.end("failed", outcome.exceeded)
            return ExecutionResult(status="failed", final_text=outcome.exceeded, usage=parser.usage,
                                   wall_s=outcome.wall_s, runtime_version=version)
        raise_if_killed_from_outside("opencode", outcome, recorder)
        if parser.failure is not None and not outcome.stopped:
            f = parser.failure
            if f.transient:
                raise ModelTransientError(f"opencode: {f.message}", f.status_code)
            raise ModelPermanentError(f"opencode: {f.message}")
        if outcome.timed_out:
            stalled = parser.last_reason in (None, "tool-calls") and _MODEL_STALL.search(
                outcome.stderr_tail)
            if stalled:
                message = ("opencode: no answer from the model API before the timeout: "
                           f"{outcome.stderr_tail.strip()[-800:]}")
                recorder.error(message, transient=True, error_type="opencode")
                raise ModelTransientError(message)
            status, final = "timeout", f"timeout after {request.limits.timeout_s:g}s"
        elif outcome.stopped or (parser.steps >= max_turns and parser.last_reason != "stop"):
            status, final = "max_turns", f"stopped at max_turns={max_turns} steps"
        elif outcome.returncode != 0:
            message = (f"opencode exited with code {outcome.returncode}: "
                       f"{outcome.stderr_tail.strip()[-1500:]}")
            recorder.error(message, transient=False, error_type="opencode")
            raise RuntimeUnavailable(message)
        else:
            status, final = "completed", parser.final_text
        recorder.end(status, final)
        return ExecutionResult(status=status, final_text=final, usage=parser.usage,
                               wall_s=outcome.wall_s, runtime_version=version)
