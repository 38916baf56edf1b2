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
an internal error, exit 4, after every case had run; issue 29).

Each case chain's task run ends in its verdict's named state (SkillDefect, EnvironmentError,
Untested, ...); the flow run ends Completed when the gate is 0, else Failed with the gate as
its message (``gate_state``). Callers that go on after a failed gate call it with
``return_state=True`` and read the manifest with ``manifest_of``.
"""

from __future__ import annotations

import queue
import shutil
from collections.abc import Callable

from aeval.tasks.case.chain import case_task, lost_chain, runtime_limits
from aeval.tasks.deliver.post import post_run
from aeval.tasks.run.prepare import PreparedRun, prepare_run
from aeval.tasks.run.publish import publish_run
from aeval.tasks.skill.conclude import conclude_skill
from aeval.tasks.skill.introduced import mark_introduced_errors
from prefect import flow, unmapped
from prefect.futures import PrefectFuture, wait
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from aeval.artifacts import CaseResult, RunManifest
from aeval.errors import GateFailed
from aeval.isolation.hardening import harden_process
from aeval.isolation.text import one_line
from aeval.run.plan import CasePlan
from aeval.run.requests import EvalRequest, ModelChoice
from aeval.run.store import write_model
from aeval.settings import Settings


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


def gate_state(manifest: RunManifest) -> State:
    """Completed when the gate is 0, else Failed with the gate as its message; the Failed
    state's result is a GateFailed exception carrying the exit code, run id and manifest."""
    gate = manifest.gate
    if gate is None or gate.exit_code == 0:
        return Completed(data=manifest, message=gate.reason if gate else None)
    message = gate_message(manifest)
    return Failed(message=message, data=GateFailed(message, gate.exit_code, manifest.run_id,
                                                   manifest))


def misconfigured(request: ModelChoice, problem: str | None = None) -> State | None:
    """Failed as `Misconfigured` (gate exit 2, before anything runs) when ``request`` names a
    model whose provider key this process lacks, or when ``problem`` is given; else None."""
    import os

    from aeval.isolation.model_keys import config_problem

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


def chain_window(chains: int) -> int:
    """How many case chains to keep submitted: the flow's thread pool's size (aeval's
    ``--concurrency``); on Dask, twice the threads of the cluster's workers (each finished
    chain's successor is already queued on the scheduler, and only so many pending
    submissions, each the task with its parameters and context, wait in the flow process and
    the scheduler instead of every chain of the run); every chain at once when neither can be
    read."""
    from aeval.tasks._engine.runners import runner_slots
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    runner = ctx.task_runner if ctx else None
    workers = getattr(runner, "_max_workers", None)
    if isinstance(workers, int) and 0 < workers < chains:
        return workers
    slots = runner_slots(runner) if chains > 1 else None
    if slots:
        return max(1, min(chains, 2 * slots))
    return max(1, chains)


def chain_result(plan: CasePlan, chain: PrefectFuture) -> CaseResult:
    """A chain's CaseResult (its task run is Failed for a failing case: the result is the
    state's data); when it has none, because Prefect's API failed the task run around the
    chain or the engine raised, the case's `error` or internal result (``lost_chain``), and
    the other cases go on."""
    try:
        outcome = chain.result(raise_on_failure=False)
    except Exception as exc:
        outcome = exc
    return outcome if isinstance(outcome, CaseResult) else lost_chain(plan, outcome)


def conclusion_failure(future: PrefectFuture) -> str | None:
    """Why a skill's conclusion failed (``Type: message``, one line), or None when it did
    not: a conclusion is aeval's own work, and a failed one is an internal error of the run
    (exit 4), not a skill's verdict."""
    try:
        outcome = future.result(raise_on_failure=False)
    except Exception as exc:
        outcome = exc
    if not isinstance(outcome, BaseException):
        return None
    return one_line(f"{type(outcome).__name__}: {outcome}")[:300]


def run_and_conclude(run: PreparedRun, submit: Callable[[CasePlan], PrefectFuture],
                     window: int) -> tuple[list[CaseResult], list[str]]:
    """Run the case chains, at most ``window`` submitted at a time (the next as one is
    done), and conclude each skill x runtime as soon as its last chain is done, while the
    other skills' cases still run; wait for every conclusion. The case results in
    ``run.todo``'s order, and the conclusions that failed (``name [runtime]: why``).

    Concluding all skills after the last case left their suggestions, aggregates and
    coverage tables (~0.1-0.3 s of CPU each) between the last case and the run's report: 1 s
    of tail for 20 one-case skills (benchmarks/latency_workload.py), 100 conclusions on 4
    workers after a 1,000-case sweep. Submitting the chains a window at a time lets a
    conclusion have the next free worker instead of waiting behind every case of the run in
    the pool's queue (and keeps that many futures, not all of them, waiting)."""
    by_key: dict[str, CaseResult] = {c.dir: c for c in run.finished}
    groups = run.groups()
    missing = [{k for k in g.case_keys if k not in by_key} for g in groups]
    groups_of: dict[str, list[int]] = {}
    for gi, keys in enumerate(missing):
        for k in keys:
            groups_of.setdefault(k, []).append(gi)
    concluding: dict[PrefectFuture, str] = {}
    concluded: queue.SimpleQueue[PrefectFuture] = queue.SimpleQueue()
    unconcluded: list[str] = []

    def conclude(gi: int) -> None:
        g = groups[gi]
        future = conclude_skill.submit(
            run.layout, g, quote([by_key[k] for k in g.case_keys]), run.request)
        concluding[future] = f"{g.name} [{g.runtime}]"
        future.add_done_callback(concluded.put)

    def release_concluded() -> None:
        """Settle and drop the conclusions that are done: on Dask a future held keeps the
        task's submission in the scheduler and its result on a worker (~0.6 MiB per skill:
        a 1,000-skill run held them all until its last case)."""
        while True:
            try:
                future = concluded.get_nowait()
            except queue.Empty:
                return
            if (failure := conclusion_failure(future)) is not None:
                unconcluded.append(f"{concluding[future]}: {failure}")
            del concluding[future]

    for gi, keys in enumerate(missing):
        if not keys:  # every case reused from an earlier run
            conclude(gi)
    done: queue.SimpleQueue[PrefectFuture] = queue.SimpleQueue()
    index: dict[PrefectFuture, int] = {}
    upcoming = iter(range(len(run.todo)))

    def start_next() -> int:
        i = next(upcoming, None)
        if i is None:
            return 0
        chain = submit(run.todo[i])
        index[chain] = i
        chain.add_done_callback(done.put)
        return 1

    results: list[CaseResult | None] = [None] * len(run.todo)
    running = sum(start_next() for _ in range(max(1, window)))
    while running:
        chain = done.get()
        running -= 1
        i = index.pop(chain)
        results[i] = by_key[run.todo[i].key] = chain_result(run.todo[i], chain)
        running += start_next()
        for gi in groups_of.get(run.todo[i].key, ()):
            missing[gi].discard(run.todo[i].key)
            if not missing[gi]:
                conclude(gi)
        release_concluded()
    wait(list(concluding))
    for future, name in concluding.items():  # done; their callbacks may not have run yet
        if (failure := conclusion_failure(future)) is not None:
            unconcluded.append(f"{name}: {failure}")
    return results, unconcluded


@flow(name="aeval-evaluate", flow_run_name=run_name,
      task_runner=ThreadPoolTaskRunner(max_workers=Settings().concurrency))
def evaluate(request: EvalRequest) -> State:
    """Evaluate the skills at ``request.paths`` (folders holding SKILL.md, or marketplace
    roots), or exactly ``request.skill_roots``. Ends Failed when the gate is not 0."""
    harden_process()  # served and worker runs hold keys too, not only the CLI
    run = prepare_run(request)
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
                       if (why := conclusion_failure(f)) is not None]
    else:
        results, unconcluded = run_and_conclude(run, submit, chain_window(len(run.todo)))
    manifest = publish_run(quote(run), quote(results), unconcluded)
    if not request.keep_workspaces:
        shutil.rmtree(run.workspace_root, ignore_errors=True)
    if request.post:
        manifest.delivery = post_run(str(run.run_dir), request.mr_iid, request.project_id,
                                     request.gitlab_url)
        write_model(run.layout.manifest, manifest)
    return gate_state(manifest)
