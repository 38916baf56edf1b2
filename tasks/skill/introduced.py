"""On a run of a change (``--changed-since BASE``, the MR flow): mark the environment errors
the change itself introduced (`aeval.verdicts.introduced`), so that they do not pass the gate.

For each case that ended `error` in setup, preflight or a missing credential, the skill is
read as it was at the merge base (``git archive`` of its folder, and of the marketplace's
``.aeval/evals`` for the per-name tier, examined as aeval examines any skill). A case the
base lacks, or whose setup, preflight or required credentials the change edited, is the
change's. Otherwise the base's own setup and preflight run once, in a fresh sandboxed
workspace of the base's skill: when they pass, the change broke them. What they printed is
kept as ``base-preflight.log`` in the case folder."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from aeval.adapters import get_runtime
from aeval.adapters.git import GitError, export_tree, find_toplevel, merge_base
from aeval.artifacts import AttemptRecord, CaseResult
from aeval.errors import EnvironmentFailure
from aeval.run.layout import CaseFiles
from aeval.run.plan import CasePlan
from aeval.run.store import read_model
from aeval.skill.contract import EvalCase, find_marketplace
from aeval.tasks.case.install import install, resolve_credentials
from aeval.tasks.case.sandboxing import attempt_sandbox
from aeval.tasks.run.examine import examine
from aeval.tasks.run.progress import progress
from aeval.verdicts.introduced import PHASES, introduced_reason

BASE_LOG = "base-preflight.log"


def last_error_type(case_dir: Path) -> str | None:
    """The error type of the case's last attempt (``attempts/<n>/attempt.json``)."""
    attempts = sorted((p for p in CaseFiles(case_dir).attempts.glob("*/attempt.json")),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not attempts:
        return None
    try:
        return read_model(attempts[-1], AttemptRecord).error_type
    except (OSError, ValueError):
        return None


class BaseSkills:
    """The skills of a run as they were at the merge base, read on demand (one export per
    skill folder, into one scratch folder)."""

    def __init__(self, base: str, head: str | None, scratch: Path):
        self.base, self.head, self.scratch = base, head or "HEAD", scratch
        self._cases: dict[Path, dict[str, EvalCase] | None] = {}
        self._roots: dict[Path, Path | None] = {}

    def _load(self, root: Path) -> None:
        repo = find_toplevel(root)
        if repo is None:
            self._cases[root], self._roots[root] = None, None
            return
        commit = merge_base(repo, self.base, self.head)
        rel = root.resolve().relative_to(repo.resolve()).as_posix()
        paths = [rel]
        mp = find_marketplace(root)
        mp_rel = None
        if mp is not None and mp.resolve().is_relative_to(repo.resolve()):
            mp_rel = mp.resolve().relative_to(repo.resolve()).as_posix()
            paths.append(f"{mp_rel}/.aeval/evals" if mp_rel != "." else ".aeval/evals")
        dest = self.scratch / str(len(self._roots))
        present = export_tree(repo, commit, paths, dest)
        base_root = dest / rel
        if rel not in present or not (base_root / "SKILL.md").is_file():
            self._cases[root], self._roots[root] = None, None  # the skill is new
            return
        marketplace = dest / mp_rel if mp_rel is not None else None
        ex = examine(base_root, marketplace)
        self._cases[root] = {c.id: c for c in ex.cases} if ex.valid else {}
        self._roots[root] = base_root

    def case(self, plan: CasePlan) -> tuple[EvalCase | None, Path | None]:
        """The plan's case at the base (None: not there) and the base's skill folder."""
        root = Path(plan.skill.path)
        if root not in self._cases:
            self._load(root)
        cases = self._cases[root]
        return (cases or {}).get(plan.case.id), self._roots[root]


def base_preflight_passes(plan: CasePlan, base_skill: Path, base_case: EvalCase) -> bool:
    """Whether the base's setup and preflight pass here: run once, in a fresh sandboxed
    workspace of the base's skill copy (the case folder keeps their log)."""
    skill = plan.skill.skill.model_copy(update={"path": base_skill})
    bplan = plan.model_copy(update={"skill": plan.skill.model_copy(update={"skill": skill}),
                                    "case": base_case})
    runtime = get_runtime(plan.runtime)
    Path(plan.run.workspace_root).mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="base-preflight-", dir=plan.run.workspace_root))
    sandbox = None
    try:
        credentials = resolve_credentials(bplan)
        sandbox = attempt_sandbox(bplan, root)
        install(bplan, root / "attempt", runtime.skills_subdir, runtime.config_dirs,
                credentials, plan.case_dir / BASE_LOG, sandbox)
        return True
    except EnvironmentFailure:
        return False
    finally:
        with contextlib.suppress(Exception):
            getattr(sandbox, "close", lambda: None)()
        shutil.rmtree(root, ignore_errors=True)


def mark_introduced(plans: list[CasePlan], results: list[CaseResult], base: str | None,
                    head: str | None) -> list[CaseResult]:
    """``results`` (one per plan, in order) with `CaseResult.introduced` set on the
    environment errors this change introduced; unchanged without a ``base``."""
    if not base:
        return results
    out = []
    with tempfile.TemporaryDirectory(prefix="aeval-base-") as scratch:
        skills = BaseSkills(base, head, Path(scratch))
        for plan, result in zip(plans, results, strict=True):
            error_type = last_error_type(plan.case_dir) if result.status == "error" else None
            if error_type not in PHASES:
                out.append(result)
                continue
            try:
                base_case, base_root = skills.case(plan)
            except (GitError, OSError, ValueError) as exc:
                progress("%s: could not read the base of the change (%s): its environment "
                         "error counts as the environment's", plan.label, exc, warning=True)
                out.append(result)
                continue
            why = introduced_reason(error_type, plan.case, base_case)
            if why is None and base_case is not None and base_root is not None \
                    and error_type != "MissingCredential":
                why = introduced_reason(error_type, plan.case, base_case,
                                        base_preflight_passes(plan, base_root, base_case))
            if why is None:
                out.append(result)
                continue
            progress("%s: environment error introduced by this change: %s", plan.label, why,
                     warning=True)
            out.append(result.model_copy(update={
                "introduced": why, "reason": f"{result.reason} (introduced by this change: "
                                             f"{why})"}))
    return out


@task(name="introduced", task_run_name="introduced {base}", cache_policy=NO_CACHE)
def mark_introduced_errors(plans: list[CasePlan], results: list[CaseResult], base: str | None,
                           head: str | None) -> list[CaseResult]:
    """Mark the environment errors the change introduced (a run of a change only)."""
    return mark_introduced(plans, results, base, head)
