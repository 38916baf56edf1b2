"""The sandbox of one attempt: the policy aeval applies to every process a case starts, and
the fresh sandbox the ``command`` checks run in."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path

from aeval.adapters.sandbox import make_sandbox, sandbox_status

from aeval.plan import CasePlan, ExecutionRecord
from aeval.sandbox import Sandbox, SandboxPolicy, SandboxStatus
from aeval.shell import base_env


def service_paths(root: Path) -> list[Path]:
    """aeval's own service state, hidden from every attempt: the Prefect home (its database
    holds every flow and task run and their logs; its profiles may hold an API key or auth
    string). Not when it would hide the attempt itself, the interpreter or aeval's own files
    (a PREFECT_HOME that holds them)."""
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    try:
        home = home.resolve()
    except OSError:
        return []
    keep = [Path(root).resolve(), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
            Path(__file__).resolve().parent.parent]  # aeval's own files (and a checkout's CLIs)
    if home == Path(home.anchor) or any(k.is_relative_to(home) for k in keep):
        return []
    return [home]


def attempt_policy(plan: CasePlan, root: Path) -> SandboxPolicy:
    """Only the attempt root writable; the original skill folder, the run store and aeval's
    service state (`service_paths`) hidden."""
    return SandboxPolicy(root=root, hidden=[plan.skill.path, plan.layout.store.resolve(),
                                            *service_paths(root)],
                         network=plan.case.network, output_cap=plan.output_cap)


def attempt_sandbox(plan: CasePlan, root: Path) -> Sandbox:
    """The sandbox of the attempt rooted at ``root`` (bwrap, or none as ``plan.sandbox``
    allows); raises SandboxUnavailable under `require` when bubblewrap cannot run."""
    return make_sandbox(plan.sandbox, attempt_policy(plan, root))


def check_sandbox(plan: CasePlan, execution: ExecutionRecord,
                  credentials: dict[str, str]) -> tuple[Sandbox, dict[str, str]]:
    """A fresh sandbox and environment for the ``command`` checks of a graded attempt.

    The checks run in the workspace (their cwd; it stays writable), but nothing else of the
    attempt reaches them: HOME is a new empty folder (no ``~/.local/bin``, user site or rc
    file the attempt planted), PATH is aeval's own (aeval's read-only toolchain, then the
    host's; no folder the attempt wrote), and the attempt's HOME is hidden with the original
    skill and the run store. The empty HOME goes when the sandbox does."""
    home = Path(tempfile.mkdtemp(prefix="aeval-check-home-"))
    policy = SandboxPolicy(
        root=execution.workspace, writable=[home],
        hidden=[plan.skill.path, plan.layout.store.resolve(), execution.attempt_root],
        network=plan.case.network, output_cap=plan.output_cap)
    sandbox = make_sandbox(plan.sandbox, policy)
    weakref.finalize(sandbox, shutil.rmtree, home, True)
    env = base_env(home, {"SKILL_DIR": str(execution.skill_copy), **credentials})
    return sandbox, env


def run_sandbox_status(mode: str) -> SandboxStatus:
    """What ``mode`` gives on this machine (probed once per process)."""
    return sandbox_status(mode)  # type: ignore[arg-type]
