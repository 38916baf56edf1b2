"""The sandbox of every process a case makes aeval start: one policy (`sandbox_policy`) for
the attempt's processes and for the fresh sandbox the ``command`` checks run in. The policy
says what is shown (the attempt, the host tools the case declares); what it does not show
does not exist inside (`aeval.adapters.sandbox._view`): the original skill, the run store,
aeval's Prefect home and servers' state, other attempts, the host's home folders."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

from aeval.adapters.sandbox.bwrap import make_sandbox, sandbox_status
from aeval.adapters.sandbox.provision import attempt_env, cache_root
from aeval.adapters.sandbox.provision_npm import attempt_env as npm_attempt_env
from aeval.isolation.sandbox import Sandbox, SandboxPolicy, SandboxStatus
from aeval.isolation.shell import base_env
from aeval.run.plan import CasePlan, ExecutionRecord


def declared_tools(names: list[str]) -> list[Path]:
    """Where the host tools a case declares live on this machine (found on aeval's PATH, by
    their resolved path); a name not found (a Python module, a tool setup installs) adds
    nothing."""
    out: list[Path] = []
    for name in names:
        if "/" in name:
            continue
        found = shutil.which(name, path=os.environ.get("PATH", os.defpath))
        if found:
            out += [Path(found).absolute(), Path(found).resolve()]
    return list(dict.fromkeys(out))


def sandbox_policy(plan: CasePlan, root: Path, *,
                   writable: list[Path] | None = None) -> SandboxPolicy:
    """The one policy of every process a case makes aeval start (setup, preflight, steps,
    doc-test blocks, the agent's tools, the runtime CLIs, the probe, the introduced-error
    base runs, ``command`` checks): ``root`` and ``writable`` writable, the host tools the
    case declares shown, the case's network as declared; nothing else of the host."""
    return SandboxPolicy(
        root=root, writable=list(writable or []), shown=declared_tools(plan.case.host_tools),
        network=plan.case.network, output_cap=plan.run.output_cap,
        max_disk_bytes=plan.case.max_disk_mb << 20, memory_bytes=plan.case.max_memory_mb << 20)


def attempt_policy(plan: CasePlan, root: Path) -> SandboxPolicy:
    """The attempt rooted at ``root``: `sandbox_policy` with only that root writable."""
    return sandbox_policy(plan, root)


def attempt_sandbox(plan: CasePlan, root: Path) -> Sandbox:
    """The sandbox of the attempt rooted at ``root`` (bwrap, or none as ``plan.run.sandbox``
    allows); raises SandboxUnavailable under `require` when bubblewrap cannot run."""
    return make_sandbox(plan.run.sandbox, attempt_policy(plan, root))


def check_sandbox(plan: CasePlan, execution: ExecutionRecord,
                  credentials: dict[str, str]) -> tuple[Sandbox, dict[str, str]]:
    """A fresh sandbox and environment for the ``command`` checks of a graded attempt.

    The checks run in the workspace (their cwd; it stays writable), but nothing else of the
    attempt reaches them: HOME is a new empty folder (no ``~/.local/bin``, user site or rc
    file the attempt planted), PATH is aeval's own (aeval's read-only toolchain, then the
    system's; no folder the attempt wrote), and the rest of the attempt (its HOME) is not
    shown. The empty HOME goes when the sandbox does."""
    home = Path(tempfile.mkdtemp(prefix="aeval-check-home-"))
    entries, provided = provisioned(plan, execution)
    policy = sandbox_policy(plan, execution.workspace, writable=[home])
    policy = policy.model_copy(update={"readonly": [*policy.readonly, *entries]})
    sandbox = make_sandbox(plan.run.sandbox, policy)
    weakref.finalize(sandbox, shutil.rmtree, home, True)
    env = base_env(home, {**provided, "SKILL_DIR": str(execution.skill_copy), **credentials})
    return sandbox, env


def provisioned(plan: CasePlan, execution: ExecutionRecord
                ) -> tuple[list[Path], dict[str, str]]:
    """(cache entries, environment) of what the provisioning phase gave the graded attempt,
    for its ``command`` checks: a check that runs the skill's script imports what the script
    did (``PYTHONPATH``, the skill copy's ``node_modules`` link), from aeval's read-only
    cache entries, never from the attempt's HOME."""
    last = execution.attempts[-1] if execution.attempts else None
    entries: list[Path] = []
    env: dict[str, str] = {}
    if last is None:
        return entries, env
    for record in (last.provisioning, last.npm_provisioning):
        entry = cache_root() / record.key if record is not None else None
        if entry is not None and record.outcome != "not provisioned" and entry.is_dir():
            entries.append(entry)
    if last.provisioning is not None:
        entry = cache_root() / last.provisioning.key
        env |= attempt_env(entry if entry in entries else None, plan.case.network,
                           last.provisioning.importable)
    if last.npm_provisioning is not None:
        env |= npm_attempt_env(plan.case.network)
    return entries, env


def run_sandbox_status(mode: str) -> SandboxStatus:
    """What ``mode`` gives on this machine (probed once per process)."""
    return sandbox_status(mode)  # type: ignore[arg-type]
