"""One case chain as one task: assertions (before anything runs) -> execute (an attempt:
install, run, Δ, outputs; beside it, for an agent runtime on a case with `steps`, the
documented-workflow probe) -> grade. No worker waits on a dependency: the chain runs start to
end in the worker that picked it up.

One task run per case. An attempt that ends in a TransientError (a model API's 429, a
runtime that lost its connection) while retries are left is raised out of the chain, and
Prefect retries the case's task run (``case_task``: ``retries``, exponential backoff with
jitter, ``retry_on_transient``); the next try starts a fresh workspace and attempt N+1 beside
the first, and the case's state history shows AwaitingRetry / Retrying. Assertions, execute
and grading are plain calls inside it: each task run costs the client and the server its
state events and rows (a nested `execute` task run was half the task runs the server
recorded, and a measurable share of a large literal run's wall: benchmarks/README.md). The
case's verdict table is the chain's markdown artifact.

Otherwise the chain never raises: whatever happens becomes the case's status (an execution
failure, the last transient one included, is `error` with its reason; a Prefect API call
refused, reset or timed out after the client's retries is `error` too, and the case runs
again on ``--resume``; a bug of aeval's own is recorded as an internal error).

The chain's task run carries no tag (``aeval.tasks._engine.limits``): starting it costs no
request of its own to the server; its task run and states reach the server as events. What
makes Prefect work here (the API failure classification, the throttle by runtime, the retry
rule) is aeval's engine (`aeval.tasks._engine`); this module is the case's own."""

from __future__ import annotations

import contextlib
import shutil
from concurrent.futures import ThreadPoolExecutor

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from prefect.states import Completed, Failed, State

from aeval.artifacts import AssertionsFile, CaseResult
from aeval.isolation.redact import declared_values
from aeval.isolation.shell import Stopped, stopping
from aeval.run.plan import AttemptOutcome, CasePlan
from aeval.run.store import read_model
from aeval.tasks._engine.failures import api_failure
from aeval.tasks._engine.limits import throttle
from aeval.tasks._engine.retries import RetryCase, retry_on_transient, retry_options, run_count
from aeval.tasks._engine.runners import ran_elsewhere
from aeval.tasks._engine.schedule import outcome
from aeval.tasks.case.assertions import needs_probe, write_assertions_file
from aeval.tasks.case.attempt import run_attempt
from aeval.tasks.case.grade import grade_and_publish
from aeval.tasks.case.install import case_redactor
from aeval.tasks.case.probe import run_probe
from aeval.tasks.run.prefect_artifacts import emit_case_event, inert
from aeval.tasks.run.progress import CONSOLE, ensure_inert_logs, progress, redact_logs

INTERNAL = "internal error"


PREFECT_API = "Prefect API"


def api_error(plan: CasePlan, failure: str) -> CaseResult:
    """The case result when Prefect's API failed the case's chain after its retries: `error`
    (exit 3, retry), never the skill's fault. Its grading.json, if the chain got that far,
    is moved aside, so ``aeval run --resume`` runs the case again."""
    graded = plan.files.grading
    if graded.is_file():
        graded.replace(plan.files.unrecorded)
    return plan.result(status="error",
                       reason=inert(f"{PREFECT_API}: {failure} (after the client's retries); "
                                    "`aeval run --resume` runs this case again")[:400])


def lost_chain(plan: CasePlan, outcome: object) -> CaseResult:
    """The result of a case chain whose task run ended without a CaseResult (``outcome``:
    what its future gave or raised): `error` when Prefect's API failed it, else internal."""
    if isinstance(outcome, BaseException):
        failure = api_failure(outcome)
        return api_error(plan, failure) if failure else internal_error(plan, outcome)
    return internal_error(plan, TypeError(f"the case chain returned {type(outcome).__name__}"))


def chain_result(plan: CasePlan, chain: PrefectFuture) -> CaseResult:
    """A chain's CaseResult (its task run is Failed for a failing case: the result is the
    state's data); when it has none, because Prefect's API failed the task run around the
    chain or the engine raised, the case's `error` or internal result (``lost_chain``), and
    the other cases go on. A chain that ran in a Dask worker printed its progress line
    there: it is printed here too, as a thread's would be."""
    result = outcome(chain)
    result = result if isinstance(result, CaseResult) else lost_chain(plan, result)
    if ran_elsewhere(chain):
        CONSOLE.info("%s: %s", plan.label, result.status.upper())
    return result


def internal_error(plan: CasePlan, exc: BaseException) -> CaseResult:
    """The case result when aeval itself failed on this case (never blamed on the skill)."""
    first = (case_redactor(plan).text(str(exc)).strip().splitlines() or [""])[0]
    return plan.result(status="internal",
                       reason=f"{INTERNAL}: {type(exc).__name__}: {first}"[:400])


def case_task(retries: int = 2, retry_delay_s: float = 2.0):
    """The case task with a run's retry settings: ``retries`` after a transient failure,
    waiting ``retry_delay_s`` doubling each time, with jitter."""
    return run_case.with_options(**retry_options(retries, retry_delay_s))


def _assertions(plan: CasePlan) -> AssertionsFile:
    """The case's assertions: written before its first attempt; a retry keeps them."""
    path = plan.files.assertions
    if run_count() > 1 and path.is_file():
        return read_model(path, AssertionsFile)
    return write_assertions_file(plan)


def _logged(exc: BaseException) -> BaseException:
    """Log the attempt's exception with its traceback in the case's task run log (the
    console shows it with -v; the log handlers redact and neutralize it), as Prefect logs
    a task run that raised; returns it."""
    with contextlib.suppress(Exception):  # outside a run there is no run logger
        from prefect import get_run_logger

        get_run_logger().error("The attempt failed with %s: %s", type(exc).__name__,
                               str(exc)[:500], exc_info=exc)
    return exc


def chain(plan: CasePlan, retries: int = 2) -> CaseResult:
    """Run one case chain: assertions, execute (one attempt), grade. Raises RetryCase when the
    attempt's failure is transient and Prefect has ``retries`` left for this task run."""
    outcome: AttemptOutcome | None = None
    try:
        assertions = _assertions(plan)
        with ThreadPoolExecutor(max_workers=1) as pool:
            probing = pool.submit(run_probe, plan) if needs_probe(plan) else None
            outcome = run_attempt(plan)
            if (exc := outcome.failure) is not None:
                if outcome.transient and run_count() <= retries:  # Prefect runs it again
                    why = case_redactor(plan).text(f"{type(exc).__name__}: {exc}")
                    raise RetryCase(why[:300]) from exc
                _logged(exc)  # the attempt's failure, graded below
            probe = probing.result() if probing is not None else None
        if stopping():  # a signal killed its commands: cancelled, never graded
            raise Stopped(plan.key)
        return grade_and_publish(plan, assertions, outcome, probe)
    except RetryCase:
        raise
    except Exception as exc:  # the case is recorded, the run goes on
        failure = api_failure(exc)  # Prefect's API refused the case's artifact
        return api_error(plan, failure) if failure else internal_error(plan, exc)
    finally:
        if outcome is not None and outcome.record and not plan.run.keep_workspace:
            shutil.rmtree(outcome.record.attempt_root, ignore_errors=True)


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


@task(name="case", task_run_name="case {plan.label}", cache_policy=NO_CACHE,
      retry_condition_fn=retry_on_transient)
def run_case(plan: CasePlan, retries: int = 2, runtime_limit: int | None = None) -> State:
    """One case chain: assertions, execute, grade; holding one of ``runtime_limit`` slots of
    its runtime in this process (``throttle``; not held while Prefect waits to retry). Ends in
    the verdict's named state (``case_state``) and emits ``aeval.case.<status>``; read the
    CaseResult with ``future.result(raise_on_failure=False)`` (``lost_chain`` when it is none).
    Submit it as ``case_task(retries, delay)``: ``retries`` here must be the task's own."""
    # in whichever process runs it (a Dask worker too): no secret of the run leaves a log
    declared = declared_values([*plan.case.required_credentials, *plan.run.run_credentials])
    if declared:
        redact_logs(declared, add=True)
    ensure_inert_logs()  # a Dask worker's own handlers too
    with throttle(plan.runtime, runtime_limit):
        result = chain(plan, retries)
    progress("%s: %s", plan.label, result.status.upper())
    emit_case_event(plan.run.run_id, plan.skill.name, plan.skill.key, plan.label, result)
    return case_state(result)
