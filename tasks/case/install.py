"""Install: a fresh workspace with the skill COPY where the runtime discovers skills, the case
files, the manifest; then `setup` and `preflight` commands."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from aeval.errors import EnvironmentFailure, MissingCredential, PreflightFailed
from aeval.isolation.redact import Redactor, declared_values
from aeval.isolation.sandbox import Sandbox
from aeval.isolation.shell import base_env, run_command
from aeval.isolation.startup_hooks import user_site
from aeval.isolation.workspace import Workspace, prepare_workspace
from aeval.run.plan import CasePlan
from aeval.run.store import atomic_write_text
from aeval.skill.contract import CONTRACT_FILES
from aeval.tasks.case.checkout import git_checkout


class SetupFailed(EnvironmentFailure):
    """A `setup` command failed: the case could not be installed."""


def resolve_credentials(plan: CasePlan, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Values of the declared credentials; a missing one is an environment error."""
    environ = os.environ if environ is None else environ
    missing = [n for n in plan.case.required_credentials if not environ.get(n)]
    if missing:
        raise MissingCredential(
            f"required credential(s) not set: {', '.join(missing)} (declared by "
            f"{plan.skill.name}/{plan.case.id} in required_credentials)")
    return {n: environ[n] for n in plan.case.required_credentials}


def case_redactor(plan: CasePlan) -> Redactor:
    """What the case's artifacts, logs and errors are redacted of: the values (where set) of
    its own credentials and of every other one the run declares (``plan.run.run_credentials``):
    a value one case declares is redacted from every case's artifacts, not only its own.
    The executor still gets only the case's own (``resolve_credentials``)."""
    return Redactor(declared_values([*plan.case.required_credentials, *plan.run.run_credentials]))


def tool_env(plan: CasePlan, ws: Workspace, credentials: dict[str, str],
             extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of every command of the case (``extra``: what the provisioning
    phase adds)."""
    return base_env(ws.home, {**(extra or {}), "SKILL_DIR": str(ws.skill_dir), **credentials})


def install(plan: CasePlan, attempt_root: Path, skills_subdir: str | None,
            config_dirs: tuple[str, ...], credentials: dict[str, str],
            log_path: Path, sandbox: Sandbox | None = None,
            extra_env: dict[str, str] | None = None,
            prepared: Callable[[Workspace], None] | None = None) -> Workspace:
    """Prepare the workspace, run setup, then preflight. Raises SetupFailed / PreflightFailed.
    ``prepared``: called on the fresh workspace before any command (what was provisioned,
    put in place)."""
    ws = prepare_workspace(attempt_root, plan.skill.path, plan.skill.name, skills_subdir,
                           plan.case.files, config_dirs, plan.run.install_skill,
                           plan.skill.skill.left_out, CONTRACT_FILES)
    # the Python user site, made while nothing of the attempt has run: its startup hooks
    # are watched from the start of the run (`aeval.isolation.startup_hooks`)
    user_site(ws.home).mkdir(parents=True, exist_ok=True)
    if prepared is not None:
        prepared(ws)
    env = tool_env(plan, ws, credentials, extra_env)
    redactor = case_redactor(plan)
    log: list[str] = []
    try:
        for phase, commands, error in (("setup", plan.case.setup, SetupFailed),
                                       ("preflight", plan.case.preflight, PreflightFailed)):
            for cmd in commands:
                r = run_command(cmd, ws.path, env, plan.case.timeout_s, plan.run.output_cap,
                                redactor=redactor, sandbox=sandbox)
                log.append(f"$ {cmd}  # {phase}, exit {r.exit_code}, {r.duration_s:.1f}s\n"
                           f"{r.combined()}\n")
                if not r.ok:
                    tail = redactor.text(r.combined().strip())[-500:]
                    raise error(f"{phase} command failed (exit {r.exit_code}): {cmd}\n{tail}")
        if plan.case.doc_test:  # a CI job always runs in a git checkout: so does the doc test
            log.append(git_checkout(ws.path, env, plan.case.timeout_s, plan.run.output_cap,
                                    redactor, sandbox))
    finally:
        atomic_write_text(log_path, "".join(log), redactor)
    return ws
