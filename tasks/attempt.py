"""One attempt of a case, from a fresh workspace to its recorded end.

`Attempt` owns the attempt's workspace: it creates it (skill COPY, case files), installs
(setup, preflight), takes the skill manifest AFTER setup and preflight (what they write into
$SKILL_DIR is the environment, not an edit), runs the runtime, and then ALWAYS computes Δ,
also when the runtime raised: an agent that edited the skill and then crashed the attempt
still shows the edit in ``attempt.json``. A completed attempt keeps its workspace until it is
graded (``cleanup()``); a failed one is removed at once.

    <case>/attempts/<n>/attempt.json  events.jsonl  raw.jsonl  install.log
    <case>/events.jsonl transcript.md skill.diff skill_after/ outputs/   (completed attempt)
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from aeval.adapters import get_runtime
from aeval.adapters.watch import CHANGES, SkillWatch, Touch
from aeval.tasks.install import install, resolve_credentials, tool_env
from aeval.tasks.sandboxing import attempt_sandbox

from aeval.artifacts import AttemptRecord
from aeval.attribution import seen_at
from aeval.coverage import ResourceUse, exercised, resource_use, uses_from_events
from aeval.doctest import doc_blocks
from aeval.errors import EnvironmentFailure, RuntimeUnavailable, TransientError
from aeval.events import read_events, render_transcript
from aeval.layout import RunLayout
from aeval.plan import CasePlan, ExecutionRecord
from aeval.prompts import load_prompt
from aeval.redact import Redactor
from aeval.runtime import EventRecorder, Limits, RunRequest, RunResult
from aeval.sandbox import Sandbox
from aeval.store import atomic_write_bytes, atomic_write_text, read_model, write_model
from aeval.workspace import (
    FileChange,
    Workspace,
    add_skills,
    collect_outputs,
    diff_skill,
    manifest,
    render_diff,
    restored_changes,
)


def recorded_attempts(case_dir: Path) -> list[AttemptRecord]:
    """Every recorded attempt of a case, in order."""
    d = RunLayout.attempts_dir(case_dir)
    if not d.is_dir():
        return []
    found = [p for p in d.glob("*/attempt.json") if p.parent.name.isdigit()]
    return [read_model(p, AttemptRecord) for p in sorted(found, key=lambda p: int(p.parent.name))]


def next_attempt_number(case_dir: Path) -> int:
    d = RunLayout.attempts_dir(case_dir)
    nums = [int(p.name) for p in d.iterdir() if p.name.isdigit()] if d.is_dir() else []
    return max(nums, default=0) + 1


class Attempt:
    """One attempt of ``plan``: ``execute()`` returns the ExecutionRecord to grade, or raises
    the EnvironmentFailure that ended it (a TransientError is retried by the caller)."""

    def __init__(self, plan: CasePlan, case_dir: Path | None = None):
        """``case_dir``: where the attempt's files go (default: the plan's case folder; the
        probe uses a folder of its own inside it)."""
        self.plan = plan
        self.case_dir = case_dir or plan.case_dir
        self.number = next_attempt_number(self.case_dir)
        self.dir = RunLayout.attempt_dir(self.case_dir, self.number)
        rel = self.case_dir.relative_to(plan.run_dir)
        self.root = plan.workspace_root / rel / f"attempt-{self.number}"
        self.record = AttemptRecord(number=self.number, started_at=datetime.now(UTC),
                                    outcome="completed",
                                    dir=str(self.dir.relative_to(plan.run_dir)))
        self.redactor = Redactor()
        self.ws: Workspace | None = None
        self.baseline: dict | None = None
        self.sandbox: Sandbox | None = None
        self.watch: SkillWatch | None = None
        self.clock_start: float | None = None
        self.changes: list[FileChange] = []

    # ---- the lifecycle -------------------------------------------------------------------

    def execute(self) -> ExecutionRecord:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            credentials = resolve_credentials(self.plan)
            self.redactor = Redactor(credentials)
            runtime = get_runtime(self.plan.runtime, **self.plan.runtime_options)
            runtime.check_available()
            if runtime.needs_model and not self.plan.model:
                raise RuntimeUnavailable(f"runtime {self.plan.runtime!r} needs a model: pass "
                                         "--model or set AEVAL_MODEL")
            self.sandbox = attempt_sandbox(self.plan, self.root)
            self.ws = install(self.plan, self.root, runtime.skills_subdir, runtime.config_dirs,
                              credentials, self.dir / "install.log", self.sandbox)
            add_skills(self.ws, self.plan.distractors)
            self.baseline = manifest(self.ws.skill_dir)  # after setup and preflight
            before = self.ws.snapshot()
            self.watch = SkillWatch(self.ws.skill_dir).start()
            try:
                result = self._run(runtime, credentials)
            finally:
                self.changes = self._delta()
            outputs = self._publish(before)
        except BaseException as exc:
            self._fail(exc)
            raise
        self.record.ended_at = datetime.now(UTC)
        self._write_record()
        assert self.ws is not None
        return ExecutionRecord(
            attempts=recorded_attempts(self.case_dir), result=result,
            workspace=self.ws.path, home=self.ws.home, attempt_root=self.root,
            skill_copy=self.ws.skill_dir, changes=self.changes, outputs=outputs,
            runtime_version=result.runtime_version)

    def _run(self, runtime, credentials: dict[str, str]) -> RunResult:
        plan, ws = self.plan, self.ws
        assert ws is not None
        recorder = EventRecorder(self.dir / "events.jsonl", self.redactor)
        self.clock_start = recorder.clock_start
        raw = self.dir / "raw.jsonl"
        request = RunRequest(
            prompt=plan.case.prompt, case_id=plan.case.id, epoch=plan.epoch, workspace=ws.path,
            home=ws.home,
            skill_name=plan.skill.name, skill_key=plan.skill_key,
            skill_description=plan.skill.description,
            skill_dir=ws.skill_dir, skill_installed=plan.install_skill,
            env=tool_env(plan, ws, credentials), steps=plan.case.steps,
            doc_test=plan.case.doc_test, host_tools=plan.case.host_tools,
            doc_blocks=doc_blocks(plan.skill.fences(), plan.case.steps)
            if plan.case.doc_test else [],
            model=plan.model, api_base=plan.api_base,
            limits=Limits(max_turns=plan.case.max_turns, timeout_s=plan.case.timeout_s,
                          output_cap=plan.output_cap),
            system_prompt=load_prompt(plan.executor_prompt if plan.install_skill
                                      else "executor_no_skill"),
            raw_log=raw, sandbox=self.sandbox)
        try:
            result = runtime.run(request, recorder)
        finally:
            recorder.close()
            if raw.is_file() and self.redactor:
                atomic_write_text(raw, raw.read_text(errors="replace"), self.redactor)
        if raw.is_file():
            result.raw_log = str(raw.relative_to(plan.run_dir))
        return result

    def _delta(self) -> list[FileChange]:
        """Δ against the manifest taken after install ([] when the install did not finish),
        plus what the watch saw changed and put back during the run."""
        if self.ws is None or self.baseline is None:
            return []
        # stopped first: reading the copy for Δ would show as uses of every file
        touches = self.watch.stop() if self.watch is not None else []
        delta = diff_skill(self.plan.skill.path, self.ws.skill_dir, self.baseline)
        t0 = self.clock_start if self.clock_start is not None else 0.0
        seen = [(t.path, t.what, t.at - t0) for t in touches
                if t.what in CHANGES]  # opens are not edits
        restored = restored_changes(self.baseline, manifest(self.ws.skill_dir), seen)
        delta = seen_at(delta, seen)  # when each change happened: ties it to its tool call
        try:
            self.record.resources = self._resources(touches)
        except (OSError, ValueError):  # coverage is a by-product: it never costs Δ
            self.record.resources = None
        return delta + restored

    def _resources(self, touches: list[Touch]) -> ResourceUse | None:
        """What the attempt read, executed and wrote of the shipped skill files."""
        assert self.ws is not None and self.baseline is not None
        events_file = self.dir / "events.jsonl"
        if not events_file.is_file():
            return None
        events = read_events(events_file)
        # the files the skill ships: regular ones, and symlinks to a file (a reference read
        # through its link counts for the link; the watch sees the file it points to)
        files = [p for p, v in self.baseline.items() if v.startswith("file ") or (
            v.startswith("symlink ") and (self.ws.skill_dir / p).is_file())]
        watched = self.watch is not None and self.watch.problem is None
        literal = self.plan.runtime == "literal"
        cwd = self.ws.skill_dir if literal and self.plan.case.doc_test else self.ws.path
        t0 = self.clock_start if self.clock_start is not None else 0.0
        evidence = exercised(events, self.ws.path, self.ws.skill_dir, files,
                             [(t.path, t.what, t.at - t0) for t in touches], cwd=cwd,
                             loading_counts=not literal)
        return resource_use(uses_from_events(events, self.ws.path, self.ws.skill_dir, cwd),
                            [(t.path, t.what) for t in touches], files, watched=watched,
                            evidence=evidence)

    def _publish(self, before: dict) -> list:
        """The completed attempt's files at the case level: events, transcript, Δ, outputs."""
        plan, ws, red = self.plan, self.ws, self.redactor
        assert ws is not None
        case_dir = self.case_dir
        outputs_dir = case_dir / "outputs"
        if outputs_dir.exists():
            shutil.rmtree(outputs_dir)
        outputs = collect_outputs(ws, before, outputs_dir, red)
        events_file = self.dir / "events.jsonl"
        atomic_write_bytes(case_dir / "events.jsonl", events_file.read_bytes())
        atomic_write_text(case_dir / "transcript.md", render_transcript(
            read_events(events_file), f"{plan.label}: {plan.case.prompt[:80]}"), red)
        atomic_write_text(case_dir / "skill.diff", render_diff(self.changes), red)
        after_dir = case_dir / "skill_after"
        if after_dir.exists():
            shutil.rmtree(after_dir)
        for ch in self.changes:
            if ch.after is not None:
                atomic_write_text(after_dir / ch.path, ch.after, red)
        return outputs

    def _fail(self, exc: BaseException) -> None:
        """Record the attempt that raised (with its Δ) and remove its workspace."""
        if isinstance(exc, EnvironmentFailure):
            self.record.outcome = "transient_error" if isinstance(exc, TransientError) \
                else "error"
            self.record.error = self.redactor.text(str(exc))
        else:
            self.record.outcome = "error"
            self.record.error = self.redactor.text(f"{type(exc).__name__}: {exc}")
        self.record.error_type = type(exc).__name__
        self.record.ended_at = datetime.now(UTC)
        self._write_record()
        if not self.plan.keep_workspace:
            self.cleanup()

    def _write_record(self) -> None:
        self.record.changes = [f"{c.change} {c.path}" for c in self.changes]
        write_model(self.dir / "attempt.json", self.record, self.redactor)

    def cleanup(self) -> None:
        close = getattr(self.sandbox, "close", None)
        if close is not None:
            close()
        shutil.rmtree(self.root, ignore_errors=True)


def run_attempt(plan: CasePlan) -> ExecutionRecord:
    """Install and execute one attempt. Raises EnvironmentFailure (TransientError: retried)."""
    return Attempt(plan).execute()
