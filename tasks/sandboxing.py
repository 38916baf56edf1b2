"""The sandbox of one attempt: the policy aeval applies to every process a case starts."""

from __future__ import annotations

from pathlib import Path

from aeval.adapters.sandbox import make_sandbox, sandbox_status

from aeval.plan import CasePlan
from aeval.sandbox import Sandbox, SandboxPolicy, SandboxStatus


def attempt_policy(plan: CasePlan, root: Path) -> SandboxPolicy:
    """Only the attempt root writable; the original skill folder and the run store hidden."""
    return SandboxPolicy(root=root, hidden=[plan.skill.path, plan.layout.store.resolve()],
                         network=plan.case.network, output_cap=plan.output_cap)


def attempt_sandbox(plan: CasePlan, root: Path) -> Sandbox:
    """The sandbox of the attempt rooted at ``root`` (bwrap, or none as ``plan.sandbox``
    allows); raises SandboxUnavailable under `require` when bubblewrap cannot run."""
    return make_sandbox(plan.sandbox, attempt_policy(plan, root))


def run_sandbox_status(mode: str) -> SandboxStatus:
    """What ``mode`` gives on this machine (probed once per process)."""
    return sandbox_status(mode)  # type: ignore[arg-type]
