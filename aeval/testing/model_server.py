"""A scripted model server on loopback: OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, answered from scripts instead of a model.

    with ScriptedModelServer([Script(name="hello", match="greet", turns=[
        Turn(tool_calls=[ToolCall(name="bash", arguments={"command": "echo hi"})]),
        Turn(text="I said hi."),
    ])]) as srv:
        client = openai.OpenAI(base_url=srv.base_url_openai, api_key="x")
        ...
        srv.requests_for("hello")

Routes: ``POST /v1/chat/completions``, ``POST /v1/responses``, ``POST /v1/messages``,
``POST /v1/messages/count_tokens``, ``GET /v1/models[/ID]``, ``GET /_aeval/requests``
(the recorded requests as JSON). Anything else answers 404. Paths are exact: a client that
forgets ``/v1`` fails here as it would against the real provider.

Which answer a request gets depends on the request alone (see `_script.py`); the only state
is the fault counters and, for the simulated prompt cache, each script's previous prompt.

Run it for a real agent: ``python -m aeval.testing.model_server SCRIPT.json --port 8123``
(several files: their scripts in order). A scripted tool call the request does not offer a
tool for is warned about on stderr, always: the script was written for another runtime.
Stdlib only (plus pydantic for the scripts): no model SDK is imported.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import Any

from aeval.testing._script import Script, ScriptFile, ToolCall, Turn, load_script_file
from aeval.testing._server import RecordedRequest, ScriptedModelServer

__all__ = [
    "RecordedRequest",
    "Script",
    "ScriptFile",
    "ScriptedModelServer",
    "ToolCall",
    "Turn",
    "load_script_file",
    "main",
]


def main(argv: list[str] | None = None) -> int:
    """``python -m aeval.testing.model_server SCRIPT... [--host H] [--port P] [--quiet]``."""
    parser = argparse.ArgumentParser(
        prog="python -m aeval.testing.model_server",
        description="Serve scripted model answers (OpenAI chat + responses, Anthropic "
        "messages) until interrupted. Prints the URL on the first line of stdout.",
    )
    parser.add_argument("script", type=Path, nargs="+",
                        help="JSON or YAML script file(s); several: their scripts in order "
                        "(e.g. one per runtime, each picked by its `model` regex)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--quiet", action="store_true", help="do not log requests to stderr")
    args = parser.parse_args(argv)
    try:
        server = ScriptedModelServer.from_file(
            *args.script, host=args.host, port=args.port, verbose=not args.quiet
        )
    except (OSError, ValueError) as exc:
        print(f"error: {', '.join(map(str, args.script))}: {exc}", file=sys.stderr)
        return 2

    def _terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    with server:
        print(server.url, flush=True)
        print(
            f"OpenAI base URL {server.base_url_openai}; Anthropic base URL "
            f"{server.base_url_anthropic}; requests at {server.url}/_aeval/requests",
            file=sys.stderr,
            flush=True,
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
