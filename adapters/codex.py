"""`codex`: the Codex CLI (npm ``@openai/codex``, pinned) run as ``codex exec --json``.

One attempt is one ``codex exec`` process in the workspace, with a private ``CODEX_HOME``
(``<home>/.codex``) and ``HOME`` outside the workspace, configured by a ``config.toml``
written there:

- a model provider ``aeval`` (Responses API) at ``--api-base`` (default: OpenAI), whose key is
  read from the variable ``AEVAL_CODEX_API_KEY`` that only the Codex process has; Codex's own
  request and stream retries are 0, so a 429 / 5xx ends the attempt as a
  `ModelTransientError` and aeval retries the case from a fresh workspace;
- the executor prompt as ``developer_instructions`` (a developer message beside Codex's own
  base instructions); the skill copy at ``.agents/skills/<name>/`` is discovered by Codex;
- ``shell_environment_policy``: commands inherit the Codex process environment (the case's
  environment, nothing else from aeval) minus ``CODEX_HOME`` and the key variable; no login
  shell, so PATH is the case's PATH;
- the ``workspace-write`` sandbox with network allowed and ``.agents/`` (read-only for Codex
  by default) writable, so edits to the skill copy happen and show up in Δ.

Codex has no turn limit: the adapter counts tool calls and stops the process after
``max_turns`` of them. The raw JSONL goes to ``request.raw_log``; `adapters._codex_parse`
turns it into events, live and on re-parse alike.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from adapters._codex_parse import CodexParser, classify_error_text
from aeval.errors import (
    ModelPermanentError,
    ModelTransientError,
    RuntimeUnavailable,
)
from aeval.events import (
    EndEvent,
    ErrorEvent,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from aeval.runtime import EventRecorder, RunRequest, RunResult

CODEX_VERSION = "0.171.0"
CODEX_PACKAGE = f"@openai/codex@{CODEX_VERSION}"
REPO_ROOT = Path(__file__).resolve().parent.parent
LOCAL_PREFIX = REPO_ROOT / ".ci" / "node_modules"
"""Where ``.ci/install-clis.sh`` installs the pinned CLIs (``npm install -g --prefix``)."""
KEY_VAR = "AEVAL_CODEX_API_KEY"
OPENAI_BASE = "https://api.openai.com/v1"
EVENT_TYPES: dict[str, type] = {
    c.model_fields["kind"].default: c
    for c in (MessageEvent, ToolCallEvent, ToolResultEvent, UsageEvent, ErrorEvent, EndEvent)
}


# ---- shared with adapters/opencode.py: finding a CLI, running it as a JSONL stream ----------


def find_cli(env_var: str, name: str) -> str | None:
    """The CLI binary: ``$env_var`` if set, else ``name`` on PATH, else the local prefix."""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit if Path(explicit).is_file() else None
    found = shutil.which(name)
    if found:
        return found
    local = LOCAL_PREFIX / "bin" / name
    return str(local) if local.is_file() else None


@cache
def cli_version(binary: str) -> str | None:
    """``binary --version``, first line, or None when it does not run. Run with a throwaway
    HOME and XDG dirs: some CLIs create their state dirs even for ``--version``."""
    with tempfile.TemporaryDirectory(prefix="aeval-cli-version-") as home:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
               "CODEX_HOME": home, "LANG": "C.UTF-8",
               **{f"XDG_{k}_HOME": home for k in ("CONFIG", "DATA", "CACHE", "STATE")}}
        try:
            proc = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                  timeout=60, stdin=subprocess.DEVNULL, env=env, cwd=home)
        except (OSError, subprocess.TimeoutExpired):
            return None
    lines = proc.stdout.strip().splitlines()
    return lines[0].strip() if proc.returncode == 0 and lines else None


@dataclass(frozen=True)
class ProcessOutcome:
    """How a CLI process ended."""

    returncode: int | None
    timed_out: bool
    stopped: bool  # the record callback asked to stop (a limit was reached)
    stderr_tail: str
    wall_s: float


def stream_jsonl(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float,
                 raw_log: Path, on_record: Callable[[dict[str, Any]], bool],
                 pass_fds: tuple[int, ...] = ()) -> ProcessOutcome:
    """Run ``argv`` (stdin closed, own process group), append its stdout as is to ``raw_log``
    and hand each JSON object line to ``on_record``; a True answer stops the process. The
    timeout kills the whole process group. ``pass_fds`` are inherited by the process."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, text=True, encoding="utf-8",
                            errors="replace", bufsize=1, pass_fds=pass_fds)
    timed_out = threading.Event()

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def on_timeout() -> None:
        timed_out.set()
        kill()

    tail: collections.deque[str] = collections.deque(maxlen=60)
    drain = threading.Thread(target=lambda: tail.extend(proc.stderr), daemon=True)
    drain.start()
    timer = threading.Timer(timeout_s, on_timeout)
    timer.daemon = True
    timer.start()
    stopped = False
    try:
        with raw_log.open("a", encoding="utf-8") as raw:
            for line in proc.stdout:
                raw.write(line)
                raw.flush()
                text = line.strip()
                if stopped or not text.startswith("{"):
                    continue
                try:
                    record = json.loads(text)
                except ValueError:
                    continue
                if isinstance(record, dict) and on_record(record):
                    stopped = True
                    kill()
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            kill()
            proc.wait()
        drain.join(timeout=5)
    return ProcessOutcome(returncode=proc.returncode, timed_out=timed_out.is_set(),
                          stopped=stopped, stderr_tail="".join(tail)[-4000:],
                          wall_s=time.monotonic() - start)


def executor_prompt(request: RunRequest) -> str:
    """The executor rules with ``{skill_path}`` filled in (workspace-relative)."""
    rel = request.skill_dir.relative_to(request.workspace).as_posix()
    return request.system_prompt.replace("{skill_path}", rel)


def emit(recorder: EventRecorder, events: list[dict[str, Any]]) -> None:
    """Send parser output (``kind`` + fields) to the recorder."""
    for event in events:
        fields = dict(event)
        recorder.emit(EVENT_TYPES[fields.pop("kind")], **fields)


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


def codex_config(request: RunRequest, model: str) -> str:
    """config.toml for one attempt (see the module docstring)."""
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
        "model_providers.aeval": {"name": "aeval", "base_url": request.api_base or OPENAI_BASE,
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
    config_dirs: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = f"npm install -g {CODEX_PACKAGE}"

    def __init__(self, api_key_env: str = "OPENAI_API_KEY"):
        """``api_key_env``: the variable of aeval's environment holding the model key; only
        the Codex process gets its value (as ``AEVAL_CODEX_API_KEY``)."""
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

    def _key(self, request: RunRequest) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if request.api_base:  # local and scripted servers take any key
            return "unused"
        raise RuntimeUnavailable(f"the codex runtime needs the model key in {self.api_key_env}")

    def run(self, request: RunRequest, recorder: EventRecorder) -> RunResult:
        if not request.model:
            raise RuntimeUnavailable("the codex runtime needs --model (e.g. openai/gpt-5-codex)")
        binary = self.binary()
        if binary is None:
            self.check_available()
        assert binary is not None
        model = request.model.removeprefix("openai/")
        codex_home = request.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(codex_config(request, model), encoding="utf-8")
        env = {**request.env, "HOME": str(request.home), "CODEX_HOME": str(codex_home),
               KEY_VAR: self._key(request)}
        argv = [binary, "exec", "--json", "--skip-git-repo-check", "-C", str(request.workspace),
                "-s", "workspace-write", "--", request.prompt]
        recorder.message("user", request.prompt)
        parser = CodexParser(workspace=str(request.workspace),
                             output_cap=request.limits.output_cap, model=request.model)
        max_turns = request.limits.max_turns

        def on_record(record: dict[str, Any]) -> bool:
            emit(recorder, parser.feed(record))
            return parser.tool_calls > max_turns

        outcome = stream_jsonl(argv, request.workspace, env, request.limits.timeout_s,
                               request.raw_log, on_record)
        version = self.version()
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
        return RunResult(status=status, final_text=final, usage=parser.usage,
                         wall_s=outcome.wall_s, runtime_version=version)
