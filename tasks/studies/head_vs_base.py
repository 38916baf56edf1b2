"""Head against base: the base version of each changed skill, its run's request, the pairing
of the two runs' cases, the comparative grader on each pair, and head_vs_base.json, the
report.html section and the Prefect table from them.

    <store>/runs/<run-id>/        the head's run (the normal run of the change); + head_vs_base.json
                                  and a "Head against base" section in its report.html
    <store>/runs/<run-id>-base/   a normal run of the skills as they were at the merge base,
                                  with the head's cases (its eval.config, or the marketplace's
                                  per-name config), run first; the head run reuses its
                                  assertions.json per case and epoch (both versions answer
                                  the same case) and holds its relative budgets
                                  (`max_vs_base`) to the base's figures
"""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from aeval.adapters.git import export_tree, git_toplevel, merge_base
from aeval.artifacts import AssertionsFile, CaseResult, EvalMetadata, HeadVsBase, SkillResult
from aeval.artifacts.aggregate import RunManifest
from aeval.artifacts.pairwise import CasePairwise, SideCost
from aeval.exit_codes import FAIL, OK
from aeval.run.layout import RunLayout
from aeval.run.read import RunRecord, read_if_there, read_run
from aeval.run.requests import EvalRequest
from aeval.run.store import atomic_write_text, write_model
from aeval.skill.contract import CONFIG_NAMES, SKILL_CREATOR_EVALS, find_marketplace
from aeval.skill.skill_md import SKILL_FILE
from aeval.tasks.case.model_grader import skill_lines
from aeval.tasks.run.prefect_artifacts import artifact_key, inert
from aeval.tasks.run.progress import progress
from aeval.tasks.run.report import render_report
from aeval.tasks.studies.comparative_grader import ask_both_orders, shown_output
from aeval.verdicts.pairwise import reduce_orders, skill_tally

COMPARABLE = ("pass", "fail")
GRADER_THREADS = 4
SCRUBBED = "RUN"


class BaseTree(BaseModel):
    """The changed skills as they were at the merge base, exported into one folder."""

    commit: str | None = Field(None, description="The merge base the skills were taken from.")
    root: str = Field(description="The folder they were exported to (the repository's layout).")
    skills: dict[str, str | None] = Field(
        default_factory=dict, description="Head skill folder -> its base folder (None: the "
                                          "skill is new in the change).")

    def roots(self) -> list[str]:
        return [b for b in self.skills.values() if b is not None]


def base_run_id(run_id: str) -> str:
    return f"{run_id}-base"


def _overlay_contract(head: Path, base: Path) -> None:
    """The head's per-skill contract in place of the base's: the same cases on both."""
    for name in (*CONFIG_NAMES, SKILL_CREATOR_EVALS):
        (base / name).unlink(missing_ok=True)
        if (head / name).is_file():
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(head / name, base / name)


def export_base_skills(skill_roots: list[str], base: str, head: str | None,
                       dest: Path) -> BaseTree:
    """Write each changed skill's folder as it was at the merge base of ``base`` and ``head``
    under ``dest`` (the repository's layout), with the head's cases: its per-skill contract,
    and the marketplace's ``.aeval/evals`` as the head has it."""
    if not skill_roots:
        return BaseTree(root=str(dest))
    repo = git_toplevel(Path(skill_roots[0])).resolve()
    commit = merge_base(repo, base, head or "HEAD")
    rels = {r: Path(r).resolve().relative_to(repo).as_posix() for r in skill_roots}
    present = set(export_tree(repo, commit, sorted(set(rels.values())), dest))
    tree = BaseTree(commit=commit, root=str(dest))
    for head_root, rel in rels.items():
        b = dest / rel
        if rel not in present or not (b / SKILL_FILE).is_file():
            tree.skills[head_root] = None  # new in the change: nothing to compare with
            continue
        _overlay_contract(Path(head_root), b)
        mp = find_marketplace(Path(head_root))
        if mp is not None and mp.resolve().is_relative_to(repo):
            evals = mp.resolve() / ".aeval" / "evals"
            target = dest / mp.resolve().relative_to(repo) / ".aeval" / "evals"
            if not target.exists():
                shutil.copytree(evals, target, symlinks=True)
        tree.skills[head_root] = str(b)
    return tree


@task(name="export-base", task_run_name="export-base {base}", cache_policy=NO_CACHE)
def export_base(skill_roots: list[str], base: str, head: str | None, dest: str) -> BaseTree:
    """The changed skills at the merge base (`export_base_skills`)."""
    return export_base_skills(skill_roots, base, head, Path(dest))


def base_request(request: EvalRequest, tree: BaseTree) -> EvalRequest:
    """The base run's request: the head's, for the base's skill folders (with the head's
    cases), under its own run id, not a run of a change (nothing to post, no introduced
    errors). It runs first: the head reuses its assertions and holds its relative budgets
    to its figures."""
    assert request.run_id
    progress("head vs base: the base's version of %d skill(s) first (run %s)",
             len(tree.roots()), base_run_id(request.run_id))
    return request.model_copy(update={
        "run_id": base_run_id(request.run_id), "paths": [tree.root],
        "skill_roots": tree.roots(), "base": None, "head": None, "post": False,
        "resume": False, "skip_unchanged": False, "recordings": None, "base_costs": None})


def head_request(request: EvalRequest, tree: BaseTree, base_dir: Path | None) -> EvalRequest:
    """The head run's request: the change's own, with each case's assertions.json of the base
    run reused (both versions are held to the same assertions, but for the structural ones,
    which are each version's own: S2 follows what the head's SKILL.md documents; SKILL.md's
    doc test is each version's own too) and, where the base passed the case, what its
    attempt cost (the relative budgets). Keys are the head's skill folders. It does not
    post: the flow posts once the comparison is written, so the note carries it."""
    recordings: dict[str, str] = {}
    costs: dict = {}
    head_of = {b: str(Path(h).resolve()) for h, b in tree.skills.items() if b is not None}
    if base_dir is not None and RunLayout(base_dir).manifest.is_file():
        for case in read_run(base_dir).cases():
            head_root, c = head_of.get(case.skill.path), case.result
            if head_root is None or c.supplementary:
                continue
            key = f"{head_root}/{c.case_id}#{c.epoch}"
            if case.files.assertions.is_file():
                recordings[key] = str(case.dir)
            if c.status == "pass" and c.efficiency is not None:
                costs[key] = c.efficiency
    return request.model_copy(update={"recordings": recordings or None,
                                      "base_costs": costs or None, "post": False,
                                      "compared_with_base": True})


def side_cost(run: RunRecord, c: CaseResult | None) -> SideCost:
    """One version's case: its status, turns, tokens and wall time."""
    if c is None:
        return SideCost()
    files = run.layout.case_files(c.dir)
    meta = read_if_there(files.eval_metadata, EvalMetadata)
    grading = run.grading(c)
    u = meta.usage if meta is not None else None
    return SideCost(
        status=c.status, dir=c.dir,
        # the efficiency's turns: None where no model ran (`literal`), never a 0 to compare
        turns=c.efficiency.turns if c.efficiency is not None else (
            grading.execution_metrics.turns if grading is not None else None),
        requests=u.requests if u else 0, input_tokens=u.input_tokens if u else 0,
        cached_input_tokens=u.cached_input_tokens if u else 0,
        output_tokens=u.output_tokens if u else 0,
        wall_s=meta.wall_s if meta is not None else None,
        commands=c.efficiency.commands if c.efficiency is not None else None,
        tool_calls=c.efficiency.tool_calls if c.efficiency is not None else None)


def _skill_text(root: Path) -> set[str]:
    return skill_lines(root) if root.is_dir() else set()


def _index(skill: SkillResult) -> dict[tuple, CaseResult]:
    return {(c.runtime, c.case_id, c.epoch): c for c in skill.cases if not c.supplementary}


class _Judge:
    """The comparative grader over the pairs of one head and one base run."""

    def __init__(self, request: EvalRequest, head: RunRecord, base: RunRecord | None,
                 tree: BaseTree):
        self.request, self.head, self.base, self.tree = request, head, base, tree
        self.scrub = {base.run_dir.name if base else "": SCRUBBED,
                      head.run_dir.name: SCRUBBED, tree.root: "/tree"}
        self._lines: dict[str, set[str]] = {}

    def lines(self, *roots: str) -> set[str]:
        """The lines of the skills' files the comparative grader must not see: the skill's
        text, not its contract (the grader is shown the case; an output that repeats the
        expected outcome must stay visible)."""
        out: set[str] = set()
        for r in roots:
            if r not in self._lines:
                self._lines[r] = _skill_text(Path(r))
            out |= self._lines[r]
        return out

    def judge(self, pair: CasePairwise, head_root: str, base_root: str) -> CasePairwise:
        h, b = pair.head, pair.base
        if h.status is None or b.status is None:
            missing = "head" if h.status is None else "base"
            return pair.model_copy(update={"reason": f"ungraded: the {missing} has no run of "
                                                     "this case"})
        if h.status not in COMPARABLE or b.status not in COMPARABLE:
            return pair.model_copy(update={"reason": f"ungraded: not both ran to an end "
                                                     f"(head {h.status}, base {b.status})"})
        if not self.request.grader_model:
            return pair.model_copy(update={"reason": "ungraded: no grader model "
                                                     "(--grader-model) to compare the outputs"})
        assert self.base is not None and h.dir and b.dir
        hd, bd = self.head.layout.case(h.dir), self.base.layout.case(b.dir)
        lines = self.lines(head_root, base_root)
        meta = read_if_there(self.head.layout.case_files(h.dir).eval_metadata, EvalMetadata)
        spec = self.head.layout.case_files(h.dir)
        asserted = read_if_there(spec.assertions, AssertionsFile)
        texts = [a.text for a in asserted.assertions if a.kind != "structural"] \
            if asserted else []
        orders = ask_both_orders(
            self.request.grader_model, self.request.api_base,
            meta.prompt if meta else "", meta.expected_outcome if meta else "", texts,
            shown_output(hd, lines, self.scrub), shown_output(bd, lines, self.scrub))
        verdict, reason = reduce_orders(orders)
        return pair.model_copy(update={"verdict": verdict, "reason": reason, "orders": orders})


def compare_runs(request: EvalRequest, head_dir: Path, base_dir: Path | None,
                 tree: BaseTree) -> HeadVsBase:
    """head_vs_base.json's content: every case of a changed skill paired with the base's run
    of it (skill folder x runtime x case x epoch), and judged in both orders."""
    head = read_run(head_dir)
    base = read_run(base_dir) if base_dir is not None \
        and RunLayout(base_dir).manifest.is_file() else None
    base_skills = {s.path: s for s in (base.manifest.skills if base else [])}
    judge = _Judge(request, head, base, tree)
    todo: list[tuple[CasePairwise, str, str]] = []
    new = []
    for s in head.manifest.skills:
        base_root = tree.skills.get(s.path)
        if base_root is None:
            if s.path in tree.skills:
                new.append(s.name)
            continue
        bs = base_skills.get(base_root)
        theirs = _index(bs) if bs is not None else {}
        for key, c in _index(s).items():
            todo.append((CasePairwise(
                skill=s.name, skill_key=s.key, runtime=c.runtime, case_id=c.case_id,
                epoch=c.epoch, verdict="ungraded", reason="",
                head=side_cost(head, c),
                base=side_cost(base, theirs.get(key)) if base else SideCost()),
                s.path, base_root))
    with ThreadPoolExecutor(max_workers=GRADER_THREADS) as pool:
        cases = list(pool.map(lambda t: judge.judge(*t), todo))
    return HeadVsBase(head_run=head.run_dir.name, base_run=base_run_id(head.run_dir.name),
                      base=tree.commit, head=head.manifest.head,
                      grader_model=request.grader_model, skills=skill_tally(cases),
                      cases=cases, new_skills=new)


def _n(x: float | None, spec: str = "{:.0f}") -> str:
    return "–" if x is None else spec.format(x)


def markdown_table(report: HeadVsBase) -> str:
    """The per-skill table (outcome: wins/ties/losses and the head's preference with its
    interval; cost: head vs base), then one line per skill on the change of each cost with its
    interval, and one per case that was not a plain win or loss."""
    base = f"the merge base {report.base[:12]}" if report.base else "the base"
    lines = [f"Head against base ({base}, run {report.base_run}): the comparative grader "
             "in both orders; a disagreement between them is a tie", "",
             "| skill | runtime | wins | ties | losses | ungraded | preference [95%] "
             "| efficiency | turns head/base | tokens head/base | wall s head/base |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in report.skills:
        bias = f" ({s.position_bias} position bias)" if s.position_bias else ""
        lines.append(
            f"| {_cell(s.label())} | {_cell(s.runtime)} | {s.wins} | {s.ties}{bias} | "
            f"{s.losses} | {s.ungraded} | {s.preference.text() if s.preference else '–'} | "
            f"{s.efficiency or '–'} | "
            f"{_n(s.head_mean_turns, '{:.1f}')} / "
            f"{_n(s.base_mean_turns, '{:.1f}')} | {_n(s.head_mean_tokens)} / "
            f"{_n(s.base_mean_tokens)} | {_n(s.head_mean_wall_s, '{:.2f}')} / "
            f"{_n(s.base_mean_wall_s, '{:.2f}')} |")
    for name in report.new_skills:
        lines.append(f"| {_cell(name)} | – | new in the change: nothing to compare with "
                     "| | | | | | | | |")
    notes = [f"- {_cell(s.label())} [{s.runtime}]: head − base: {changes}"
             for s in report.skills if (changes := s.changes())]
    notes += [f"- {_cell(c.skill)} / {_cell(c.case_id)}"
              f"{f' #{c.epoch}' if c.epoch is not None else ''} [{c.runtime}]: {c.verdict}: "
              f"{_cell(c.reason)}" for c in report.cases if c.verdict in ("tie", "ungraded")]
    notes += [f"- {_cell(s.label())} [{s.runtime}]: efficiency {s.efficiency}: "
              f"{_cell(s.efficiency_reason or '')}" for s in report.skills
              if s.efficiency in ("better", "worse")]
    return "\n".join([*lines, *(["", *notes] if notes else [])]) + "\n"


def _cell(text: str) -> str:
    return inert(text).replace("|", "\\|").replace("\n", " ")


def base_lost(request: EvalRequest, exc: BaseException) -> None:
    """Say that the base's run ended without a result: the head runs as a plain run of the
    change (its own assertions, no relative budgets), and nothing is compared."""
    progress("head vs base: the base's run %s ended without a result (%s: %s): the head runs "
             "alone, nothing is compared", base_run_id(request.run_id or ""),
             type(exc).__name__, str(exc)[:300], warning=True)


def note_base_gate(base: RunManifest) -> None:
    """Say that the base run's gate line above is not the run's gate."""
    if base.gate is not None:
        progress("head vs base: the base's run %s ended exit %d: data for the comparison, "
                 "not the gate; the head's run follows", base.run_id, base.gate.exit_code)


def write_head_vs_base_files(request: EvalRequest, head_dir: Path, base_dir: Path | None,
                             tree: BaseTree) -> HeadVsBase:
    """head_vs_base.json in the head run's folder (atomic), and that run's report.html
    again, now with its Head against base section."""
    report = compare_runs(request, head_dir, base_dir, tree)
    run = read_run(head_dir)
    write_model(run.layout.head_vs_base, report)
    atomic_write_text(run.layout.report, render_report(head_dir, run.manifest))
    return report  # the worse skills are said once, by `settle_head_files`


@task(name="head-vs-base", task_run_name="head-vs-base {request.run_id}",
      cache_policy=NO_CACHE)
def write_head_vs_base(request: EvalRequest, tree: BaseTree, base_ran: bool) -> HeadVsBase:
    """Pair the head's and the base's runs, judge each pair in both orders, write
    head_vs_base.json and the report section, and show the table as a Prefect artifact."""
    assert request.run_id
    head_dir = RunLayout.of(request.store, request.run_id).run_dir
    base_dir = RunLayout.of(request.store, base_run_id(request.run_id)).run_dir \
        if base_ran else None
    report = write_head_vs_base_files(request, head_dir, base_dir, tree)
    create_markdown_artifact(markdown_table(report),
                             key=artifact_key("head", "vs", "base", request.run_id),
                             description=f"aeval run {request.run_id}: head against base")
    return report


def worse_than_base(report: HeadVsBase) -> list[str]:
    """The skills the comparison found worse than their base, each with why: the base won
    more case runs than the head, or the head's cost is over 1.2x the base's."""
    out = []
    for s in report.skills:
        why = []
        if s.losses > s.wins:
            why.append(f"the base won {s.losses} case run(s), the head {s.wins}")
        if s.efficiency == "worse":
            why.append(f"efficiency worse: {s.efficiency_reason}")
        if why:
            out.append(f"{s.label()} [{s.runtime}]: " + "; ".join(why))
    return out


def settle_head_files(request: EvalRequest, report: HeadVsBase) -> RunManifest:
    """The head's run.json once the comparison is written: with ``fail_worse_than_base``, a
    gate of 0 becomes 1 when a skill is worse than its base (a gate already failing keeps its
    code and reason, and the worse skills are said in a warning line, as without)."""
    assert request.run_id
    layout = RunLayout.of(request.store, request.run_id)
    manifest = read_run(layout.run_dir).manifest
    worse = worse_than_base(report)
    if request.fail_worse_than_base and worse and manifest.gate is not None \
            and manifest.gate.exit_code == OK:
        manifest.gate = manifest.gate.model_copy(update={
            "exit_code": FAIL, "reason": "worse than the base (--fail-worse-than-base): "
                                         + "; ".join(worse)})
        write_model(layout.manifest, manifest)
    elif worse:
        progress("head vs base: worse than the base, not the gate%s: %s",
                 "" if request.fail_worse_than_base else " (--fail-worse-than-base makes it so)",
                 "; ".join(worse), warning=True)
    return manifest


@task(name="settle-head", task_run_name="settle-head {request.run_id}", cache_policy=NO_CACHE)
def settle_head(request: EvalRequest, report: HeadVsBase) -> RunManifest:
    """`settle_head_files` as a task of the head-vs-base flow."""
    return settle_head_files(request, report)
