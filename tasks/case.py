"""One case chain as one task: assertions (before anything runs) -> execute (an attempt per
try, retried from a fresh workspace on TransientError; beside it, for an agent runtime on a
case with `steps`, the documented-workflow probe) -> grade. No worker waits on a dependency:
the chain runs start to end in the worker that picked it up.

Two task runs per case: the chain, and `execute` nested in it (its retries show in its state
history). Assertions and grading are plain calls inside the chain: each task run costs the
client and the embedded server its state events, and at four task runs per case a
1,000-case literal sweep spent more on that bookkeeping than on the cases. The case's
verdict table is the chain's markdown artifact.

The chain never raises: whatever happens becomes the case's status (an execution failure is
`error` with its reason; a bug of aeval's own is recorded as an internal error)."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

from aeval.tasks.assertions import needs_probe, write_assertions_file
from aeval.tasks.execute import execute_case
from aeval.tasks.grade import grade_and_publish
from aeval.tasks.prefect_artifacts import emit_case_event, inert
from aeval.tasks.probe import run_probe
from aeval.tasks.progress import ensure_inert_logs, progress, redact_logs
from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed, State
from prefect.tasks import exponential_backoff

from aeval.artifacts import CaseResult
from aeval.plan import CasePlan, ExecutionRecord

INTERNAL = "internal error"


def case_tags(plan: CasePlan) -> list[str]:
    """Prefect tags of one case chain: ``runtime:<name>`` (filterable in the UI; a tag
    concurrency limit on it bounds that runtime's chains across every flow run).

    One tag set per runtime, not per skill or case: before a tagged task run starts, Prefect
    asks the server for the slots of its tag set through a service of its own per distinct
    set (a thread, a client, a round trip; only "no limit" is cached, per set). A skill tag
    made that one service per skill: with 5 one-case skills the last chain started 2 s after
    the first and the model traffic took 1.42x its ideal instead of 1.09x
    (benchmarks/latency_workload.py --skills 5). The skill and case are in the task run's
    name (`case <skill>/<case>`), which the UI searches."""
    return [f"runtime:{plan.runtime}"]


def internal_error(plan: CasePlan, exc: BaseException) -> CaseResult:
    """The case result when aeval itself failed on this case (never blamed on the skill)."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return CaseResult(case_id=plan.case.id, runtime=plan.runtime, epoch=plan.epoch,
                      status="internal", dir=plan.rel_dir,
                      reason=f"{INTERNAL}: {type(exc).__name__}: {first}"[:400])


def chain(plan: CasePlan, retries: int = 2, retry_delay_s: float = 2.0) -> CaseResult:
    """Run one case chain: assertions, execute (a nested task run, with retries), grade."""
    execute = execute_case.with_options(
        retries=retries, retry_jitter_factor=0.5,
        retry_delay_seconds=exponential_backoff(retry_delay_s)(retries) if retries else 0)
    execution: ExecutionRecord | BaseException | None = None
    try:
        assertions = write_assertions_file(plan)
        with ThreadPoolExecutor(max_workers=1) as pool:
            probing = pool.submit(run_probe, plan) if needs_probe(plan) else None
            state = execute(plan, return_state=True)
            execution = state.result(raise_on_failure=False)
            probe = probing.result() if probing is not None else None
        return grade_and_publish(plan, assertions, execution, probe)
    except Exception as exc:  # a bug of aeval's own: the case is recorded, the run goes on
        return internal_error(plan, exc)
    finally:
        if isinstance(execution, ExecutionRecord) and not plan.keep_workspace:
            shutil.rmtree(execution.attempt_root, ignore_errors=True)


# The verdict as the task run's state, so the UI, the API and Automations see it: a skill
# defect is a Failed run named SkillDefect, an environment error (or aeval's own) Failed under
# another name, untested Completed under its own. The state's data is the CaseResult.
STATE_NAMES: dict[str, str] = {"fail": "SkillDefect", "error": "EnvironmentError",
                               "internal": "InternalError", "untested": "Untested",
                               "pass": "Completed"}


def case_state(result: CaseResult) -> State:
    """The task run's final state for ``result`` (its reason as the message)."""
    name = STATE_NAMES.get(result.status, "Completed")
    message = inert(f"{result.status}: {result.reason}")[:500]
    if result.status in ("fail", "error", "internal"):
        return Failed(name=name, message=message, data=result)
    return Completed(name=name, message=message, data=result)


@task(name="case", task_run_name="case {plan.label}", cache_policy=NO_CACHE)
def run_case(plan: CasePlan, retries: int = 2, retry_delay_s: float = 2.0) -> State:
    """One case chain: assertions, execute (with retries), grade. Ends in the verdict's named
    state (``case_state``) and emits ``aeval.case.<status>``; read the CaseResult with
    ``future.result(raise_on_failure=False)``."""
    # in whichever process runs it (a Dask worker too): its declared secrets leave no log
    declared = {n: os.environ[n] for n in plan.case.required_credentials if os.environ.get(n)}
    if declared:
        redact_logs(declared, add=True)
    ensure_inert_logs()  # a Dask worker's own handlers too
    result = chain(plan, retries, retry_delay_s)
    progress("%s: %s", plan.label, result.status.upper())
    emit_case_event(plan.run_id, plan.skill.name, plan.skill_key, plan.label, result)
    return case_state(result)
