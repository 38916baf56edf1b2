"""The scripted model server, driven by the real SDKs (openai, anthropic, litellm) on loopback,
so every wire format it speaks is proven by the clients the runtimes use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anthropic
import openai
import pytest

from aeval.testing import Script, ScriptedModelServer, ToolCall, Turn, load_script_file

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

WEATHER_ARGS = {"city": "Paris", "units": "metric", "days": [1, 2], "note": 'say "hi"\n'}
SCRIPTS = [
    Script(
        name="weather",
        match=r"weather in (Paris|Oslo)",
        turns=[
            Turn(
                text="Let me check.",
                tool_calls=[ToolCall(name="get_weather", arguments=WEATHER_ARGS)],
            ),
            Turn(text="It is sunny in Paris."),
        ],
        final="Nothing more to say.",
    ),
    Script(name="greeting", match=r"(?i)say hello", turns=[Turn(text="Hello there, friend!")]),
    Script(name="flaky", match="flaky", turns=[Turn(fault=429, fault_times=2, text="Recovered.")]),
    Script(name="busy", match="overloaded", turns=[Turn(fault=529, fault_times=9, text="-")]),
    Script(name="hangup", match="hang up", turns=[Turn(fault="disconnect", text="Back.")]),
]
OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
SECRET = "sk-ant-not-a-real-key"
RESPONSES_TOOL = {"type": "function", **OPENAI_TOOL["function"]}
ANTHROPIC_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture
def srv():
    with ScriptedModelServer(SCRIPTS) as server:
        yield server


def oai(srv: ScriptedModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url_openai, api_key="x", timeout=5, max_retries=0)


def claude(srv: ScriptedModelServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=srv.base_url_anthropic, api_key=SECRET, timeout=5, max_retries=0
    )


def user(text: str) -> dict:
    return {"role": "user", "content": text}


# ---- OpenAI chat completions ------------------------------------------------------------------


def test_chat_text_answer(srv):
    reply = oai(srv).chat.completions.create(
        model="scripted", messages=[{"role": "system", "content": "Be nice."}, user("Say hello")]
    )
    assert reply.choices[0].message.content == "Hello there, friend!"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


def test_chat_stream_reassembles_tool_call_and_reports_usage(srv):
    stream = oai(srv).chat.completions.create(
        model="scripted",
        messages=[user("What is the weather in Paris?")],
        tools=[OPENAI_TOOL],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, calls, finish, usage = "", {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            assert chunk.choices == []
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for d in choice.delta.tool_calls or []:
                call = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                call["id"] = d.id or call["id"]
                call["name"] += (d.function.name or "") if d.function else ""
                call["arguments"] += (d.function.arguments or "") if d.function else ""
    assert text == "Let me check."
    assert finish == "tool_calls"
    assert list(calls) == [0]
    assert calls[0]["name"] == "get_weather"
    assert json.loads(calls[0]["arguments"]) == WEATHER_ARGS
    assert calls[0]["id"] == "call_weather_0_0"
    assert usage is not None and usage.completion_tokens >= 1


def test_chat_history_selects_turn_and_second_request_hits_the_cache(srv):
    client = oai(srv)
    history = [{"role": "system", "content": "You are terse."}, user("weather in Paris?")]
    first = client.chat.completions.create(model="scripted", messages=history, tools=[OPENAI_TOOL])
    call = first.choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == WEATHER_ARGS
    assert first.usage.prompt_tokens_details.cached_tokens == 0

    history += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 24C"},
    ]
    second = client.chat.completions.create(model="scripted", messages=history, tools=[OPENAI_TOOL])
    assert second.choices[0].message.content == "It is sunny in Paris."
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert 0 < cached < second.usage.prompt_tokens  # OpenAI's total includes the cached part

    retry = client.chat.completions.create(model="scripted", messages=history)
    assert retry.choices[0].message.content == "It is sunny in Paris."  # same history, same turn
    history += [{"role": "assistant", "content": "It is sunny in Paris."}, user("And tomorrow?")]
    past_end = client.chat.completions.create(model="scripted", messages=history)
    assert past_end.choices[0].message.content == "Nothing more to say."
    assert [r.turn for r in srv.requests_for("weather")] == [0, 1, 1, 2]


def test_script_selected_by_regex_else_default():
    scripts = [*SCRIPTS, Script(name="late", match="Paris", turns=[Turn(text="never chosen")])]
    with ScriptedModelServer(scripts, default=Turn(text="I have no script for that.")) as srv:
        client = oai(srv)

        def ask(text: str) -> str | None:
            reply = client.chat.completions.create(model="scripted", messages=[user(text)])
            return reply.choices[0].message.content

        assert ask("weather in Oslo") == "Let me check."  # first match wins over "late"
        assert ask("please SAY HELLO") == "Hello there, friend!"
        assert ask("what is 2+2?") == "I have no script for that."
        assert [r.script for r in srv.requests] == ["weather", "greeting", None]


def test_script_selected_by_model_too():
    """Two graders on one server: the same prompt gets each model's own script."""
    scripts = [Script(name="strict", match="Grade", model="^strict$", turns=[Turn(text="F")]),
               Script(name="any", match="Grade", turns=[Turn(text="P")])]
    with ScriptedModelServer(scripts) as srv:
        client = oai(srv)
        answers = [client.chat.completions.create(model=m, messages=[user("Grade it")])
                   .choices[0].message.content for m in ("strict", "lenient", "strict-2")]
        # claude.messages go through the same selection
        msg = claude(srv).messages.create(model="strict", max_tokens=10,
                                          messages=[user("Grade it")])
    assert answers == ["F", "P", "P"] and msg.content[0].text == "F"
    with pytest.raises(ValueError, match="invalid regex"):
        Script(name="bad", match="x", model="(")


def test_concurrent_conversations_stay_independent(srv):
    client = oai(srv)

    def converse(_: int) -> list[str | None]:
        history = [user("weather in Oslo")]
        first = client.chat.completions.create(model="scripted", messages=history)
        call = first.choices[0].message.tool_calls[0]
        history += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
        ]
        second = client.chat.completions.create(model="scripted", messages=history)
        return [call.function.name, second.choices[0].message.content]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(converse, range(16)))
    assert results == [["get_weather", "It is sunny in Paris."]] * 16
    assert len(srv.requests_for("weather")) == 32


def test_models_list_and_unknown_path(srv):
    assert "scripted" in [m.id for m in oai(srv).models.list()]
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(srv.url + "/chat/completions", data=b"{}", timeout=5)
    assert info.value.code == 404
    assert json.loads(info.value.read())["error"]["type"] == "not_found_error"


# ---- OpenAI Responses API (Codex) ----------------------------------------------------------------


def test_responses_stream_function_call_then_history(srv):
    client = oai(srv)
    items: list = [{"role": "user", "content": "weather in Oslo please"}]
    with client.responses.stream(
        model="scripted", instructions="Use tools.", input=items, tools=[RESPONSES_TOOL]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert "response.output_text.delta" in kinds
    assert final.output_text == "Let me check."
    call = next(item for item in final.output if item.type == "function_call")
    assert call.name == "get_weather"
    assert json.loads(call.arguments) == WEATHER_ARGS
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0
    assert final.usage.total_tokens == final.usage.input_tokens + final.usage.output_tokens

    # As Codex does: replay the output items, then the tool output, without previous_response_id.
    items += [item.model_dump(exclude_none=True) for item in final.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny"})
    second = client.responses.create(model="scripted", instructions="Use tools.", input=items)
    assert second.output_text == "It is sunny in Paris."
    assert 0 < second.usage.input_tokens_details.cached_tokens < second.usage.input_tokens
    assert [r.turn for r in srv.requests_for("weather")] == [0, 1]


def test_responses_raw_sse_events_are_named_and_numbered(srv):
    body = json.dumps({"model": "scripted", "input": "weather in Paris", "stream": True}).encode()
    request = urllib.request.Request(
        srv.base_url_openai + "/responses", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as reply:
        assert reply.headers["content-type"].startswith("text/event-stream")
        blocks = reply.read().decode().strip().split("\n\n")
    events = [dict(line.split(": ", 1) for line in block.splitlines()) for block in blocks]
    data = [json.loads(e["data"]) for e in events]
    assert all(e["event"] == d["type"] for e, d in zip(events, data, strict=True))
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    done = next(
        d["item"]
        for d in data
        if d["type"] == "response.output_item.done" and d["item"]["type"] == "function_call"
    )
    assert done["status"] == "completed" and done["call_id"] == "call_weather_0_0"


def test_responses_counts_runs_of_assistant_items_as_turns(srv):
    items = [
        {"type": "message", "role": "developer", "content": "weather in Paris"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "function_call_output", "call_id": "c2", "output": "sunny"},
    ]
    reply = oai(srv).responses.create(model="scripted", input=items)
    assert reply.output_text == "It is sunny in Paris."  # one run of model items: turn 1
    items += [
        {"role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
        {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]
    assert oai(srv).responses.create(model="scripted", input=items).output_text == (
        "Nothing more to say."
    )


# ---- Anthropic Messages (Claude Code) ------------------------------------------------------------


def test_anthropic_tool_use_then_cache_read_excluded_from_input(srv):
    client = claude(srv)
    messages: list = [user("weather in Paris, please")]
    first = client.messages.create(
        model="claude-x",
        max_tokens=100,
        system="Use tools.",
        messages=messages,
        tools=[ANTHROPIC_TOOL],
    )
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["text", "tool_use"]
    tool = first.content[1]
    assert tool.name == "get_weather" and tool.input == WEATHER_ARGS
    assert tool.id == "toolu_weather_0_0"

    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": "sunny"}],
        },
    ]
    second = client.messages.create(
        model="claude-x", max_tokens=100, system="Use tools.", messages=messages
    )
    assert second.content[0].text == "It is sunny in Paris."
    assert second.stop_reason == "end_turn"
    usage = second.usage
    recorded = srv.requests_for("weather")[-1].usage
    assert usage.cache_read_input_tokens == recorded["cached_input_tokens"] > 0
    assert usage.input_tokens == recorded["input_tokens"]  # cache reads NOT included


def test_anthropic_stream_text_and_final_message(srv):
    with claude(srv).messages.stream(
        model="claude-x", max_tokens=100, messages=[user("Say hello")]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Hello there, friend!"
    assert final.content[0].text == text
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens >= 1


def test_anthropic_stream_tool_use_input(srv):
    with claude(srv).messages.stream(
        model="claude-x",
        max_tokens=100,
        messages=[user("weather in Oslo")],
        tools=[ANTHROPIC_TOOL],
    ) as stream:
        final = stream.get_final_message()
    assert final.content[-1].type == "tool_use" and final.content[-1].input == WEATHER_ARGS


def test_anthropic_count_tokens_and_beta_headers(srv):
    client = claude(srv)
    count = client.messages.count_tokens(
        model="claude-x",
        messages=[user("weather in Paris " * 20)],
        extra_headers={"anthropic-beta": "token-counting-2024-11-01"},
    )
    assert count.input_tokens > 50
    record = srv.requests[-1]
    assert record.wire == "count_tokens" and record.script == "weather" and record.turn is None
    assert record.headers["anthropic-beta"] == "token-counting-2024-11-01"
    assert SECRET not in json.dumps(record.headers)  # credentials are never recorded
    assert srv.requests_for("weather") == []  # side requests are not conversation turns

    beta = client.beta.messages.count_tokens(model="claude-x", messages=[user("hi")])
    assert beta.input_tokens >= 1  # Claude Code's `?beta=true` query string is accepted
    assert srv.requests[-1].path == "/v1/messages/count_tokens"


# ---- litellm ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download
    import litellm

    return litellm


def test_litellm_openai_tool_call(srv, litellm):
    reply = litellm.completion(
        model="openai/scripted",
        api_base=srv.base_url_openai,
        api_key="x",
        messages=[user("weather in Paris")],
        tools=[OPENAI_TOOL],
        timeout=5,
        num_retries=0,
    )
    call = reply.choices[0].message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == WEATHER_ARGS
    assert srv.requests[-1].path == "/v1/chat/completions"


def test_litellm_anthropic(srv, litellm):
    reply = litellm.completion(
        model="anthropic/claude-x",
        api_base=srv.url,
        api_key="x",
        messages=[user("Say hello")],
        timeout=5,
        num_retries=0,
        max_tokens=50,
    )
    assert reply.choices[0].message.content == "Hello there, friend!"
    assert srv.requests[-1].path == "/v1/messages"


# ---- faults ------------------------------------------------------------------------------------


def test_429_twice_then_success(srv):
    client = oai(srv)
    for _ in range(2):
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="scripted", messages=[user("flaky job")])
        assert info.value.response.headers["retry-after"] == "0"
    reply = client.chat.completions.create(model="scripted", messages=[user("flaky job")])
    assert reply.choices[0].message.content == "Recovered."
    assert [r.fault for r in srv.requests_for("flaky")] == [True, True, False]
    assert srv.requests_for("flaky")[0].fault_kind == 429


def test_429_is_retried_by_the_sdk():
    with ScriptedModelServer(SCRIPTS) as srv:
        client = openai.OpenAI(base_url=srv.base_url_openai, api_key="x", timeout=5, max_retries=2)
        started = time.monotonic()
        reply = client.chat.completions.create(model="scripted", messages=[user("flaky")])
        assert reply.choices[0].message.content == "Recovered."
        assert time.monotonic() - started < 3  # retry-after-ms: 1 keeps SDK retries fast
        assert len(srv.requests) == 3


def test_529_overloaded_with_anthropic(srv):
    with pytest.raises(anthropic.InternalServerError) as info:
        claude(srv).messages.create(
            model="claude-x", max_tokens=10, messages=[user("you look overloaded")]
        )
    assert info.value.status_code == 529
    assert info.value.body["error"]["type"] == "overloaded_error"
    assert srv.requests_for("busy")[0].fault


def test_disconnect_raises_connection_error_then_recovers(srv):
    client = oai(srv)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="scripted", messages=[user("hang up now")])
    reply = client.chat.completions.create(model="scripted", messages=[user("hang up now")])
    assert reply.choices[0].message.content == "Back."
    assert [r.fault_kind for r in srv.requests_for("hangup")] == ["disconnect", None]


def test_delay_and_timeout_faults():
    scripts = [
        Script(name="slow", match="slow", turns=[Turn(text="late", delay_s=1.0)]),
        Script(name="stuck", match="stuck", turns=[Turn(fault="timeout", delay_s=0.2)]),
    ]
    with ScriptedModelServer(scripts) as srv:
        client = openai.OpenAI(
            base_url=srv.base_url_openai, api_key="x", timeout=0.3, max_retries=0
        )
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="scripted", messages=[user("slow")])
        with pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(model="scripted", messages=[user("stuck")])
        assert srv.requests_for("stuck")[0].fault_kind == "timeout"


def test_stop_does_not_hang_on_a_pending_timeout_fault():
    scripts = [Script(name="stuck", match="stuck", turns=[Turn(fault="timeout")])]  # 30 s
    srv = ScriptedModelServer(scripts).start()
    client = openai.OpenAI(base_url=srv.base_url_openai, api_key="x", timeout=20, max_retries=0)
    errors: list[Exception] = []

    def call() -> None:
        try:
            client.chat.completions.create(model="scripted", messages=[user("stuck")])
        except Exception as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    while not srv.requests:
        time.sleep(0.01)
    started = time.monotonic()
    srv.stop()
    caller.join(timeout=5)
    assert time.monotonic() - started < 3
    assert not caller.is_alive() and isinstance(errors[0], openai.APIConnectionError)


# ---- recording and the command line -------------------------------------------------------------


def test_recorded_requests_over_http_and_clear(srv):
    oai(srv).chat.completions.create(model="scripted", messages=[user("Say hello")])
    with urllib.request.urlopen(srv.url + "/_aeval/requests", timeout=5) as reply:
        records = json.loads(reply.read())
    assert len(records) == 1
    assert records[0]["path"] == "/v1/chat/completions"
    assert records[0]["body"]["messages"][0]["content"] == "Say hello"
    assert records[0]["headers"]["authorization"] == "Bearer ***"
    assert records[0]["body_bytes"] > 0 and records[0]["usage"]["output_tokens"] >= 1
    srv.clear()
    assert srv.requests == []


def test_public_exports_and_no_sdk_import():
    import aeval.testing
    import aeval.testing.model_server as module

    for name in aeval.testing.__all__:
        assert getattr(module, name) is getattr(aeval.testing, name)
    probe = (
        "import sys, aeval.testing.model_server; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'openai', 'anthropic', 'litellm', 'prefect', 'httpx'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.strip() == "[]"


def test_command_line_serves_a_yaml_script(tmp_path: Path):
    script = tmp_path / "script.yaml"
    script.write_text(
        "scripts:\n"
        "  - name: cli\n"
        "    match: ping\n"
        "    turns:\n"
        "      - text: pong\n"
        "default:\n"
        "  text: nothing scripted\n"
    )
    assert load_script_file(script).scripts[0].turns[0].text == "pong"
    proc = subprocess.Popen(
        [sys.executable, "-m", "aeval.testing.model_server", str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=20)
        assert lines and lines[0].startswith("http://127.0.0.1:"), proc.stderr
        url = lines[0].strip()
        client = openai.OpenAI(base_url=url + "/v1", api_key="x", timeout=5, max_retries=0)
        reply = client.chat.completions.create(model="scripted", messages=[user("ping")])
        assert reply.choices[0].message.content == "pong"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    assert proc.returncode == 0


def test_a_scripted_call_of_a_tool_the_client_does_not_offer_warns_loudly(capsys):
    """A script written for another runtime: it calls `bash` where the client offers `Bash`.
    The server answers as scripted (the run shows what the agent did), records the unknown
    tool, and says so on stderr even when not verbose; a request that offers no tools at all
    (a title request) is not warned about."""
    script = Script(name="for-builtin", match="train", turns=[
        Turn(tool_calls=[ToolCall(name="bash", arguments={"command": "ls"}),
                         ToolCall(name="Read", arguments={"file_path": "x"})])])
    bash_tool = {"name": "Bash", "description": "run", "input_schema": {"type": "object"}}
    read_tool = {"name": "Read", "description": "read", "input_schema": {"type": "object"}}
    with ScriptedModelServer([script]) as srv:
        reply = claude(srv).messages.create(model="claude-x", max_tokens=50,
                                            messages=[user("train it")],
                                            tools=[bash_tool, read_tool])
        oai(srv).chat.completions.create(model="m", messages=[user("train it")])
        offered, bare = srv.requests_for("for-builtin")
    assert [b.name for b in reply.content if b.type == "tool_use"] == ["bash", "Read"]
    assert offered.unknown_tools == ["bash"] and bare.unknown_tools == []
    err = capsys.readouterr().err
    assert err.count("[aeval-model-server] WARNING") == 1
    assert "script 'for-builtin' turn 0 calls bash, which this client does not offer " \
           "(it offers: Bash, Read)" in err


def test_scripts_of_several_files_are_served_in_order_and_names_stay_unique(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.yaml"
    a.write_text(json.dumps({"scripts": [{"name": "codex", "match": "go", "model": "codex",
                                          "turns": [{"text": "from a"}]}],
                             "default": {"text": "a's default"}}))
    b.write_text("scripts:\n  - name: builtin\n    match: go\n    turns:\n"
                 "      - text: from b\n")
    with ScriptedModelServer.from_file(a, b) as srv:
        client = oai(srv)
        def ask(model: str, text: str) -> str:
            return client.chat.completions.create(
                model=model, messages=[user(text)]).choices[0].message.content
        assert ask("scripted-codex", "go") == "from a"
        assert ask("scripted-builtin", "go") == "from b"
        assert ask("m", "nothing matches") == "a's default"
    b.write_text("scripts:\n  - name: codex\n    match: x\n")
    with pytest.raises(ValueError, match="duplicate script names"):
        ScriptedModelServer.from_file(a, b)
