"""The documented-workflow probe: while an agent runtime runs a case, the case's `steps` also
run verbatim (the literal runtime, no model) in a fresh workspace of their own. When they fail
on the skill's side, the case fails the first attempt (structural S3) even if the agent worked
around the defect without editing the skill — the case the paper's grader had to catch by
reading the transcript.

    <case>/probe/events.jsonl transcript.md attempts/1/...
"""

from __future__ import annotations

import re
import shutil

from aeval.artifacts import ProbeResult
from aeval.errors import EnvironmentFailure
from aeval.events import ToolCallEvent, ToolResultEvent, calls_by_id, read_events
from aeval.run.layout import CaseFiles
from aeval.run.plan import CasePlan
from aeval.tasks.case.attempt import Attempt

# A step that failed because the host lacks a tool or module says nothing about the skill.
_MISSING_TOOL = re.compile(r"command not found|No such file or directory: '?[a-z]|"
                           r"ModuleNotFoundError: No module named|"
                           r"ImportError: No module named|not installed", re.I)


def probe_plan(plan: CasePlan) -> CasePlan:
    return plan.model_copy(update={"runtime": "literal", "runtime_options": {}})


def run_probe(plan: CasePlan) -> ProbeResult:
    """Run the case's steps under literal in their own workspace; never raises."""
    case_dir = plan.files.probe
    rel = str(case_dir.relative_to(plan.run.run_dir))
    attempt = Attempt(probe_plan(plan), case_dir=case_dir)
    try:
        record = attempt.execute()
    except EnvironmentFailure as exc:
        return ProbeResult(status="inconclusive", dir=rel,
                           evidence=f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    except Exception as exc:  # aeval's own failure: say so, decide nothing
        return ProbeResult(status="inconclusive", dir=rel,
                           evidence=f"internal error: {type(exc).__name__}: {exc}"[:300])
    finally:
        if not plan.run.keep_workspace:
            shutil.rmtree(attempt.root, ignore_errors=True)
    n = len(plan.case.steps)
    if record.result.status == "completed":
        return ProbeResult(status="passed", dir=rel,
                           evidence=f"all {n} documented step(s) succeeded as written")
    events = read_events(CaseFiles(case_dir).events)
    calls = calls_by_id(events)
    failed = next((e for e in events if isinstance(e, ToolResultEvent) and not e.ok), None)
    if failed is None or record.result.status == "timeout":
        return ProbeResult(status="inconclusive", dir=rel,
                           evidence=f"the steps did not finish: {record.result.final_text}")
    call = calls.get(failed.call_id)
    cmd = call.input.get("command", "") if isinstance(call, ToolCallEvent) else ""
    tail = (failed.output.strip().splitlines() or [""])[-1][:300]
    where = f"probe event {failed.seq} exited {failed.exit_code}: {tail} — `{str(cmd)[:200]}`"
    if failed.exit_code == 127 or _MISSING_TOOL.search(failed.output):
        return ProbeResult(status="inconclusive", dir=rel,
                           evidence=f"a host tool or module is missing ({where})")
    return ProbeResult(status="failed", dir=rel, evidence=where)
