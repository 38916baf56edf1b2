"""Prepare a run: find and examine the skills, give each a unique run-folder key, plan every
skill x case x runtime x epoch, write run.json (`running`), and, when resuming, collect the
results of the cases graded before so that only the unfinished ones run."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import prefect
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict, Field

from aeval import __version__
from aeval.adapters.sandbox.bwrap import sandbox_status
from aeval.artifacts import CaseResult, RunManifest
from aeval.isolation.redact import declared_values
from aeval.isolation.sandbox import SandboxUnavailable
from aeval.run.layout import RunLayout, skill_keys
from aeval.run.plan import CasePlan, Examined, RunSettings
from aeval.run.requests import EvalRequest
from aeval.run.store import new_run_id, read_model, write_model
from aeval.skill.skill_md import scan_skill_roots
from aeval.tasks.run.cases import plan_cases, run_credentials
from aeval.tasks.run.examine import duplicate_name_warnings, examine
from aeval.tasks.run.progress import progress, redact_logs
from aeval.tasks.run.reuse import fingerprint_plans, reuse_unchanged
from aeval.verdicts.finding import StaticFinding


class SkillGroup(BaseModel):
    """The cases of one skill x runtime (what the per-skill phase concludes over)."""

    model_config = ConfigDict(extra="forbid")

    skill_key: str
    name: str
    root: Path
    runtime: str
    case_keys: list[str] = Field(description="CasePlan.key of each case run, in order.")
    run_credentials: list[str] = Field(
        default_factory=list, description="Names of the run's credentials (redacted from the "
                                          "conclusions too; values never stored).")
    inputs: list[str] = Field(
        default_factory=list, description="The cases' `files` entries (fixtures copied into "
                                          "the workspace): not the skill's resources.")
    static_findings: list[StaticFinding] = Field(
        default_factory=list, description="The skill's static check defects (S0): their "
                                          "proven fixes are suggested with no model.")


class PreparedRun(BaseModel):
    """Everything the flow needs after preparation."""

    model_config = ConfigDict(extra="forbid")

    request: EvalRequest
    run_dir: Path
    manifest: RunManifest = Field(description="run.json as written at the start.")
    examined: list[Examined]
    todo: list[CasePlan] = Field(description="Case runs to execute now.")
    finished: list[CaseResult] = Field(default_factory=list,
                                       description="Case runs graded before (resume).")
    workspace_root: Path = Field(description="Parent of every attempt's workspace (temporary).")
    run_credentials: list[str] = Field(
        default_factory=list,
        description="Names of every credential a case of the run declares (values never "
                    "stored): redacted from every artifact of the run, whichever case "
                    "printed it.")

    @property
    def layout(self) -> RunLayout:
        return RunLayout(self.run_dir)

    def groups(self) -> list[SkillGroup]:
        """One group per valid skill x runtime that has case runs."""
        keys: dict[tuple[str, str], list[str]] = {}
        for p in self.todo:
            keys.setdefault((p.skill.key, p.runtime), []).append(p.key)
        for c in self.finished:
            skill_key = c.dir.split("/", 1)[0]
            keys.setdefault((skill_key, c.runtime), []).append(c.dir)
        out = []
        for ex in self.examined:
            if not ex.valid or ex.key is None:
                continue
            for rt in self.request.runtimes:
                if (ex.key, rt) in keys:
                    inputs = sorted({f for c in ex.cases for f in c.files})
                    out.append(SkillGroup(skill_key=ex.key, name=ex.name, root=ex.root,
                                          runtime=rt, case_keys=keys[(ex.key, rt)],
                                          run_credentials=self.run_credentials,
                                          inputs=inputs, static_findings=ex.static_findings))
        return out


def skill_roots(request: EvalRequest) -> list[Path]:
    """The skill folders of a run: the given ones, or every SKILL.md under the paths (a walk
    that never loops or falls over; what it skipped is said as a progress warning)."""
    if request.skill_roots is not None:
        return [Path(r) for r in request.skill_roots]
    roots: list[Path] = []
    for p in request.paths:
        found = scan_skill_roots(Path(p))
        for w in found.warnings:
            progress("%s", w, warning=True)
        roots += found.roots
    return roots


def run_settings(request: EvalRequest, run_dir: Path, workspace_root: Path) -> RunSettings:
    """What every case of the run of ``request`` (its id set) shares."""
    assert request.run_id is not None
    return RunSettings(
        run_id=request.run_id, run_dir=run_dir, workspace_root=workspace_root,
        model=request.model, grader_model=request.grader_model, api_base=request.api_base,
        output_cap=request.output_cap, keep_workspace=request.keep_workspaces,
        sandbox=request.sandbox, install_skill=request.install_skill,
        require_exercise=request.require_exercise)


def flow_run_ids() -> dict[str, str | None]:
    """The ids of the flow run this runs in and of its parent (None outside a flow run)."""
    from prefect.runtime import flow_run

    current = flow_run.id
    return {"flow_run_id": current,
            "parent_flow_run_id": flow_run.parent_flow_run_id if current else None}


def prepare(request: EvalRequest) -> PreparedRun:
    """Examine, key, plan; write run.json. Raises FileNotFoundError when resuming a run that
    does not exist."""
    run_id = request.run_id or new_run_id()
    request = request.model_copy(update={"run_id": run_id})
    layout = RunLayout.of(request.store, run_id)
    if request.resume and not layout.manifest.is_file():
        raise FileNotFoundError(f"cannot resume {run_id}: no {layout.manifest}")
    status = sandbox_status(request.sandbox)
    if request.sandbox == "require" and status.used != "bwrap":
        raise SandboxUnavailable(f"--sandbox require: {status.reason}")
    roots = skill_roots(request)
    examined = [examine(r) for r in roots]
    keys = skill_keys([(ex.name, ex.root) for ex in examined])
    shared = duplicate_name_warnings(examined)
    examined = [ex.model_copy(update={"key": keys[ex.root], "warnings": [
        *ex.warnings, *([shared[ex.root]] if ex.root in shared else [])]}) for ex in examined]
    manifest = RunManifest(
        run_id=run_id, created_at=datetime.now(UTC), aeval_version=__version__,
        prefect_version=prefect.__version__, paths=[str(p) for p in request.paths],
        base=request.base, head=request.head, runtimes=request.runtimes, model=request.model,
        grader_model=request.grader_model, epochs=request.epochs, api_base=request.api_base,
        skill_roots=[str(r) for r in roots], sandbox=status, **flow_run_ids())
    if request.resume:  # the run's family in Prefect stays the one it started in
        old = read_model(layout.manifest, RunManifest)
        manifest.created_at = old.created_at
        if old.flow_run_id:
            manifest.flow_run_id = old.flow_run_id
            manifest.parent_flow_run_id = old.parent_flow_run_id
        for tmp in layout.run_dir.rglob(".*.tmp"):  # an atomic write cut short by a kill
            if "outputs" not in tmp.relative_to(layout.run_dir).parts:  # not the agent's
                tmp.unlink(missing_ok=True)
    write_model(layout.manifest, manifest)
    ws_root = Path(tempfile.mkdtemp(prefix=f"aeval-{run_id}-"))
    plans = plan_cases(examined, run_settings(request, layout.run_dir, ws_root),
                       request.runtimes, request.epochs, request.runtime_options,
                       request.recordings, request.skill_md_doc_test, request.base_costs,
                       request.compared_with_base)
    todo, finished = plans, []
    if request.resume:
        todo = []
        for plan in plans:
            done = plan.finished()
            (todo.append(plan) if done is None else finished.append(done))
    if request.skip_unchanged:
        todo, reused = reuse_unchanged(fingerprint_plans(todo), Path(request.store))
        finished += reused
    return PreparedRun(request=request, run_dir=layout.run_dir, manifest=manifest,
                       examined=examined, todo=todo, finished=finished, workspace_root=ws_root,
                       run_credentials=run_credentials(examined))


@task(name="prepare", task_run_name="prepare {request.run_id}", cache_policy=NO_CACHE)
def prepare_run(request: EvalRequest) -> PreparedRun:
    """Find, examine and plan the skills of a run (and what a resumed run already did)."""
    run = prepare(request)
    # what the cases declare never reaches a log line, the console or Prefect's database
    redact_logs(declared_values(run.run_credentials))
    progress("%d skill(s), %d case run(s), runtime(s): %s", len(run.examined),
             len(run.todo) + len(run.finished), ", ".join(request.runtimes))
    if request.resume:
        progress("resuming %s: %d case run(s) finished, %d to run", run.manifest.run_id,
                 len(run.finished), len(run.todo))
    if reused := [c for c in run.finished if c.reused_from]:
        progress("%d case run(s) unchanged since their last verdict: reused, not run "
                 "(--no-skip runs them)", len(reused))
    for ex in run.examined:
        if not ex.valid:
            progress("%s is invalid:\n  %s", ex.root, "\n  ".join(ex.problems), warning=True)
    return run
