"""What a case run's verdict depends on, as one hash: the sweep skips a case run whose
fingerprint matches the one its last verdict was given for, and reuses that verdict.

The fingerprint covers what aeval hands the run: every entry of the skill folder as the
workspace copy gets it (path, type, mode, content or symlink target), the case as the
contract states it (prompt, steps, setup, assertions, limits, files) and the content of its
case files, the contract's tier, the runtime and its installed version, the executor and
grader models, the epoch, whether the skill is installed, the sandbox mode, and aeval's own
version (its verdict rules). It cannot cover what the skill reaches outside aeval: the
network, host tools, a service; `aeval sweep --no-skip` runs everything.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel

from aeval.workspace import IGNORED_NAMES, manifest, sha256_file

REUSABLE = frozenset({"pass", "fail"})
"""Verdicts worth reusing: those about the skill. An environment error, an internal error or
an untested case is run again."""


def folder_digest(root: Path) -> str:
    """One hash of a folder as the workspace copy sees it (ignored names left out)."""
    entries = {rel: v for rel, v in manifest(root).items()
               if not any(part in IGNORED_NAMES for part in rel.split("/"))}
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()


def _path_digest(path: Path) -> str:
    if path.is_dir():
        return folder_digest(path)
    if path.is_file():
        return sha256_file(path)
    return "missing"


def case_fingerprint(*, skill_digest: str, skill_dir: Path, case: BaseModel, tier: str,
                     runtime: str, runtime_version: str | None, model: str | None,
                     grader_model: str | None, epoch: int | None, install_skill: bool,
                     sandbox: str, aeval_version: str) -> str:
    """The fingerprint of one case run (``skill_digest``: `folder_digest` of ``skill_dir``,
    computed once per skill)."""
    files = {rel: _path_digest(skill_dir / rel) for rel in getattr(case, "files", [])}
    doc = {"skill": skill_digest, "case": case.model_dump(mode="json"), "files": files,
           "tier": tier, "runtime": runtime, "runtime_version": runtime_version,
           "model": model, "grader_model": grader_model, "epoch": epoch,
           "install_skill": install_skill, "sandbox": sandbox, "aeval": aeval_version}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()
