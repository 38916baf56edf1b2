"""The evaluate flow. It only composes:

    prepare ──> case chain per skill x case x runtime x epoch (independent; submitted a
                window, the thread pool's size, at a time; each runs assertions -> execute
                -> grade)
            ──> on a run of a change: mark the environment errors it introduced
            ──> conclude per skill x runtime (suggest, regression, aggregate), each as soon
                as its last case chain is done
            ──> publish (run.json with the gate, junit.xml, report.html, Prefect artifacts,
                the aeval.run.finished event)
            ──> post on the merge request (when asked)

The run and its case results reach the conclusions, the introduced-errors step and publish
``quote``d: Prefect would list every case's task run among each one's inputs (a case's
result and its plan share strings, which Prefect links by id), in the task run's events too,
and from ~11,000 case runs publish's event passed Prefect's 1.5 MB limit (``EventTooLarge``:
an internal error, exit 4, after every case had run).

Each case chain's task run ends in its verdict's named state (SkillDefect, EnvironmentError,
Untested, ...); the flow run ends Completed when the gate is 0, else Failed with the gate as
its message (``gate_state``); a run that tested nothing is named `NothingTested` either way.
Callers that go on after a failed gate call it with ``return_state=True`` and read the
manifest with ``manifest_of``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

from prefect import flow, unmapped
from prefect.futures import PrefectFuture
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from aeval.artifacts import CaseResult, RunManifest
from aeval.errors import GateFailed
from aeval.exit_codes import OK, TOO_FEW_TESTED
from aeval.isolation.hardening import harden_process
from aeval.run.plan import CasePlan
from aeval.run.requests import EvalRequest, ModelChoice
from aeval.run.store import write_model
from aeval.settings import Settings
from aeval.tasks._engine import (
    Conclusions,
    chain_window,
    failure,
    runtime_limits,
    watch_run,
    windowed,
)
from aeval.tasks.case.chain import case_task, chain_result
from aeval.tasks.deliver.post import post_run
from aeval.tasks.run.family import current_flow_run_id, settle
from aeval.tasks.run.prepare import PreparedRun, prepare_run
from aeval.tasks.run.publish import publish_run
from aeval.tasks.skill.conclude import conclude_skill
from aeval.tasks.skill.introduced import mark_introduced_errors


def run_name() -> str:
    """`evaluate <run-id>` in the Prefect UI."""
    from prefect.runtime import flow_run

    request = flow_run.parameters.get("request")
    run_id = getattr(request, "run_id", None) or (
        request.get("run_id") if isinstance(request, dict) else None)
    return f"evaluate {run_id or 'new run'}"


def gate_message(manifest: RunManifest) -> str:
    """``aeval gate: exit 1: 1 case(s) failed: segmentation/train``."""
    gate = manifest.gate
    return f"aeval gate: exit {gate.exit_code}: {gate.reason}" if gate else "aeval gate: none"


def gate_state_name(manifest: RunManifest) -> str | None:
    """The flow run's state name when the type alone would mislead: `NothingTested` for a run
    whose cases were all untested (Completed at exit 0, Failed at exit 5 with --min-tested),
    `TooFewTested` for fewer tested case runs than --min-tested; None: the type's own name
    (Prefect emits ``prefect.flow-run.<name>``, which an Automation can match)."""
    gate = manifest.gate
    if gate is None or gate.exit_code not in (OK, TOO_FEW_TESTED):
        return None
    if gate.nothing_tested:
        return "NothingTested"
    return "TooFewTested" if gate.exit_code == TOO_FEW_TESTED else None


def gate_state(manifest: RunManifest) -> State:
    """Completed when the gate is 0, else Failed with the gate as its message; the Failed
    state's result is a GateFailed exception carrying the exit code, run id and manifest.
    A run that tested nothing is named so (`gate_state_name`), with the gate as message."""
    gate = manifest.gate
    name = gate_state_name(manifest)
    if gate is None or gate.exit_code == 0:
        return Completed(data=manifest, message=gate_message(manifest) if name else
                         gate.reason if gate else None, **({"name": name} if name else {}))
    message = gate_message(manifest)
    return Failed(message=message, data=GateFailed(message, gate.exit_code, manifest.run_id,
                                                   manifest), **({"name": name} if name else {}))


def misconfigured(request: ModelChoice, problem: str | None = None) -> State | None:
    """Failed as `Misconfigured` (gate exit 2, before anything runs) when ``request`` names a
    model whose provider key this process lacks, or when ``problem`` is given; else None."""
    import os

    from aeval.runtime.model_keys import config_problem

    problem = problem or config_problem(request.runtimes, request.model, request.grader_model,
                                        request.api_base, os.environ)
    if problem is None:
        return None
    message = f"aeval gate: exit 2: {problem}"
    return Failed(name="Misconfigured", message=message, data=GateFailed(message, 2, ""))


def manifest_of(state: State) -> RunManifest:
    """The run's manifest from an evaluate flow run's final state, whatever its gate; a flow
    run that crashed or failed otherwise raises its exception."""
    data = state.result(raise_on_failure=False)
    if isinstance(data, RunManifest):
        return data
    if isinstance(data, GateFailed) and isinstance(data.manifest, RunManifest):
        return data.manifest
    if isinstance(data, BaseException):
        raise data
    raise TypeError(f"the evaluate flow run ended {state.type.value} without a manifest")


def run_and_conclude(run: PreparedRun, submit: Callable[[CasePlan], PrefectFuture],
                     window: int) -> tuple[list[CaseResult], list[str]]:
    """Run the case chains a ``window`` at a time and conclude each skill x runtime as soon as
    its last chain is done (`aeval.tasks._engine.schedule`); wait for every conclusion. The
    case results in ``run.todo``'s order, and the conclusions that failed
    (``name [runtime]: why``)."""
    results: dict[str, CaseResult] = {c.dir: c for c in run.finished}
    groups = run.groups()

    def conclude(gi: int) -> PrefectFuture:
        g = groups[gi]
        return conclude_skill.submit(run.layout, g, quote([results[k] for k in g.case_keys]),
                                     run.request)

    conclusions = Conclusions([g.case_keys for g in groups], conclude,
                              [f"{g.name} [{g.runtime}]" for g in groups], have=results)
    for plan, chain in windowed(run.todo, submit, window):
        results[plan.key] = chain_result(plan, chain)
        conclusions.settled(plan.key)
    return [results[p.key] for p in run.todo], conclusions.wait()


@flow(name="aeval-evaluate", flow_run_name=run_name,
      task_runner=ThreadPoolTaskRunner(max_workers=Settings().concurrency))
def evaluate(request: EvalRequest) -> State:
    """Evaluate the skills at ``request.paths`` (folders holding SKILL.md, or marketplace
    roots), or exactly ``request.skill_roots``. Ends Failed when the gate is not 0."""
    harden_process()  # served and worker runs hold keys too, not only the CLI
    run = prepare_run(request)
    watch_run(run.layout.manifest, lambda: [p.key for p in run.todo
                                            if not p.files.grading.is_file()])
    limits = runtime_limits(request.runtimes) if run.todo else {}

    case = case_task(request.retries, request.retry_delay_s)

    def submit(plan: CasePlan) -> PrefectFuture:
        return case.submit(plan, request.retries, limits.get(plan.runtime))

    if request.base:  # a run of a change: the environment errors it introduced do not pass
        # (known only once every case has run: the conclusions wait for all of them)
        chains = [submit(plan) for plan in run.todo]
        results = [chain_result(p, c) for p, c in zip(run.todo, chains, strict=True)]
        results = mark_introduced_errors(quote(run.todo), quote(results), request.base,
                                         request.head)
        by_key = {p.key: r for p, r in zip(run.todo, results, strict=True)}
        by_key |= {c.dir: c for c in run.finished}
        groups = run.groups()
        concluded = conclude_skill.map(unmapped(run.layout), groups,
                                       [quote([by_key[k] for k in g.case_keys]) for g in groups],
                                       unmapped(run.request))
        concluded.wait()
        unconcluded = [f"{g.name} [{g.runtime}]: {why}" for g, f in zip(groups, concluded,
                                                                          strict=True)
                       if (why := failure(f)) is not None]
    else:
        results, unconcluded = run_and_conclude(run, submit, chain_window(len(run.todo)))
    manifest = publish_run(quote(run), quote(results), unconcluded)
    if not request.keep_workspaces:
        shutil.rmtree(run.workspace_root, ignore_errors=True)
    if request.post:
        manifest.delivery = post_run(str(run.run_dir), request.forge, request.mr_iid,
                                     request.project_id, request.gitlab_url)
        write_model(run.layout.manifest, manifest)
    outcome = gate_state(manifest)
    if request.resume:  # the flow run the run started in ends as the run did
        settle(manifest.flow_run_id, outcome, current_flow_run_id())
    return outcome
