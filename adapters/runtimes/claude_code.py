"""`claude-code`: Claude Code through claude-agent-sdk (which bundles the CLI), one run per attempt.

    pip install 'aeval-skills[claude]'        # claude-agent-sdk>=0.2.180,<0.3

The skill copy sits at ``.claude/skills/<name>/``, where Claude Code discovers project skills;
aeval's executor rules are APPENDED to Claude Code's own system prompt.

Isolation, per attempt:
- Config: ``HOME`` and ``CLAUDE_CONFIG_DIR`` point into the attempt's private home (outside the
  workspace), and only project settings load (``setting_sources=["project"]``), so nothing of
  the machine's ``~/.claude`` is read or written. ``TMPDIR`` is private too (the CLI keeps task
  output and sockets there). Telemetry, auto-update and other non-essential traffic are off.
- The key: the CLI never has it. ``ANTHROPIC_BASE_URL`` is aeval's key proxy
  (`aeval.adapters.runtimes.keyproxy`), which holds the real key and forwards to ``--api-base``
  (default: Anthropic); the CLI's "API key" is the attempt's proxy token, revoked when the run ends.
- Environment: the SDK starts its CLI with aeval's whole environment (provider keys,
  ``PREFECT_API_URL``, ...) plus its options. aeval hands the SDK, for its run only, an
  empty inherited environment (`scrubbed_spawn`: the SDK's module reads ``os.environ``
  through a per-run view, so other threads and other SDK users see the real one), and points
  it at a small launcher (written into the private home, run by aeval's Python outside the
  sandbox): its environment is the CLI's settings and nothing of aeval's. The launcher execs
  the CLI with exactly the case's environment (`ExecutionRequest.env`) plus the CLI's own
  settings, and hands the token over through a pipe
  (``CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR``): it is in no environment, the CLI drains the pipe
  at start, and tool processes do not inherit the descriptor. Limits: tool processes also see
  the variables Claude Code itself sets (``CLAUDECODE``, ``CLAUDE_CODE_*`` session ids,
  ``ANTHROPIC_BASE_URL``, ``SHELL``, ...), and the token is in the CLI's memory.
- Sandbox: under aeval's bubblewrap sandbox the launcher execs bwrap (`in_sandbox`), so the
  whole CLI and every tool process run inside it; bwrap and everything in the sandbox get
  only the launcher's filtered environment (the namespace's init, which a tool can read in
  /proc/1, holds no more). At the deadline the launcher's pid (then bwrap's) gets the signals:
  bwrap going down takes the whole PID namespace with it.
- Permissions: running as root refuses ``bypassPermissions``, so ``acceptEdits`` with the
  read / run tools in ``allowed_tools``. Writes are NOT pre-allowed (an allowed ``Write``
  writes anywhere): acceptEdits accepts them inside the workspace, and the rest reach
  `_permission`. Claude Code always asks for ``.claude/``, where the skill copy lives, also
  for a pre-allowed Bash command that writes there; a hook cannot approve that, this
  callback can, and does, as a user would: the agent has the same power over the skill copy
  as under the other runtimes. A write outside the workspace and the web tools are denied.
- Retries: Claude Code's own retries are off (``CLAUDE_CODE_MAX_RETRIES=0``): a 429 / 5xx /
  529 ends the attempt with `ModelTransientError`, and aeval retries the whole case from a
  fresh workspace.

Every SDK message is written to raw.jsonl as it arrives and mapped by the same pure parser
(`aeval.adapters.runtimes._claude_code_parse`) that re-parses a recorded run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ipaddress
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from importlib import metadata, util
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from aeval.adapters.runtimes._claude_code_parse import (
    DENIED,
    START,
    STOP,
    WRITE_TOOLS,
    StreamParser,
    message_record,
)
from aeval.adapters.runtimes._cli import guard_launched, in_sandbox
from aeval.adapters.runtimes.keyproxy import Grant, grant
from aeval.errors import KilledFromOutside, RuntimeUnavailable
from aeval.events import (
    EndEvent,
    ErrorEvent,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from aeval.isolation.shell import SIGKILL_STATUSES, stopping
from aeval.isolation.tree import ensure_folder, write_private
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, ExecutionResult

INSTALL = "pip install 'aeval-skills[claude]'"
"""The exact install command (the extra pins claude-agent-sdk>=0.2.180,<0.3)."""
ALLOWED_TOOLS = ["Bash", "Read", "Glob", "Grep", "LS", "Skill", "Agent", "Task", "TodoWrite",
                 "NotebookRead", "BashOutput", "KillShell", "TaskCreate", "TaskGet", "TaskList",
                 "TaskUpdate", "TaskStop", "ToolSearch"]
"""Pre-allowed tools: reading, searching, running commands, loading skills, subagents (whose
own calls meet the same rules), bookkeeping. Names a CLI version lacks are ignored. Not here:
the write tools (see `_permission`) and the web tools (denied: a test run stays offline)."""
CLI_ENV = {
    "CLAUDE_CODE_MAX_RETRIES": "0",  # aeval retries the whole case, from a fresh workspace
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # telemetry, error reports, updates
    "DISABLE_AUTOUPDATER": "1",
}
ANTHROPIC_BASE = "https://api.anthropic.com"
MODEL_TIER_VARS = ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                   "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
                   "CLAUDE_CODE_SUBAGENT_MODEL")
"""The CLI's own model choices (small fast model, tier aliases, subagents), all set to the
run's model."""
ENDPOINTS = ("/v1/messages", "/v1/messages/count_tokens")
"""What the CLI calls on the Anthropic API (the key proxy forwards nothing else)."""
LOOPBACK_KEY = "aeval-loopback-no-key"
KILL_GRACE_S = 5.0
"""Seconds between SIGTERM and SIGKILL when a run hits its timeout."""
BACKSTOP_S = 30.0
"""Extra seconds after the timeout before the stream is cancelled from outside."""
KILLED_FROM_OUTSIDE = "killed_from_outside"  # the CLI ended by a SIGKILL aeval did not send
EVENT_KINDS = {cls.model_fields["kind"].default: cls for cls in
               (MessageEvent, ToolCallEvent, ToolResultEvent, UsageEvent, ErrorEvent, EndEvent)}

LAUNCHER = '''#!{python} -I
"""aeval's launcher for the Claude Code CLI: exec it (inside the attempt's sandbox, when there
is one) with only the variables aeval names, and the key proxy's token in a pipe instead of
the environment."""
import json
import os
import sys

env = dict(os.environ)
argv = json.loads(env.pop("AEVAL_CLAUDE_ARGV"))
keep = set(env.pop("AEVAL_CLAUDE_KEEP", "").split(","))
key = env.pop("AEVAL_CLAUDE_API_KEY", "")
# the CLI's pid (execve keeps it), into aeval's own folder: a new file, never through a link
fd = os.open(env.pop("AEVAL_CLAUDE_PIDFILE"),
             os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
os.write(fd, str(os.getpid()).encode())
os.close(fd)
sdk = {{"CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SDK_READS_SESSION_STATE",
       "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING", "PWD"}}
env = {{k: v for k, v in env.items()
       if k in keep or k in sdk or k.startswith("CLAUDE_AGENT_SDK_")}}
r, w = os.pipe()
os.write(w, key.encode() + b"\\n")
os.close(w)
os.set_inheritable(r, True)
env["CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR"] = str(r)
os.execve(argv[0], [*argv, *sys.argv[1:]], env)
'''


def _package_dir() -> Path | None:
    spec = util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def cli_path() -> str | None:
    """The Claude Code CLI the SDK would start: the bundled one, else ``claude`` on PATH."""
    pkg = _package_dir()
    bundled = pkg / "_bundled" / "claude" if pkg else None
    if bundled is not None and bundled.is_file():
        return str(bundled)
    return shutil.which("claude")


def is_loopback(url: str | None) -> bool:
    host = urlsplit(url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ClaudeCodeRuntime:
    name: ClassVar[str] = "claude-code"
    skills_subdir: ClassVar[str | None] = ".claude/skills"
    needs_model: ClassVar[bool] = True
    runs_steps_verbatim: ClassVar[bool] = False
    config_dirs: ClassVar[tuple[str, ...]] = (".claude",)
    install_hint: ClassVar[str] = INSTALL

    def __init__(self, api_key_env: str = "ANTHROPIC_API_KEY"):
        """``api_key_env``: the variable of aeval's environment holding the model API key."""
        self.api_key_env = api_key_env

    def version(self) -> str | None:
        """``claude-agent-sdk X (Claude Code Y)``, or None when the SDK is not installed."""
        try:
            sdk = metadata.version("claude-agent-sdk")
        except metadata.PackageNotFoundError:
            return None
        pkg = _package_dir()
        marker = pkg / "_bundled" / "claude.version" if pkg else None
        text = marker.read_text().split() if marker is not None and marker.is_file() else []
        cli = text[0] if text else None
        return f"claude-agent-sdk {sdk}" + (f" (Claude Code {cli})" if cli else "")

    def check_available(self) -> None:
        from importlib.util import find_spec

        if find_spec("claude_agent_sdk") is None:  # found, not imported (that takes seconds)
            raise RuntimeUnavailable(f"the claude-code runtime needs claude-agent-sdk: {INSTALL}")
        if cli_path() is None:
            raise RuntimeUnavailable("claude-agent-sdk has no bundled Claude Code CLI for this "
                                     f"platform and `claude` is not on PATH: {INSTALL}")

    # ---- one run -------------------------------------------------------------------------

    def _api_key(self, request: ExecutionRequest) -> str:
        key = os.environ.get(self.api_key_env, "")
        if key:
            return key
        if is_loopback(request.api_base):
            return LOOPBACK_KEY
        raise RuntimeUnavailable(f"the claude-code runtime needs {self.api_key_env} set (or "
                                 "--api-base on loopback)")

    def _cli_env(self, request: ExecutionRequest, argv: list[str], g: Grant,
                 pidfile: Path) -> dict[str, str]:
        """The CLI's whole environment, as the launcher will exec it (AEVAL_* are its input);
        ``argv``: the CLI's command line (inside the sandbox or not), ``g``: the proxy grant,
        ``pidfile``: where the launcher writes the CLI's pid (`_pid_folder`)."""
        env = self._base_env(request, g)
        argv = in_sandbox(request, argv, env, g)
        return {**env, "AEVAL_CLAUDE_KEEP": ",".join(sorted(env)),
                "AEVAL_CLAUDE_ARGV": json.dumps(argv), "AEVAL_CLAUDE_API_KEY": g.token,
                "AEVAL_CLAUDE_PIDFILE": str(pidfile)}

    @staticmethod
    def _base_env(request: ExecutionRequest, g: Grant) -> dict[str, str]:
        home = request.home
        model = (request.model or "").removeprefix("anthropic/")
        # every model tier the CLI picks on its own (side requests, subagents) is the run's
        # model: the key proxy forwards no other
        tiers = {k: model for k in MODEL_TIER_VARS} if model else {}
        return {**request.env, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "TMPDIR": str(home / "tmp"), **CLI_ENV, **tiers,
                "ANTHROPIC_BASE_URL": g.base_url}

    @staticmethod
    def upstream(request: ExecutionRequest) -> str:
        """The Anthropic API the key proxy forwards to. Anthropic base URLs exclude the version
        path; accept one given with it, as the OpenAI-style runtimes need it ("--api-base
        http://host/v1" for all runtimes)."""
        if not request.api_base:
            return ANTHROPIC_BASE
        return request.api_base.rstrip("/").removesuffix("/v1")

    @staticmethod
    def _write_launcher(home: Path) -> Path:
        # beneath the attempt root, never through a symlink the case's setup planted (it
        # would make aeval overwrite a host file): aeval.isolation.tree
        return write_private(home / ".aeval" / "claude-launcher",
                             LAUNCHER.format(python=sys.executable), home.parent, 0o755)

    def _options(self, request: ExecutionRequest, launcher: Path, env: dict[str, str],
                 stderr: list[str]) -> Any:
        from claude_agent_sdk import CanUseToolShadowedWarning, ClaudeAgentOptions

        # allowed_tools shadowing can_use_tool for those tools is intended (the SDK's advice).
        warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)
        rel = request.skill_dir.relative_to(request.workspace).as_posix()
        model = request.model or ""
        return ClaudeAgentOptions(
            cwd=str(request.workspace), cli_path=str(launcher), env=env,
            model=model.removeprefix("anthropic/") or None,
            system_prompt={"type": "preset", "preset": "claude_code",
                           "append": request.system_prompt.replace("{skill_path}", rel)},
            setting_sources=["project"], permission_mode="acceptEdits",
            allowed_tools=list(ALLOWED_TOOLS), can_use_tool=_permission(request.workspace),
            max_turns=request.limits.max_turns, stderr=_tail(stderr),
        )

    def run(self, request: ExecutionRequest, recorder: EventRecorder) -> ExecutionResult:
        self.check_available()
        if not request.model:
            raise RuntimeUnavailable("the claude-code runtime needs --model (a Claude model)")
        cli = cli_path()
        assert cli is not None
        start = time.monotonic()
        for d in (request.home / ".claude", request.home / "tmp"):
            ensure_folder(d, request.home.parent)
        launcher = self._write_launcher(request.home)
        model = request.model.removeprefix("anthropic/")
        with _pid_folder() as pidfile, grant(self.upstream(request), self._api_key(request),
                                              "anthropic", models=[model],
                                              endpoints=ENDPOINTS) as g:
            return self._run(request, recorder, launcher,
                             self._cli_env(request, [cli], g, pidfile), start, pidfile)

    def _run(self, request: ExecutionRequest, recorder: EventRecorder, launcher: Path,
             env: dict[str, str], start: float, pidfile: Path) -> ExecutionResult:
        stderr: list[str] = []
        options = self._options(request, launcher, env, stderr)
        parser = StreamParser(cap=request.limits.output_cap)
        raw = request.raw_log.open("a", encoding="utf-8")

        def take(record: dict[str, Any]) -> None:
            raw.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            raw.flush()
            for fields in parser.feed(record):
                _emit(recorder, fields)

        stop_guard = guard_launched(request, pidfile)  # the disk bound
        exceeded = None
        try:
            take({"_type": START, "_t": 0.0, "prompt": request.prompt,
                  "model": options.model, "workspace": str(request.workspace),
                  "runtime_version": self.version()})
            try:
                stop = _run_sync(_stream(request.prompt, options, start, take, stderr,
                                         request.limits.timeout_s, pidfile),
                                 request.limits.timeout_s + BACKSTOP_S)
            finally:
                exceeded = stop_guard()
            if stop is not None and stop.get("reason") == "cli_not_found":
                raise RuntimeUnavailable(f"{stop['message']}: {INSTALL}")
            if stop is not None and (parser.result is None or stop.get("reason") == "timeout"):
                take({"_type": STOP, "_t": round(time.monotonic() - start, 3), **stop})
            events, outcome = parser.finish()
            for fields in events:
                _emit(recorder, fields)
        finally:
            raw.close()
        if exceeded:  # killed over the disk bound: the case fails, with that reason
            return ExecutionResult(status="failed", final_text=exceeded, usage=outcome.usage,
                                   wall_s=time.monotonic() - start, raw_log=str(request.raw_log),
                                   runtime_version=self.version())
        if stop is not None and stop.get("reason") == KILLED_FROM_OUTSIDE:
            raise KilledFromOutside(stop["message"])
        if outcome.error is not None:
            raise outcome.error
        return ExecutionResult(status=outcome.status, final_text=outcome.final_text,
                               usage=outcome.usage, wall_s=time.monotonic() - start,
                               raw_log=str(request.raw_log), runtime_version=self.version())


async def _stream(prompt: str, options: Any, start: float,
                  take: Callable[[dict[str, Any]], None], stderr: list[str],
                  timeout_s: float, pidfile: Path) -> dict[str, Any] | None:
    """Feed every SDK message to ``take``; returns why the stream stopped early (None when it
    ended normally).

    At the deadline the CLI gets SIGTERM (it stops its tool processes on the way out), then
    SIGKILL if it is still there after `KILL_GRACE_S`; its stream then ends and the SDK closes
    as usual. Cancelling the SDK's generator instead would wait out its own shutdown grace."""
    from claude_agent_sdk import ClaudeSDKError, CLINotFoundError, query

    # the launcher inherits nothing of aeval's environment (the options carry what it needs)
    scrubbed_spawn({"PATH": options.env.get("PATH", "/usr/bin:/bin")})
    loop = asyncio.get_running_loop()
    expired: list[asyncio.TimerHandle] = []

    def expire() -> None:
        _signal(pidfile, signal.SIGTERM)
        expired.append(loop.call_later(KILL_GRACE_S, _signal, pidfile, signal.SIGKILL))

    timer = loop.call_later(timeout_s, expire)
    timeout = {"reason": "timeout", "message": f"timeout after {timeout_s:g}s"}
    try:
        gen = query(prompt=prompt, options=options)
        async with contextlib.aclosing(gen):
            async for message in gen:
                take(message_record(message, time.monotonic() - start))
    except CLINotFoundError as exc:
        return {"reason": "cli_not_found", "message": str(exc)}
    except ClaudeSDKError as exc:  # the CLI's error result (in the records too), or a crash
        if expired:
            return timeout
        if getattr(exc, "exit_code", None) in SIGKILL_STATUSES and not stopping():
            return {"reason": KILLED_FROM_OUTSIDE, "message": (
                f"claude-code was killed by SIGKILL that neither the case nor aeval sent "
                f"(exit {exc.exit_code}; an operator or the host's OOM killer): an "
                "environment error, retried")}
        return {"reason": "exception", "message": f"{type(exc).__name__}: {exc}",
                "stderr": "\n".join(stderr[-20:])}
    finally:
        timer.cancel()
        for handle in expired:
            handle.cancel()
    return timeout if expired else None


_SPAWN_ENV: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "aeval_claude_spawn_env", default=None)
_view_lock = threading.Lock()


class _OsView:
    """The ``os`` module as claude-agent-sdk's transport sees it: the real one, except that
    ``environ`` is the current run's scrubbed environment while one is set (a ContextVar:
    per thread and asyncio task, so concurrent runs and other users of the SDK are not
    affected)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @property
    def environ(self) -> Any:
        scoped = _SPAWN_ENV.get()
        return os.environ if scoped is None else scoped


def scrubbed_spawn(env: dict[str, str]) -> contextvars.Token:
    """From here on in this context, the SDK starts its CLI (aeval's launcher) inheriting
    ``env`` instead of aeval's environment: the SDK merges ``os.environ`` under its options,
    and aeval's holds the provider keys. Returns the token to reset."""
    from claude_agent_sdk._internal.transport import subprocess_cli

    with _view_lock:
        if not isinstance(subprocess_cli.os, _OsView):
            subprocess_cli.os = _OsView()  # type: ignore[assignment]
    return _SPAWN_ENV.set(dict(env))


@contextlib.contextmanager
def _pid_folder() -> Iterator[Path]:
    """Where the launcher leaves the CLI's pid, which aeval signals at the deadline and
    watches for the disk bound: a private folder of aeval's on the host, outside everything
    the attempt is shown (`aeval.adapters.sandbox`). In the attempt's HOME, a tool could
    write another pid there (aeval would signal a process of the host) or its setup could
    plant a link (the launcher would write through it)."""
    folder = Path(tempfile.mkdtemp(prefix="aeval-claude-"))
    try:
        yield folder / "claude.pid"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _signal(pidfile: Path, sig: int) -> None:
    """Signal the CLI the launcher exec'd (its pid is in ``pidfile``), if it still runs."""
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pidfile.read_text().strip()), sig)


def _permission(workspace: Path) -> Callable[..., Any]:
    """can_use_tool: what Claude Code would ask a person, answered as the user of a skill
    would. Claude Code asks even for pre-allowed tools when a call touches its own config
    folder ``.claude/``, where the skill copy lives (a Bash ``sed -i`` on the skill's script,
    an Edit of its SKILL.md): a user watching would approve, so the agent has the same power
    over the skill copy as in real use (and its edits show in Δ). The pre-allowed tools: yes
    (Bash inside aeval's sandbox when there is one); writes inside the workspace: yes; a
    write outside it, the web tools and anything else: no (`DENIED` says so to the agent)."""
    root = workspace.resolve()

    async def decide(tool: str, tool_input: dict[str, Any], context: Any) -> Any:
        from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny

        key = WRITE_TOOLS.get(tool)
        if key is not None:
            target = Path(str(tool_input.get(key) or ""))
            full = (target if target.is_absolute() else root / target).resolve()
            if full.is_relative_to(root):
                return PermissionResultAllow()
            return PermissionResultDeny(
                message=f"{DENIED}: {target} is outside the workspace; write inside {root}")
        if tool in ALLOWED_TOOLS:
            return PermissionResultAllow()
        return PermissionResultDeny(
            message=f"{DENIED}: {tool} is not permitted in this evaluation run (nobody can "
                    "approve it)")

    return decide


def _tail(lines: list[str], keep: int = 200) -> Callable[[str], None]:
    """A stderr callback that keeps the CLI's last lines (for the error message of a crash)."""

    def add(line: str) -> None:
        lines.append(line.rstrip())
        del lines[:-keep]

    return add


def _emit(recorder: EventRecorder, fields: dict[str, Any]) -> None:
    data = dict(fields)
    recorder.emit(EVENT_KINDS[data.pop("kind")], **data)


def _run_sync(coro: Any, timeout_s: float) -> dict[str, Any] | None:
    """Run the stream to its end, in this thread or (when this thread already runs an event
    loop) in a new one. ``timeout_s`` is a backstop: the stream enforces the run's limit."""

    async def bounded() -> dict[str, Any] | None:
        try:
            async with asyncio.timeout(timeout_s):
                return await coro
        except TimeoutError:
            return {"reason": "timeout", "message": f"timeout after {timeout_s:g}s"}

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(bounded())
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(bounded())
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=work, name="aeval-claude-code", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")
