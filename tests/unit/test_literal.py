"""The literal runtime: steps verbatim, one tool event each, stop at the first failure."""

from __future__ import annotations

from aeval.adapters import get_runtime
from aeval.events import ToolCallEvent, ToolResultEvent, read_events
from aeval.isolation.redact import Redactor
from aeval.isolation.shell import base_env
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, Limits


def request(tmp_path, steps, timeout=30, env_extra=None):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ExecutionRequest(prompt="p", case_id="c", workspace=ws, home=tmp_path, skill_name="s",
                            skill_description="d", skill_dir=ws, steps=steps,
                            env=base_env(tmp_path, env_extra or {}),
                            limits=Limits(timeout_s=timeout), raw_log=tmp_path / "raw.jsonl")


def run(tmp_path, steps, **kw):
    rec = EventRecorder(tmp_path / "events.jsonl", Redactor(kw.pop("secrets", {})))
    result = get_runtime("literal").run(request(tmp_path, steps, **kw), rec)
    rec.close()
    return result, read_events(tmp_path / "events.jsonl")


def test_all_steps_succeed(tmp_path):
    steps = ["mkdir -p outputs", "echo hi > outputs/a.txt", "cat outputs/a.txt"]
    result, events = run(tmp_path, steps)
    assert result.status == "completed"
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [c.input["command"] for c in calls] == ["mkdir -p outputs", "echo hi > outputs/a.txt",
                                                   "cat outputs/a.txt"]
    assert all(r.ok and r.exit_code == 0 for r in results)
    assert results[-1].output.strip() == "hi"
    assert (tmp_path / "ws" / "outputs" / "a.txt").read_text() == "hi\n"
    assert [e.seq for e in events] == list(range(len(events)))


def test_stops_at_first_failing_step_and_records_it(tmp_path):
    result, events = run(tmp_path, ["echo one", "echo boom >&2; exit 7", "echo never"])
    assert result.status == "failed" and "step 2 of 3 exited 7" in result.final_text
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert len(results) == 2
    assert results[1].ok is False and results[1].exit_code == 7 and "boom" in results[1].output


def test_pipefail_and_errexit_in_multiline_steps(tmp_path):
    result, _ = run(tmp_path, ["false | true"])
    assert result.status == "failed"
    result, _ = run(tmp_path, ["false\necho after"])
    assert result.status == "failed"


def test_timeout_kills_the_step(tmp_path):
    result, events = run(tmp_path, ["sleep 20"], timeout=0.5)
    assert result.status == "timeout"
    r = next(e for e in events if isinstance(e, ToolResultEvent))
    assert r.ok is False and r.exit_code is None and "timeout" in r.output
    assert result.wall_s < 5


def test_output_is_capped(tmp_path):
    _, events = run(tmp_path, ["python3 -c \"print('x' * 100000)\""])
    r = next(e for e in events if isinstance(e, ToolResultEvent))
    assert r.truncated and len(r.output) < 20_000


def test_no_steps_is_untested_not_an_environment_error(tmp_path):
    result, events = run(tmp_path, [])
    assert result.status == "untested" and "no steps" in result.final_text
    assert events[-1].status == "untested"


def test_secret_values_are_redacted_from_events(tmp_path):
    _, events = run(tmp_path, ['echo "token is $TOK"'], env_extra={"TOK": "canary-12345"},
                    secrets={"TOK": "canary-12345"})
    raw = (tmp_path / "events.jsonl").read_text()
    assert "canary-12345" not in raw and "[REDACTED:TOK]" in raw
    assert events[-2].output.strip() == "token is [REDACTED:TOK]"
