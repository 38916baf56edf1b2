"""The recall corpus: marketplaces written the way public ones are (STYLES, and issues 45
and 49's STYLES_45), and the defects planted in them (`plants.json`), validated by the
pydantic models below.

A marketplace lives in ``marketplaces/<name>/``; a plant names the skill folder it edits
(relative to the marketplace), the edits (applied to a copy, never to the committed
corpus) and what a finding must name: the line of SKILL.md (or of a reference file) and a
short cause (the missing path, the rejected action or flag).

Used by ``tests/corpus/test_plants.py`` (the corpus holds what it claims),
``tests/e2e/test_recall_corpus.py`` and ``benchmarks/recall.py`` (what aeval finds in it).
Imports nothing of aeval: it builds the inputs and reads the artifacts (run.json,
grading.json, eval_metadata.json) as files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

HERE = Path(__file__).resolve().parent
MARKETPLACES = HERE / "marketplaces"
PLANTS_FILE = HERE / "plants.json"

STYLES: dict[str, str] = {
    # issue 18: the first three, at least ten skills each
    "atelier": "like anthropics/skills: skills/<name>/, office formats, LICENSE files",
    "codex-kit": "like openai/skills: skills/.system|.curated|.experimental/<name>/",
    "workbench": "like obra/superpowers: a plugin with skills/ and .claude/skills/",
    # issue 31: styles the first three never showed, at least six skills each
    "sentinel": "a security team's Claude Code plugins: plugins/<p>/skills/<s>/, {baseDir} "
                "and ${CLAUDE_SKILL_DIR} script calls, prose-heavy references, semgrep/codeql",
    "lab-bench": "a scientific collection: scientific-skills/<name>/, `uv run` PEP 723 "
                 "scripts, heavy dependencies (rdkit) checked by the script, layout trees",
    "launchpad": "a vendor's collection: /mnt/skills/public/<name>/ paths, multi-step skills "
                 "(install, scaffold, bundle), console sessions with `> ` continuations",
}
STYLES_45: dict[str, str] = {
    # issues 45 and 49: styles none of the six shows, at least six skills each
    "forge-kit": "a vendor's engineering skills driven by `gh` and `uv run` (PEP 723 headers, "
                 "requires-python), a repository-aware release skill, a token-needing audit",
    "ops-desk": "a one-author devops and quant collection: plugins/<p>/skills/<s>/ scripts "
                "called through the marketplace's path helper (`$(./bin/mp-path <p>)/...`) or "
                "${CLAUDE_PLUGIN_ROOT}, a skill setting its own SKILL_DIR, prose that "
                "abbreviates a script without an exec bit (`scripts/make_report.py monthly`)",
    "reelhouse": "a multi-agent media pipeline: a bundled CLI (bin/mediactl), JS/TS helpers "
                 "with local imports, npx tools, a package.json-aware audit, reference files "
                 "with `<site-root>/<slug>/` placeholders",
}
"""Marketplaces in the styles of issues 45 and 49. test_plants.py checks them like the
others (the corpus holds what it claims); test_recall_corpus.py asserts only the
marketplaces of RECALL_ASSERTED (see there)."""

STYLES_MONOREPO: dict[str, str] = {
    "tidewater": "a data platform's monorepo: skills beside the code they serve "
                 "(.claude/skills/<s>/, services/api/.claude/skills/<s>/, "
                 "plugins/dbtools/skills/<s>/); argparse subparsers, a click program, "
                 "sys.argv dispatch, getopts, a Makefile's targets, node .mjs and `npx tsx` "
                 "TypeScript; DATABASE_URL, GITHUB_TOKEN and a running API the reader has; "
                 "heredocs, env-var settings, a scanner and a linter that exit 1 on a finding",
}
"""A marketplace in a layout and mix of languages none of the nine shows."""

ALL_STYLES: dict[str, str] = {**STYLES, **STYLES_45, **STYLES_MONOREPO}

RECALL_ASSERTED: frozenset[str] = frozenset(ALL_STYLES)
"""The marketplaces tests/e2e/test_recall_corpus.py asserts (no false alarm, every plant
caught): all of them (STYLES_45's joined once aeval caught their classes: benchmarks/
recall.py --set 45, 19/19 plants, 0 false alarms)."""

MIN_SKILLS: dict[str, int] = {name: 10 if i < 3 else 6 for i, name in enumerate(ALL_STYLES)}
"""The least number of skills each marketplace must hold."""

Kind = Literal[
    "renamed_script",            # a script renamed, SKILL.md not updated
    "moved_script",              # a script moved to another folder, SKILL.md not updated
    "renamed_subcommand",        # argparse subcommand, sys.argv or `case "$1"` dispatch
    "removed_flag",              # a flag SKILL.md passes is gone
    "lost_exec_bit",             # a script SKILL.md runs directly is not executable
    "missing_reference",         # a file SKILL.md links is gone
    "missing_nested_reference",  # a file a reference links (one level down) is gone
    "rejects_argument",          # the script answers a documented argument with a plain message
    "reference_script_renamed",  # a script a reference file runs was renamed
    "broken_interpreter",        # CRLF interpreter line, or none on a directly-run .py
    "contract_drift",            # renamed in the script and eval.config's steps, not in SKILL.md
    # issue 31
    "renamed_flag",              # an argparse or `case` flag renamed, SKILL.md not updated
    "syntax_error",              # a Python or bash syntax error in a script SKILL.md runs
    "broken_import",             # an import of a module that exists nowhere (`datetimes`)
    "option_raises",             # a documented option crashes the script (a traceback)
    "changed_output",            # the default output path changed; a later step reads the old one
    "missing_asset",             # a data file a documented command names is gone
    # issues 45 and 49
    "renamed_function",          # a function renamed in a skill module its script imports
    "newer_syntax",              # syntax newer than the PEP 723 header's requires-python
    "new_required_option",       # an option became required; the documented call lacks it
    "value_outside_choices",     # a documented option value is not among the option's choices
    "corrupt_resource",          # a JSON resource the script loads is no longer valid
    "missing_local_import",      # a JS/TS import of a local module that does not exist
    "unshipped_sibling",         # a reference file sends the agent to a sibling not shipped
    "unshipped_guide",           # a SKILL.md table names a guide file not shipped
    "repo_renamed_flag",         # a repository-aware script's documented flag renamed
    "repo_lost_function",        # a repository-aware script's module lost a function
    "repo_missing_resource",     # a repository-aware script's shipped resource is gone
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _inside(path: str) -> str:
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise ValueError(f"{path!r} must be a relative path inside the skill folder")
    return path


RelPath = Annotated[str, AfterValidator(_inside)]


class Rename(_Model):
    """Rename or move a file of the skill (paths relative to the skill folder)."""

    op: Literal["rename"]
    from_: RelPath = Field(alias="from")
    to: RelPath


class Chmod(_Model):
    """Set a file's permission bits (octal, e.g. "644": the executable bit lost)."""

    op: Literal["chmod"]
    path: RelPath
    mode: str = Field(pattern=r"^[0-7]{3}$")


class Replace(_Model):
    """Replace text in a file; ``old`` must occur exactly ``count`` times."""

    op: Literal["replace"]
    path: RelPath
    old: str = Field(min_length=1)
    new: str
    count: int = Field(1, ge=1)


class Delete(_Model):
    """Delete a file of the skill."""

    op: Literal["delete"]
    path: RelPath


class Write(_Model):
    """Write a file of the skill (created or overwritten)."""

    op: Literal["write"]
    path: RelPath
    text: str


Edit = Annotated[Rename | Chmod | Replace | Delete | Write, Field(discriminator="op")]


class Expect(_Model):
    """What the finding of a plant must name."""

    file: RelPath = Field("SKILL.md", description="SKILL.md, or the reference file (relative to "
                                              "the skill folder) whose line is at fault.")
    line: int = Field(ge=1, description="The line of `file` the finding must name.")
    other_lines: list[int] = Field(default_factory=list,
                                   description="Other lines of `file` that name the same cause "
                                               "(a finding naming one of them counts too).")
    cause: str = Field(min_length=2, description="A short text the evidence must contain: the "
                                                 "missing path, the rejected action or flag.")

    @property
    def lines(self) -> list[int]:
        return [self.line, *self.other_lines]


class Plant(_Model):
    """One planted defect."""

    id: str = Field(pattern=r"^P\d{2,}$")
    marketplace: str
    skill: RelPath = Field(description="The skill folder, relative to the marketplace.")
    kind: Kind
    edits: list[Edit] = Field(min_length=1)
    expect: Expect
    after_skipped: bool = Field(False, description="The planted block comes after a block the "
                                                   "doc test skips or cannot run (a placeholder, "
                                                   "a missing host tool), which it does not "
                                                   "depend on.")
    note: str = ""


class Corpus(_Model):
    plants: list[Plant]

    @model_validator(mode="after")
    def _unique(self) -> Corpus:
        ids = [p.id for p in self.plants]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate plant ids: {', '.join(dupes)}")
        return self


def load_plants(path: Path = PLANTS_FILE) -> list[Plant]:
    """Every plant of ``plants.json`` (raises pydantic.ValidationError naming the field)."""
    return Corpus.model_validate(json.loads(path.read_text(encoding="utf-8"))).plants


def marketplace_names() -> list[str]:
    return sorted(p.name for p in MARKETPLACES.iterdir() if p.is_dir())


def skill_folders(marketplace: str | Path) -> list[str]:
    """Every folder holding a SKILL.md, relative to the marketplace, dot-folders included:
    what a discovery that finds every real layout must find."""
    root = MARKETPLACES / marketplace if isinstance(marketplace, str) else Path(marketplace)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules", "__pycache__")]
        if "SKILL.md" in filenames:
            out.append(Path(dirpath).relative_to(root).as_posix())
    return sorted(out)


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "corpus", "GIT_AUTHOR_EMAIL": "corpus@example.invalid",
           "GIT_COMMITTER_NAME": "corpus", "GIT_COMMITTER_EMAIL": "corpus@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


class PlantError(Exception):
    """A plant that does not apply to the corpus (its `old` text or `from` file is gone)."""


def apply_plant(plant: Plant, marketplace_root: Path) -> None:
    """Apply ``plant``'s edits, in order, to a copy of its marketplace at ``marketplace_root``."""
    skill = marketplace_root / plant.skill
    if not (skill / "SKILL.md").is_file():
        raise PlantError(f"{plant.id}: {plant.skill} has no SKILL.md")
    for i, edit in enumerate(plant.edits, 1):
        where = f"{plant.id} edit {i} ({edit.op})"
        if isinstance(edit, Rename):
            src, dst = skill / edit.from_, skill / edit.to
            if not src.is_file():
                raise PlantError(f"{where}: {edit.from_} does not exist")
            if dst.exists():
                raise PlantError(f"{where}: {edit.to} already exists")
            dst.parent.mkdir(parents=True, exist_ok=True)
            src.rename(dst)
        elif isinstance(edit, Chmod):
            target = skill / edit.path
            if not target.is_file():
                raise PlantError(f"{where}: {edit.path} does not exist")
            target.chmod(int(edit.mode, 8))
        elif isinstance(edit, Replace):
            target = skill / edit.path
            if not target.is_file():
                raise PlantError(f"{where}: {edit.path} does not exist")
            text = target.read_bytes().decode("utf-8")
            found = text.count(edit.old)
            if found != edit.count:
                raise PlantError(f"{where}: {edit.path} holds {edit.old!r} {found} time(s), "
                                 f"expected {edit.count}")
            mode = target.stat().st_mode
            target.write_bytes(text.replace(edit.old, edit.new, edit.count).encode("utf-8"))
            target.chmod(mode)
        elif isinstance(edit, Delete):
            target = skill / edit.path
            if not target.is_file():
                raise PlantError(f"{where}: {edit.path} does not exist")
            target.unlink()
        else:
            target = skill / edit.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(edit.text, encoding="utf-8")


def build_marketplace(name: str, dest: Path, plants: Iterable[Plant] = ()) -> Path:
    """A copy of marketplace ``name`` at ``dest`` as a git repository: the corpus committed,
    then ``plants`` applied and committed on top (as a merge request would bring them)."""
    if dest.exists():
        raise FileExistsError(dest)
    shutil.copytree(MARKETPLACES / name, dest, symlinks=True)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", f"{name}: the corpus as committed")
    plants = list(plants)
    for plant in plants:
        if plant.marketplace != name:
            raise PlantError(f"{plant.id} belongs to {plant.marketplace}, not {name}")
        apply_plant(plant, dest)
    if plants:
        _git(dest, "add", "-A")
        _git(dest, "commit", "-q", "-m", "plant " + ", ".join(p.id for p in plants))
    return dest


# ---- reading a finding ------------------------------------------------------------------------

def names_cause(text: str, cause: str) -> bool:
    """Whether ``text`` contains ``cause`` as a whole token: ``rate`` is not found in
    ``rated``, ``--summary`` is found in ``--summary "Fix"``."""
    head = r"(?<![\w-])" if re.match(r"[\w-]", cause) else ""
    tail = r"(?![\w])" if re.search(r"\w$", cause) else ""
    return re.search(head + re.escape(cause) + tail, text) is not None


def named_lines(text: str, file: str) -> set[int]:
    """Line numbers ``text`` names for ``file``: ``line N`` (or ``lines N-M``: N and M), and
    ``<file>:N`` where the path ends with ``file``'s name."""
    out = {int(n) for n in re.findall(r"\blines? (\d+)\b", text)}
    for m in re.finditer(r"\blines (\d+)\s*(?:-|–|to|and)\s*(\d+)\b", text):
        out.add(int(m.group(2)))
    name = re.escape(PurePosixPath(file).name)
    out |= {int(n) for n in re.findall(rf"(?:^|[\s'\"`(/]){name}:(\d+)\b", text)}
    return out


def finding_matches(evidence: str, plant: Plant) -> tuple[bool, bool]:
    """(names the expected line, names the cause) for ``evidence``. A reference file's line
    counts only when the evidence also names that file."""
    exp = plant.expect
    line_ok = bool(named_lines(evidence, exp.file) & set(exp.lines))
    if exp.file != "SKILL.md" and PurePosixPath(exp.file).name not in evidence:
        line_ok = False
    return line_ok, names_cause(evidence, exp.cause)


# ---- reading a run ----------------------------------------------------------------------------

@dataclass
class CaseView:
    """One case of a skill in run.json, with the evidence a finding is searched in."""

    case_id: str
    status: str
    evidence: str
    """The case's `reason` in run.json plus the `evidence` of its failed expectations."""
    honest: bool | None = None
    """For a pass: whether its resource record shows a skill file executed, or one other
    than SKILL.md read (None for other statuses, or no eval_metadata.json)."""
    static: str = ""
    """The evidence of its failed static skill check (the S0 expectation), if it failed."""


@dataclass
class SkillView:
    folder: str
    status: str
    cases: list[CaseView] = field(default_factory=list)


def one_line(text: str, limit: int = 160) -> str:
    """``text`` on one line, escapes shown, at most ``limit`` characters."""
    text = " ".join(text.replace("\x1b", "\\x1b").split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


STATIC_ID = "S0"
"""The id of the static skill check's expectation in grading.json."""


def _honest(case_dir: Path) -> bool | None:
    try:
        meta = json.loads((case_dir / "eval_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    attempts = meta.get("attempts") or []
    res = attempts[-1].get("resources") if attempts else None
    if not res:
        return False
    return bool(res.get("executed")) or bool(set(res.get("read") or ()) - {"SKILL.md"})


def read_run(root: Path, out: Path) -> tuple[dict[str, SkillView], str]:
    """The skills of the `aeval run ROOT --out OUT` run, keyed by their folder relative to
    ``root``; and a problem ("no run.json") when the run left no manifest."""
    manifests = sorted((out / "runs").glob("*/run.json")) if (out / "runs").is_dir() else []
    if not manifests:
        return {}, "no run.json"
    run_dir = manifests[-1].parent
    run = json.loads(manifests[-1].read_text(encoding="utf-8"))
    skills: dict[str, SkillView] = {}
    for s in run.get("skills", []):
        try:
            folder = Path(s["path"]).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            folder = s["path"]
        view = SkillView(folder, s["status"])
        for c in s.get("cases", []):
            parts = [c.get("reason") or ""]
            static = ""
            case_dir = run_dir / c["dir"]
            try:
                grading = json.loads((case_dir / "grading.json").read_text(encoding="utf-8"))
                failed = [e for e in grading.get("expectations", []) if e.get("passed") is False]
                parts += [e.get("evidence") or "" for e in failed]
                static = "\n".join(e.get("evidence") or "" for e in failed
                                   if e.get("id") == STATIC_ID)
            except (OSError, ValueError):
                pass
            view.cases.append(CaseView(c["case_id"], c["status"], "\n".join(parts),
                                       _honest(case_dir) if c["status"] == "pass" else None,
                                       static))
        skills[folder] = view
    return skills, ""


def changed_verdicts(skills: dict[str, SkillView], baseline: dict[str, SkillView],
                     planted: set[str]) -> list[str]:
    """``folder before->after`` for every skill outside ``planted`` whose status differs
    from the unplanted run's (a skill no longer found is ``gone``)."""
    out = []
    for folder, base in sorted(baseline.items()):
        now = skills[folder].status if folder in skills else "gone"
        if folder not in planted and now != base.status:
            out.append(f"{folder} {base.status}->{now}")
    return out


@dataclass
class PlantResult:
    """How one plant fared: caught when its skill fails and one failing case's evidence
    names the expected line and the cause."""

    plant: str
    marketplace: str
    skill: str
    kind: str
    status: str
    line_ok: bool
    cause_ok: bool
    caught: bool
    said: str
    """What aeval said about the planted skill (a failing case's evidence, or the first
    case's reason), on one line."""
    named: list[int] = field(default_factory=list)
    """The lines of the expected file the failing cases' evidence names."""
    tier: str = ""
    """For a caught plant, how: ``static`` (the static skill check's finding names the line
    and the cause) or ``running`` (a doc test's or a step's failure does)."""


def judge(plant: Plant, skills: dict[str, SkillView], problem: str = "") -> PlantResult:
    view = skills.get(plant.skill)
    status = view.status if view else "not found"
    line_ok = cause_ok = caught = False
    said = problem or ("" if view else "the run did not discover this skill folder")
    named: set[int] = set()
    static = False
    if view:
        failing = [c for c in view.cases if c.status == "fail"]
        for c in failing:
            lo, co = finding_matches(c.evidence, plant)
            line_ok, cause_ok = line_ok or lo, cause_ok or co
            caught = caught or (lo and co)
            static = static or all(finding_matches(c.static, plant))
            named |= named_lines(c.evidence, plant.expect.file)
        shown = failing or view.cases
        if shown and not said:
            said = f"{shown[0].case_id}: {one_line(shown[0].evidence)}"
    caught = caught and status == "fail"
    tier = ("static" if static else "running") if caught else ""
    return PlantResult(plant.id, plant.marketplace, plant.skill, plant.kind, status, line_ok,
                       cause_ok, caught, said, sorted(named), tier)
