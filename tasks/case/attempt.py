"""One attempt of a case, from a fresh workspace to its recorded end.

`Attempt` owns the attempt's workspace: it creates it (skill COPY, case files), installs
(setup, preflight), takes the skill manifest AFTER setup and preflight (what they write into
$SKILL_DIR is the environment, not an edit), runs the runtime, and then ALWAYS computes Δ,
also when the runtime raised: an agent that edited the skill and then crashed the attempt
still shows the edit in ``attempt.json``. A completed attempt keeps its workspace until it is
graded (``cleanup()``); a failed one is removed at once.

Δ is made of five parts, so that no shape of skill and no order of moves hides an edit:
the manifest diff (what is different at the end); the watch's changes that were put back;
the manifest's identities (`aeval.isolation.tree`: a file rewritten and restored, or a folder
renamed away and back, in any folder, watched or not); the watch on the path above the copy (the
copy, or a folder above it, moved aside); and every path inside the copy that a tool result
says it wrote. Under bubblewrap the copy is also pinned (a mount point: it cannot be renamed
inside). Paths in Δ, outputs and coverage are redacted where they are made, so a declared
secret in a file name reaches no artifact, file name or Prefect artifact.

    <case>/attempts/<n>/attempt.json  events.jsonl  raw.jsonl  install.log
    <case>/events.jsonl transcript.md skill.diff skill_after/ outputs/   (completed attempt)
"""

from __future__ import annotations

import posixpath
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from aeval.adapters import get_runtime
from aeval.adapters.sandbox import provision_npm
from aeval.adapters.sandbox.provision import attempt_env, provision
from aeval.adapters.sandbox.watch import CHANGES, SkillWatch, Touch
from aeval.artifacts import AttemptRecord
from aeval.errors import EnvironmentFailure, RuntimeUnavailable, TransientError
from aeval.events import ToolResultEvent, read_events, render_transcript
from aeval.isolation.sandbox import Sandbox
from aeval.isolation.startup_hooks import hook_changes, hook_state, shown, user_site
from aeval.isolation.tree import Tree
from aeval.isolation.workspace import (
    FileChange,
    OutputsCut,
    Workspace,
    add_skills,
    collect_outputs,
    diff_skill,
    incomplete_walks,
    path_changes,
    render_diff,
    restored_changes,
    rewritten_changes,
    shown_path,
)
from aeval.prompts import load_prompt
from aeval.run.layout import CaseFiles, RunLayout
from aeval.run.plan import AttemptOutcome, CasePlan, ExecutionRecord
from aeval.run.read import read_attempts
from aeval.run.store import atomic_write_bytes, atomic_write_text, write_model
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, ExecutionResult, Limits
from aeval.skill.shell_blocks import doc_blocks
from aeval.tasks.case.install import case_redactor, install, resolve_credentials, tool_env
from aeval.tasks.case.sandboxing import attempt_sandbox
from aeval.tasks.run.progress import progress
from aeval.verdicts.attribution import seen_at
from aeval.verdicts.coverage import ResourceUse, exercised, resource_use, uses_from_events


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
        rel = self.case_dir.relative_to(plan.run.run_dir)
        self.root = plan.run.workspace_root / rel / f"attempt-{self.number}"
        self.record = AttemptRecord(number=self.number, started_at=datetime.now(UTC),
                                    outcome="completed",
                                    dir=str(self.dir.relative_to(plan.run.run_dir)))
        self.redactor = case_redactor(plan)  # run-wide: every credential the run declares
        self.ws: Workspace | None = None
        self.baseline: dict | None = None
        self.baseline_tree: Tree | None = None
        self.sandbox: Sandbox | None = None
        self.watch: SkillWatch | None = None
        self.hooks: dict[str, str] = {}  # the startup hooks after install (startup_hooks)
        self.hook_watch: SkillWatch | None = None
        self.clock_start: float | None = None
        self.wall_start: float | None = None  # time.time() at clock_start
        self.changes: list[FileChange] = []
        self.runs_steps_verbatim = False  # the runtime's flag, once it is known
        self.extra_env: dict[str, str] = {}  # what the provisioning phase adds
        self.npm_entry: tuple[Path, list[str], bool] | None = None  # (entry, folders, npx)

    # ---- the lifecycle -------------------------------------------------------------------

    def execute(self) -> ExecutionRecord:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            credentials = resolve_credentials(self.plan)
            runtime = get_runtime(self.plan.runtime, **self.plan.runtime_options)
            self.runs_steps_verbatim = runtime.runs_steps_verbatim
            runtime.check_available()
            if runtime.needs_model and not self.plan.run.model:
                raise RuntimeUnavailable(f"runtime {self.plan.runtime!r} needs a model: pass "
                                         "--model or set AEVAL_MODEL")
            self.sandbox = attempt_sandbox(self.plan, self.root)
            self.extra_env = self._provision()
            self.ws = install(self.plan, self.root, runtime.skills_subdir, runtime.config_dirs,
                              credentials, self.dir / "install.log", self.sandbox,
                              self.extra_env, self._npm_placed)
            add_skills(self.ws, self.plan.skill.distractors)
            # the copy pinned from now on: inside the sandbox it cannot be moved aside
            self.sandbox.policy = self.sandbox.policy.model_copy(
                update={"pinned": [self.ws.skill_dir]})
            self.baseline_tree = self.ws.tree()  # after setup and preflight
            self.baseline = self.baseline_tree.entries
            self.record.cut += [f"skill copy: {c}" for c in self.baseline_tree.cut]
            self.hooks = hook_state(self.ws.home, self.ws.root)
            before = self.ws.snapshot()
            self.watch = SkillWatch(self.ws.skill_dir, above=self.ws.root).start()
            self.hook_watch = SkillWatch(user_site(self.ws.home), above=self.ws.home,
                                         recursive=False).start()
            try:
                result = self._run(runtime, credentials)
            finally:
                self.changes = self._delta()
                # what the runtime's own tools wrote (a write tool) counts against the bound
                measure = getattr(self.sandbox, "measure", None)
                if measure is not None:
                    measure()
            outputs = self._publish(before)
        except BaseException as exc:
            self._fail(exc)
            raise
        self.record.ended_at = datetime.now(UTC)
        self._write_record()
        assert self.ws is not None
        return ExecutionRecord(
            attempts=read_attempts(self.case_dir), result=result,
            workspace=self.ws.path, home=self.ws.home, attempt_root=self.root,
            skill_copy=self.ws.skill_dir, changes=self.changes, outputs=outputs,
            runtime_version=result.runtime_version)

    def _provision(self) -> dict[str, str]:
        """The provisioning phase (`aeval.adapters.sandbox.provision`): the packages the
        skill's documented scripts declare (PEP 723, ``requirements.txt``, ``pyproject.toml``),
        fetched (or found in the cache) before anything of the attempt runs; the wheelhouse
        and its installed ``site`` shown read-only to the attempt. Returns
        what the attempt's commands get in their environment ({} when nothing was
        declared; what could not be fetched is named in the record)."""
        plan = self.plan
        commands = [f.code for f in plan.skill.skill.fences() if f.shell]
        commands += [*plan.case.setup, *plan.case.steps]
        env: dict[str, str] = {}
        record, entry = provision(plan.skill.path, commands, plan.run.sandbox)
        self.record.provisioning = record
        if record is not None:
            progress("%s: %s", plan.label, record.line())
            self._show(entry)
            env |= attempt_env(entry, plan.case.network, record.importable)
        npm, npm_entry, folders, npx = provision_npm.provision_npm(plan.skill.path, commands,
                                                                   plan.run.sandbox)
        self.record.npm_provisioning = npm
        if npm is not None:
            progress("%s: npm: %s", plan.label, npm.line())
            self._show(npm_entry)
            env |= provision_npm.attempt_env(plan.case.network)
            if npm_entry is not None:
                self.npm_entry = (npm_entry, folders, npx)
        return env

    def _show(self, entry: Path | None) -> None:
        """A provisioned cache entry, shown read-only to the attempt."""
        if entry is not None:
            assert self.sandbox is not None
            self.sandbox.policy = self.sandbox.policy.model_copy(
                update={"readonly": [*self.sandbox.policy.readonly, entry]})

    def _npm_placed(self, ws: Workspace) -> None:
        """npm's provisioned packages put in place in the fresh workspace, before any of
        its commands (`aeval.adapters.sandbox.provision_npm.link_into`)."""
        if self.npm_entry is not None:
            entry, folders, npx = self.npm_entry
            provision_npm.link_into(entry, ws.skill_dir, ws.home, folders, npx)

    def _run(self, runtime, credentials: dict[str, str]) -> ExecutionResult:
        plan, ws = self.plan, self.ws
        assert ws is not None
        recorder = EventRecorder(CaseFiles(self.dir).events, self.redactor)
        self.clock_start = recorder.clock_start
        self.wall_start = time.time() - (time.monotonic() - recorder.clock_start)
        raw = self.dir / "raw.jsonl"
        request = ExecutionRequest(
            prompt=plan.case.prompt, case_id=plan.case.id, epoch=plan.epoch, workspace=ws.path,
            home=ws.home,
            skill_name=plan.skill.name, skill_key=plan.skill.key,
            skill_description=plan.skill.skill.description,
            skill_dir=ws.skill_dir, skill_installed=plan.run.install_skill,
            env=tool_env(plan, ws, credentials, self.extra_env), steps=plan.case.steps,
            doc_test=plan.case.doc_test, host_tools=plan.case.host_tools,
            doc_blocks=doc_blocks(plan.skill.skill.fences(), plan.case.steps,
                                  plan.skill.skill.prose())
            if plan.case.doc_test else [],
            model=plan.run.model, api_base=plan.run.api_base,
            limits=Limits(max_turns=plan.case.max_turns, timeout_s=plan.case.timeout_s,
                          output_cap=plan.run.output_cap),
            system_prompt=load_prompt(plan.run.executor_prompt if plan.run.install_skill
                                      else "executor_no_skill"),
            raw_log=raw, sandbox=self.sandbox)
        try:
            result = runtime.run(request, recorder)
        finally:
            recorder.close()
            if raw.is_file() and self.redactor:
                atomic_write_text(raw, raw.read_text(errors="replace"), self.redactor)
        if raw.is_file():
            result.raw_log = str(raw.relative_to(plan.run.run_dir))
        return result

    def _delta(self) -> list[FileChange]:
        """Δ against the manifest taken after install ([] when the install did not finish):
        the manifest diff, then what it cannot show (see the module docstring), each entry
        once, paths redacted."""
        if self.ws is None or self.baseline is None or self.baseline_tree is None:
            return []
        # stopped first: reading the copy for Δ would show as uses of every file
        touches = self.watch.stop() if self.watch is not None else []
        hook_touches = self.hook_watch.stop() if self.hook_watch is not None else []
        if self.watch is not None:
            self.record.watched = self.watch.coverage  # type: ignore[assignment]
            if self.watch.unwatched:
                self.record.cut.append(
                    f"watch: {self.watch.unwatched} folder(s) of the skill copy past the "
                    f"limit of {self.watch.limit} not watched (the manifest covers them)")
        after = self.ws.tree()
        self.record.cut += [f"skill copy after the run: {c}" for c in after.cut
                            if c not in self.baseline_tree.cut]
        delta = diff_skill(self.plan.skill.path, self.ws.skill_dir, self.baseline,
                           after.entries, trusted=self.ws.root)
        t0 = self.clock_start if self.clock_start is not None else 0.0
        timed = [(t.path, t.what, t.at - t0) for t in touches if t.what in CHANGES]
        extra = [*incomplete_walks(self.baseline_tree, after),
                 *path_changes(timed),
                 *restored_changes(self.baseline, after.entries, timed),  # opens are not edits
                 *rewritten_changes(self.baseline_tree, after, self.wall_start or 0.0),
                 *self._written_by_tools(),
                 *hook_changes(self.hooks, hook_state(self.ws.home, self.ws.root),
                               [(t.path, t.what, t.at - t0) for t in hook_touches
                                if t.what in CHANGES],
                               shown(self.ws.home, user_site(self.ws.home)), self.ws.home,
                               self.ws.root)]
        changes, seen = list(delta), {c.path for c in delta}
        for c in extra:
            if c.path not in seen:
                changes.append(c)
                seen.add(c.path)
        changes = seen_at(changes, timed)  # when each change happened: ties it to its call
        try:
            self.record.resources = self._resources(touches)
        except (OSError, ValueError):  # coverage is a by-product: it never costs Δ
            self.record.resources = None
        return [self._redacted(c) for c in changes]

    def _redacted(self, c: FileChange) -> FileChange:
        red = self.redactor
        if not red:
            return c
        return c.model_copy(update={"path": red.text(c.path), "diff": red.text(c.diff),
                                    "detail": red.text(c.detail),
                                    "after": red.text(c.after) if c.after else c.after})

    def _written_by_tools(self) -> list[FileChange]:
        """A path inside the skill copy that a tool result says it wrote is a change, also
        when nothing else saw it (written, then put back)."""
        assert self.ws is not None and self.baseline is not None
        events_file = CaseFiles(self.dir).events
        if not events_file.is_file():
            return []
        skill_rel = self.ws.skill_dir.relative_to(self.ws.path).as_posix()
        out = []
        for e in read_events(events_file):
            if not isinstance(e, ToolResultEvent):
                continue
            for raw in e.paths_written:
                p = raw[len(str(self.ws.path)) + 1:] if raw.startswith(f"{self.ws.path}/") \
                    else raw.removeprefix("./")
                if not p.startswith(f"{skill_rel}/"):
                    continue
                rel = p[len(skill_rel) + 1:]
                out.append(FileChange(
                    path=shown_path(rel), change="modified" if rel in self.baseline else "added",
                    kind="file", at_s=round(e.t, 3),
                    detail=f"written by a {e.tool} call (event {e.seq}) while the runtime ran"))
        return out

    def _resources(self, touches: list[Touch]) -> ResourceUse | None:
        """What the attempt read, executed and wrote of the shipped skill files."""
        assert self.ws is not None and self.baseline is not None
        events_file = CaseFiles(self.dir).events
        if not events_file.is_file():
            return None
        events = read_events(events_file)
        # the files the skill ships: regular ones, and symlinks to a file (a reference read
        # through its link counts for the link; the watch sees the file it points to)
        base = self.baseline

        def links_to_file(rel: str, target: str) -> bool:  # read lexically, never followed
            to = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
            return base.get(to, "").startswith("file ")

        files = [p for p, v in base.items() if v.startswith("file ") or (
            v.startswith("symlink ") and links_to_file(p, v.split(" ", 1)[1]))]
        watched = self.watch is not None and self.watch.problem is None
        verbatim = self.runs_steps_verbatim  # no model: loading SKILL.md is not running it
        cwd = self.ws.skill_dir if verbatim and self.plan.case.doc_test else self.ws.path
        t0 = self.clock_start if self.clock_start is not None else 0.0
        evidence = exercised(events, self.ws.path, self.ws.skill_dir, files,
                             [(t.path, t.what, t.at - t0) for t in touches], cwd=cwd,
                             loading_counts=not verbatim)
        red = self.redactor.text
        use = resource_use(uses_from_events(events, self.ws.path, self.ws.skill_dir, cwd),
                           [(t.path, t.what) for t in touches], files, watched=watched,
                           evidence=evidence)
        return use.model_copy(update={k: [red(p) for p in getattr(use, k)]
                                      for k in ("read", "executed", "written", "exercised")})

    def _publish(self, before: dict) -> list:
        """The completed attempt's files at the case level: events, transcript, Δ, outputs."""
        plan, ws, red = self.plan, self.ws, self.redactor
        assert ws is not None
        files = CaseFiles(self.case_dir)
        outputs_dir = files.outputs
        if outputs_dir.exists():
            shutil.rmtree(outputs_dir)
        cut = OutputsCut()
        outputs = collect_outputs(ws, before, outputs_dir, red, cut=cut)
        self.record.cut += cut.lines()
        events_file = CaseFiles(self.dir).events
        atomic_write_bytes(files.events, events_file.read_bytes())
        atomic_write_text(files.transcript, render_transcript(
            read_events(events_file), f"{plan.label}: {plan.case.prompt[:80]}"), red)
        atomic_write_text(files.skill_diff, render_diff(self.changes), red)
        after_dir = files.skill_after
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
        if not self.plan.run.keep_workspace:
            self.cleanup()

    def _write_record(self) -> None:
        self.record.changes = [f"{c.change} {c.path}" for c in self.changes]
        self.record.exceeded = getattr(self.sandbox, "exceeded", None)
        write_model(CaseFiles(self.dir).attempt_record, self.record, self.redactor)

    def cleanup(self) -> None:
        close = getattr(self.sandbox, "close", None)
        if close is not None:
            close()
        shutil.rmtree(self.root, ignore_errors=True)


def run_attempt(plan: CasePlan) -> AttemptOutcome:
    """Install and execute one attempt: its record, or the exception that ended it (recorded
    in its attempt.json; a TransientError is worth a retry)."""
    try:
        return AttemptOutcome(record=Attempt(plan).execute())
    except Exception as exc:
        return AttemptOutcome(failure=exc)
