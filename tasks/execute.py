"""Execute: one attempt of a case from a fresh workspace, with Prefect retries that fire only
for TransientError. Every attempt is recorded before its error propagates."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from aeval.adapters import get_runtime
from aeval.tasks.install import install, resolve_credentials, tool_env
from prefect import task
from prefect.cache_policies import NO_CACHE

from aeval.artifacts import AttemptRecord
from aeval.errors import EnvironmentFailure, RuntimeUnavailable, TransientError
from aeval.events import read_events, render_transcript
from aeval.plan import CasePlan, ExecutionRecord
from aeval.prompts import load_prompt
from aeval.redact import Redactor
from aeval.runtime import EventRecorder, Limits, RunRequest
from aeval.store import atomic_write_text, write_model
from aeval.workspace import collect_outputs, diff_skill, render_diff


def retry_on_transient(task, task_run, state) -> bool:
    """Prefect retry_condition_fn: retry only a TransientError (never a skill defect)."""
    try:
        state.result()
    except TransientError:
        return True
    except BaseException:
        return False
    return False


def attempts_dir(plan: CasePlan) -> Path:
    return plan.case_dir / "attempts"


def recorded_attempts(plan: CasePlan) -> list[AttemptRecord]:
    d = attempts_dir(plan)
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*/attempt.json"), key=lambda p: int(p.parent.name)):
        out.append(AttemptRecord.model_validate_json(p.read_text()))
    return out


def _next_attempt(plan: CasePlan) -> int:
    d = attempts_dir(plan)
    nums = [int(p.name) for p in d.iterdir() if p.name.isdigit()] if d.is_dir() else []
    return max(nums, default=0) + 1


def run_attempt(plan: CasePlan) -> ExecutionRecord:
    """Install and execute one attempt. Raises EnvironmentFailure (TransientError: retried)."""
    n = _next_attempt(plan)
    adir = attempts_dir(plan) / str(n)
    adir.mkdir(parents=True, exist_ok=True)
    attempt_root = plan.workspace_root / plan.rel_dir / f"attempt-{n}"
    record = AttemptRecord(number=n, started_at=datetime.now(UTC), outcome="completed",
                           dir=str(adir.relative_to(plan.run_dir)))
    redactor = Redactor()
    ws = None
    try:
        credentials = resolve_credentials(plan)
        redactor = Redactor(credentials)
        runtime = get_runtime(plan.runtime, **plan.runtime_options)
        runtime.check_available()
        if runtime.needs_model and not plan.model:
            raise RuntimeUnavailable(f"runtime {plan.runtime!r} needs a model: pass --model "
                                     "or set AEVAL_MODEL")
        ws = install(plan, attempt_root, runtime.skills_subdir, runtime.config_dirs,
                     credentials, adir / "install.log")
        before = ws.snapshot()
        recorder = EventRecorder(adir / "events.jsonl", redactor)
        request = RunRequest(
            prompt=plan.case.prompt, case_id=plan.case.id, workspace=ws.path, home=ws.home,
            skill_name=plan.skill.name, skill_description=plan.skill.description,
            skill_dir=ws.skill_dir, env=tool_env(plan, ws, credentials),
            steps=plan.case.steps, model=plan.model, api_base=plan.api_base,
            limits=Limits(max_turns=plan.case.max_turns, timeout_s=plan.case.timeout_s,
                          output_cap=plan.output_cap),
            system_prompt=load_prompt("executor"), raw_log=adir / "raw.jsonl",
        )
        try:
            result = runtime.run(request, recorder)
        finally:
            recorder.close()
            raw = adir / "raw.jsonl"
            if raw.is_file() and redactor:
                atomic_write_text(raw, raw.read_text(errors="replace"), redactor)
        changes = diff_skill(plan.skill.path, ws.skill_dir, ws.skill_manifest)
        outputs_dir = plan.case_dir / "outputs"
        if outputs_dir.exists():
            shutil.rmtree(outputs_dir)
        outputs = collect_outputs(ws, before, outputs_dir, redactor)
        events = read_events(adir / "events.jsonl")
        shutil.copyfile(adir / "events.jsonl", plan.case_dir / ".events.jsonl.tmp")
        (plan.case_dir / ".events.jsonl.tmp").replace(plan.case_dir / "events.jsonl")
        atomic_write_text(plan.case_dir / "transcript.md",
                          render_transcript(events, f"{plan.label}: {plan.case.prompt[:80]}"),
                          redactor)
        atomic_write_text(plan.case_dir / "skill.diff", render_diff(changes), redactor)
        after_dir = plan.case_dir / "skill_after"
        if after_dir.exists():
            shutil.rmtree(after_dir)
        for ch in changes:
            if ch.after is not None:
                atomic_write_text(after_dir / ch.path, ch.after, redactor)
    except EnvironmentFailure as exc:
        record.outcome = "transient_error" if isinstance(exc, TransientError) else "error"
        record.error = redactor.text(str(exc))
        record.error_type = type(exc).__name__
        record.ended_at = datetime.now(UTC)
        write_model(adir / "attempt.json", record, redactor)
        if ws is not None and not plan.keep_workspace:
            shutil.rmtree(attempt_root, ignore_errors=True)
        raise
    except BaseException as exc:
        record.outcome, record.error = "error", redactor.text(f"{type(exc).__name__}: {exc}")
        record.error_type = type(exc).__name__
        record.ended_at = datetime.now(UTC)
        write_model(adir / "attempt.json", record, redactor)
        raise
    record.ended_at = datetime.now(UTC)
    write_model(adir / "attempt.json", record, redactor)
    result.raw_log = str((adir / "raw.jsonl").relative_to(plan.run_dir)) if (
        adir / "raw.jsonl").is_file() else None
    return ExecutionRecord(attempts=recorded_attempts(plan), result=result, workspace=ws.path,
                           attempt_root=attempt_root, skill_copy=ws.skill_dir,
                           changes=changes, outputs=outputs,
                           runtime_version=result.runtime_version)


@task(name="execute", task_run_name="execute {plan.label}", cache_policy=NO_CACHE,
      retries=2, retry_delay_seconds=[2, 10], retry_jitter_factor=0.5,
      retry_condition_fn=retry_on_transient)
def execute_case(plan: CasePlan) -> ExecutionRecord:
    """One attempt of one case; Prefect retries it from a fresh workspace on TransientError."""
    return run_attempt(plan)
