"""`literal`: no model. Runs the case's `steps` verbatim, in order, in the workspace.

Each step is one bash tool call and its result. It stops at the first failing step and
records it; it never retries and never edits anything. This is the zero-key, deterministic
mode: it tests the documented workflow exactly as documented.
"""

from __future__ import annotations

import time
from typing import ClassVar

from aeval.errors import RuntimeUnavailable
from aeval.runtime import EventRecorder, RunRequest, RunResult
from aeval.shell import run_command


class LiteralRuntime:
    name: ClassVar[str] = "literal"
    skills_subdir: ClassVar[str | None] = ".agents/skills"
    needs_model: ClassVar[bool] = False
    config_dirs: ClassVar[tuple[str, ...]] = ()
    install_hint: ClassVar[str] = "nothing to install: part of aeval"

    def version(self) -> str | None:
        return "aeval"

    def check_available(self) -> None:
        return None

    def run(self, request: RunRequest, recorder: EventRecorder) -> RunResult:
        if not request.steps:
            raise RuntimeUnavailable(
                f"the literal runtime has nothing to run: case {request.case_id!r} declares no "
                "`steps` (add them to eval.config, or configure a model with --model)")
        start = time.monotonic()
        deadline = start + request.limits.timeout_s
        recorder.message("user", request.prompt)
        status, final = "completed", f"all {len(request.steps)} step(s) succeeded"
        for i, step in enumerate(request.steps, 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                status, final = "timeout", f"timeout before step {i}"
                break
            call_id = f"step-{i}"
            recorder.tool_call(call_id, "bash", {"command": step})
            r = run_command(step, request.workspace, request.env, remaining,
                            cap=request.limits.output_cap, redactor=recorder.redactor,
                            sandbox=request.sandbox)
            recorder.tool_result(call_id, "bash", r.ok, exit_code=r.exit_code,
                                 output=r.combined(), duration_s=round(r.duration_s, 3),
                                 truncated=r.truncated)
            if r.timed_out:
                status, final = "timeout", f"step {i} killed by the case timeout"
                break
            if not r.ok:
                status, final = "failed", f"step {i} of {len(request.steps)} exited {r.exit_code}"
                break
        recorder.end(status, final)
        return RunResult(status=status, final_text=final, wall_s=time.monotonic() - start)
