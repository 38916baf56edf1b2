"""What a case run's verdict depends on, as one hash: the sweep skips a case run whose
fingerprint matches the one its last verdict was given for, and reuses that verdict.

The fingerprint covers what aeval hands the run:

- every entry of the skill folder as the workspace copy gets it (path, type, mode, content
  or symlink target; the copy leaves out only what `aeval.skill.skill_md.Skill.left_out`
  says: every file git tracks counts, a shipped ``__pycache__`` too), and every entry of the
  case's files as *they* are copied: whole, nothing left out (`CASE_FILES_IGNORED`), so a
  file under ``__pycache__`` or ``.git`` in a case folder, which the workspace gets, counts;
- the case as the contract states it (prompt, steps, setup, preflight, assertions, limits,
  files, network), the contract's tier;
- the runtime, its installed version and its own configuration: its options, the model API
  base URL (another model server gives other verdicts), the output cap, the distractor
  skills installed beside the skill, and the text of the prompts that shape the run (the
  executor's, the assertion writer's, the grader's);
- the executor and grader models, the epoch, whether the skill is installed, the sandbox
  mode, and aeval's own version (its verdict rules).

It cannot cover what the skill reaches outside aeval: the network, host tools, a service;
`aeval sweep --no-skip` runs everything.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from aeval.isolation.copying import UNTRACKED_JUNK, is_left_out
from aeval.isolation.workspace import manifest, sha256_file

REUSABLE = frozenset({"pass", "fail"})
"""Verdicts worth reusing: those about the skill. An environment error, an internal error or
an untested case is run again."""
SKILL_COPY_IGNORED = UNTRACKED_JUNK
"""What the workspace's skill copy leaves out outside a git work tree
(`aeval.isolation.copying.skill_copy_rule`)."""
CASE_FILES_IGNORED: frozenset[str] = frozenset()
"""What the workspace's copy of a case's files leaves out: nothing."""


def folder_digest(root: Path, ignored: Iterable[str] = SKILL_COPY_IGNORED,
                  left_out: list[str] | None = None) -> str:
    """One hash of a folder as a workspace copy sees it: every entry but those with a path
    part in ``ignored``, or, given ``left_out`` (`aeval.skill.skill_md.Skill.left_out`: the
    folder is in a git work tree), every entry but those in it and ``.git``."""
    skip = frozenset(ignored) if left_out is None else frozenset({".git"})
    out = frozenset(left_out or ())
    entries = {rel: v for rel, v in manifest(root).items()
               if not any(part in skip for part in rel.split("/"))
               and not is_left_out(rel, out)}
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()


def _path_digest(path: Path) -> str:
    if path.is_dir():
        return folder_digest(path, CASE_FILES_IGNORED)
    if path.is_file():
        return sha256_file(path)
    return "missing"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def case_fingerprint(*, skill_digest: str, skill_dir: Path, case: BaseModel, tier: str,
                     runtime: str, runtime_version: str | None, model: str | None,
                     grader_model: str | None, epoch: int | None, install_skill: bool,
                     sandbox: str, aeval_version: str, api_base: str | None = None,
                     runtime_config: dict[str, Any] | None = None) -> str:
    """The fingerprint of one case run (``skill_digest``: `folder_digest` of ``skill_dir``,
    computed once per skill; ``runtime_config``: the runtime's own configuration, as
    `aeval.tasks.run.reuse` gathers it)."""
    files = {rel: _path_digest(skill_dir / rel) for rel in getattr(case, "files", [])}
    doc = {"skill": skill_digest, "case": case.model_dump(mode="json"), "files": files,
           "tier": tier, "runtime": runtime, "runtime_version": runtime_version,
           "model": model, "grader_model": grader_model, "epoch": epoch,
           "install_skill": install_skill, "sandbox": sandbox, "aeval": aeval_version,
           "api_base": api_base, "runtime_config": runtime_config or {}}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()
