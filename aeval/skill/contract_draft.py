"""A starter eval.config for a skill that has none (`aeval init`).

Two sources, one output (an `EvalConfig`, the same model the schema is generated from):

- **Drafted by a model** from SKILL.md and the skill's file list (`draft_input` is what the
  model sees; ``eval_skill/agents/contract_writer.md`` is its instruction). The answer is
  checked by `check_draft` beyond the schema: at most the cases asked for, every `files`
  entry present in the skill, deterministic assertions before natural-language ones.
- **A template** from the doc test of SKILL.md's shell blocks (`template_config`, given
  what each block did when `aeval.tasks.skill.doc_probe` ran them in the sandbox, sorted by
  `aeval.verdicts.self_contained`): only
  what the doc test found self-contained becomes a step (a block that ran cleanly and
  needs nothing a block that did not would have made; or one that broke in the skill's own
  code: that defect is the skill's), rewritten from the skill folder's point of view to
  the workspace's (a path the skill ships becomes ``$SKILL_DIR/<path>``; the skill's
  fixture folders are copied into the workspace). Every other block stays in `steps` as a
  commented-out TODO step that names what the author must supply (``needs pdftotext``,
  the reader's input file, a placeholder): a bash comment runs as nothing, so the first
  run never fails on what the reader brings. The prose fields the author must write carry
  `TODO_MARK` too, and `unfilled` (and so `aeval validate`) lists them all.

Writing is atomic and never loses a contract: `write_contract` keeps an existing file
beside the new one (``eval.config.orig``, numbered when that exists too).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from aeval.errors import Problem
from aeval.skill.contract import CONFIG_NAMES, EvalConfig
from aeval.skill.shell_blocks import SKILL_FOLDERS, BlockPlan, DocBlock, doc_blocks, plan_blocks
from aeval.skill.skill_md import Skill

TODO_MARK = "TODO(aeval init)"
FIXTURE_FOLDERS = ("fixtures", "examples", "samples", "testdata", "test_data", "data")
MAX_SKILL_MD_CHARS = 60_000  # of SKILL.md the drafting model sees (head and tail)
MAX_FILES_LISTED = 200
MAX_TEMPLATE_STEPS = 20
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".aeval"})
_WORD = re.compile(r"(?<![\w$/.~-])((?:\./)?[A-Za-z0-9_][\w.-]*(?:/[\w.-]+)*/?)(?![\w/])")


class DraftRejected(ValueError):
    """A drafted contract that the skill contradicts (beyond what the schema checks)."""


# ---- what the drafting model sees -----------------------------------------------------------


def skill_files(skill: Skill, limit: int = MAX_FILES_LISTED) -> list[str]:
    """The skill's files, relative to its folder, sorted (dependency and VCS folders left
    out; symlinks listed, never followed), at most ``limit``."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(skill.path, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        rel = Path(dirpath).relative_to(skill.path)
        for name in sorted(filenames):
            out.append(str(rel / name) if str(rel) != "." else name)
            if len(out) >= limit:
                return out
    return out


def _bounded(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    half = cap // 2
    return f"{text[:half]}\n[... {len(text) - cap} characters left out ...]\n{text[-half:]}"


def draft_input(skill: Skill, cases: int) -> str:
    """The user message of the drafting call: the skill's SKILL.md (bounded), its files and
    how many cases to write. The skill's text is data, fenced as such."""
    md = skill.skill_md.read_text(encoding="utf-8", errors="replace")
    files = skill_files(skill)
    return (f"Write an eval.config with {cases} case(s) for the skill `{skill.name}`.\n\n"
            f"<skill_files count=\"{len(files)}\">\n" + "\n".join(files) +
            "\n</skill_files>\n\n<skill_md>\n" + _bounded(md, MAX_SKILL_MD_CHARS) +
            "\n</skill_md>\n")


def check_draft(config: EvalConfig, skill: Skill, cases: int) -> EvalConfig:
    """``config`` as it will be written, or DraftRejected saying what contradicts the skill:
    more cases than asked for, a `files` entry the skill does not have, a case with no
    assertion at all. Deterministic assertions are moved before natural-language ones."""
    if len(config.evals) > cases:
        raise DraftRejected(f"{len(config.evals)} cases, at most {cases} were asked for")
    for i, case in enumerate(config.evals):
        for j, f in enumerate(case.files):
            if not (skill.path / f).exists():
                raise DraftRejected(f"evals[{i}].files[{j}]: {f!r} is not a file or folder "
                                    f"of the skill (its files are listed in <skill_files>)")
        if not case.assertions:
            raise DraftRejected(f"evals[{i}].assertions: empty; give at least one check")
    data = config.model_dump(mode="json", exclude_none=True)
    for case in data["evals"]:
        case["assertions"].sort(key=lambda a: isinstance(a, str))  # stable: typed first
    return EvalConfig.model_validate(data)


# ---- the template (no model) ----------------------------------------------------------------


def _to_workspace(code: str, skill: Skill) -> str:
    """A SKILL.md block (paths relative to the skill folder) as a contract step (run from the
    workspace root): every word that names a file or folder the skill ships becomes
    ``"$SKILL_DIR/<word>"``; fixture folders are copied, so they keep their names."""
    def swap(m: re.Match) -> str:
        word = m.group(1)
        rel = word[2:] if word.startswith("./") else word
        head = rel.split("/", 1)[0]
        if head in FIXTURE_FOLDERS or not rel or not (skill.path / rel).exists() \
                or head.startswith("."):
            return word
        if "/" not in rel.rstrip("/") and head not in SKILL_FOLDERS \
                and not (skill.path / rel).is_file():
            return word
        return f'"$SKILL_DIR/{rel}"'
    return _WORD.sub(swap, code)


def documented_blocks(skill: Skill) -> list[DocBlock]:
    """SKILL.md's shell blocks as the doc test gets them (each with its line and the prose
    before it): what `aeval.tasks.skill.doc_probe` runs and `template_config` sorts."""
    return doc_blocks(skill.fences(), [code.replace("\0", "") for _, code in
                                       skill.shell_blocks()], skill.prose())


def _todo_step(code: str, line: int, what: str) -> str:
    """A block the author must make runnable, as a step that runs as nothing: a bash comment
    whose first line says what it needs, then the block, commented out."""
    what = " ".join(what.split())[:300]
    body = "\n".join(f"# {ln}" if ln.strip() else "#" for ln in code.splitlines())
    return (f"# {TODO_MARK}: SKILL.md line {line}: {what}; make it runnable here (setup, "
            f"host_tools, files, a real value), then uncomment it\n{body}")


def template_config(skill: Skill, blocks: list[tuple[BlockPlan, str | None]] | None = None,
                    not_run: str = "not run by aeval init") -> tuple[dict[str, Any], list[str]]:
    """A starter contract, as data (JSON-ready): one case whose steps are the blocks the doc
    test found self-contained (``blocks``: each planned block of `documented_blocks` with
    None, a step, or what it needs: `aeval.verdicts.self_contained.sort_blocks`; None: the
    doc test did not run, ``not_run`` says why, and no block is a step), the others as
    commented-out TODO steps saying what they need,
    fixture folders as `files`, one deterministic check (every step succeeds) and the fields
    only the author can write marked with `TODO_MARK`; and the blocks left out or left to the
    author, with the reason (``SKILL.md line N: why``).

    Validates as an `EvalConfig` (so it runs at once), and `unfilled` lists what is left."""
    plans = plan_blocks(documented_blocks(skill))
    sorted_ = blocks if blocks is not None else [
        (p, p.reason if p.action == "skip" else not_run) for p in plans
        if p.action == "run" or p.taints]
    kept = {(p.line, p.code) for p, _ in sorted_}
    steps = [_to_workspace(p.code, skill) if why is None
             else _todo_step(_to_workspace(p.code, skill), p.line, why) for p, why in sorted_]
    skipped = [f"SKILL.md line {p.line}: {p.reason}" for p in plans
               if p.action == "skip" and (p.line, p.code) not in kept]
    skipped += [f"SKILL.md line {p.line}: {why}" for p, why in sorted_ if why is not None]
    files = [d for d in FIXTURE_FOLDERS if (skill.path / d).is_dir()
             and not (skill.path / d).is_symlink()]
    case: dict[str, Any] = {
        "id": "documented-workflow",
        "prompt": f"{TODO_MARK}: the task a user would give, in their words. The skill says "
                  f"it is for: {' '.join(skill.description.split())}",
        "expected_outcome": f"{TODO_MARK}: what a successful run leaves behind (files under "
                            "outputs/, a printed result).",
        "files": files,
        "steps": steps[:MAX_TEMPLATE_STEPS],
        "assertions": [
            {"type": "commands_succeeded"},
            f"{TODO_MARK}: replace with checks of the result: file_exists, file_contains, "
            "json_path or command assertions on what the steps write.",
        ],
        "timeout_s": 600,
    }
    config: dict[str, Any] = {"evals": [case], "triggers": {
        "should": [f"{TODO_MARK}: a request that should load this skill without naming it"],
        "should_not": [f"{TODO_MARK}: a nearby request this skill is not for"]}}
    EvalConfig.model_validate(config)
    return config, skipped


def unfilled(data: Any, where: str, path: str = "") -> list[Problem]:
    """Every field of a contract (as loaded JSON) that still holds `TODO_MARK`: what the
    author has left to write after `aeval init` made a template."""
    if isinstance(data, str):
        if TODO_MARK not in data:
            return []
        head = data.split("\n", 1)[0]
        if head.startswith(f"# {TODO_MARK}: "):  # a block the author must make runnable
            return [Problem(where, path, "still aeval init's placeholder: "
                                         f"{head[len(TODO_MARK) + 4:]}")]
        return [Problem(where, path, "still aeval init's placeholder: write it")]
    out: list[Problem] = []
    if isinstance(data, dict):
        for key, value in data.items():
            out += unfilled(value, where, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += unfilled(value, where, f"{path}[{i}]")
    return out


# ---- writing --------------------------------------------------------------------------------


def existing_contract(skill_dir: Path) -> Path | None:
    """The per-skill contract file the skill already has, if any."""
    for name in CONFIG_NAMES:
        p = Path(skill_dir) / name
        if p.is_file() or p.is_symlink():
            return p
    return None


def write_contract(skill_dir: Path, config: dict[str, Any], force: bool = False) -> tuple[
        Path, Path | None]:
    """Write ``skill_dir/eval.config`` atomically. An existing contract is never lost: without
    ``force`` FileExistsError; with it, the old file is renamed to ``eval.config.orig`` (or
    ``.orig.N``) first. Returns (written path, where the old one went or None)."""
    skill_dir = Path(skill_dir)
    old = existing_contract(skill_dir)
    if old is not None and not force:
        raise FileExistsError(str(old))
    text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".eval.config.", dir=skill_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        kept = None
        if old is not None:
            kept = skill_dir / f"{old.name}.orig"
            n = 1
            while kept.exists() or kept.is_symlink():
                kept, n = skill_dir / f"{old.name}.orig.{n}", n + 1
            os.rename(old, kept)
        target = skill_dir / "eval.config"
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target, kept
