"""`aeval init`: write a starter eval.config for a skill (or every skill of a marketplace that
has no contract), then run its cases once so the author sees which pass, fail or stay
untested.

With a model (``--model`` or AEVAL_MODEL) the cases are drafted from SKILL.md
(`aeval.tasks.skill.draft_contract`); without one, SKILL.md's blocks run once as the doc test
runs them (`aeval.tasks.skill.doc_probe`, sandboxed and bounded, a line per block) and the
template (`aeval.skill.contract_draft.template_config`) keeps as steps only the blocks the doc
test found self-contained; the others, and the fields the author must write, are marked TODO
with what they need. The first run never fails on what the reader supplies.
Nothing is committed for the user, and an existing contract is never lost.

Exit codes: 2 a usage error, a skill that cannot be loaded, an existing contract without
``--force``, or a model the provider refuses (unknown model, missing key); 3 the model API
failed after retries, or its answer stayed invalid (nothing written for that skill); 4 aeval
itself failed; 0 otherwise. The run's verdicts are shown, not gated: a failing new case is
either a wrong case or a defect found, and only the author can tell which.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from aeval.deployments.cli._common import EXIT_USAGE
from aeval.deployments.cli.console import inert
from aeval.deployments.cli.options import resolve
from aeval.exit_codes import ENVIRONMENT, OK

EXIT_MODEL = ENVIRONMENT  # the model API failed, or its answer stayed invalid: retry


@dataclass
class Row:
    """What init did for one skill."""

    skill: str
    root: Path
    outcome: str  # drafted | template | exists | invalid | refused | model error
    detail: str = ""
    cases: int = 0
    exit_code: int = OK


def add_parser(sub, run_parser: argparse.ArgumentParser) -> None:
    """The `init` subcommand; ``run_parser`` (the `run` subcommand's) parses its first run."""
    i = sub.add_parser(
        "init", help="write a starter eval.config from SKILL.md",
        description="Write SKILL_DIR/eval.config: with a model (--model or AEVAL_MODEL), "
        "cases drafted from SKILL.md and the skill's files, deterministic checks first, "
        "plus trigger prompts; without one, SKILL.md's blocks run once as the doc test and "
        "the template's steps are those it found self-contained; the rest (what needs a "
        "tool, an input or a value you supply) and the fields you must write are marked "
        "TODO (aeval validate lists them). Then the new cases run once. An existing "
        "contract is kept: --force replaces it and keeps the "
        "old file as eval.config.orig.",
        epilog="exit codes: 2 usage, a skill that cannot be loaded, or an existing "
        "eval.config without --force; 3 the model API failed or its answer stayed invalid "
        "(nothing written); 4 internal error; 0 otherwise (the run's verdicts are shown, "
        "not gated)")
    i.add_argument("path", metavar="PATH",
                   help="a skill folder (with SKILL.md), or a marketplace with --missing")
    i.add_argument("--missing", action="store_true",
                   help="every skill at or under PATH that has no contract (per-skill or "
                        "per-name)")
    i.add_argument("--model", help="drafting model (litellm string), or AEVAL_MODEL; "
                                   "without one, a template is written")
    i.add_argument("--api-base", help="model API base URL, or AEVAL_API_BASE")
    i.add_argument("--cases", type=int, default=3, help="cases to draft per skill (default 3)")
    i.add_argument("--force", action="store_true",
                   help="replace an existing eval.config (kept as eval.config.orig)")
    i.add_argument("--no-run", action="store_true",
                   help="write only; do not run the cases (without a model the doc test "
                        "still runs: it decides the steps)")
    i.add_argument("--runtime", action="append", metavar="NAME",
                   help="runtime for the first run (default as `aeval run`: builtin with a "
                        "model, else literal)")
    i.add_argument("--out", help="run store for the first run (default .aeval, or AEVAL_HOME)")
    i.add_argument("--sandbox", choices=("auto", "require", "none"),
                   help="as for `aeval run`")
    i.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    i.set_defaults(func=cmd_init, run_parser=run_parser)


def _targets(args: argparse.Namespace) -> tuple[list[Path], list[Row], str | None]:
    """The skill roots to write for, rows for those skipped, or a usage problem."""
    from aeval.errors import ContractError
    from aeval.skill.contract import Tier, find_contract, find_marketplace
    from aeval.skill.skill_md import SKILL_FILE, discover, load_skill

    path = Path(args.path)
    if not path.exists():
        return [], [], f"{args.path}: no such file or folder"
    if not args.missing:
        if not (path / SKILL_FILE).is_file():
            return [], [], (f"{args.path}: no {SKILL_FILE} here; give a skill folder, or a "
                            "marketplace with --missing")
        return [path], [], None
    roots, nothing = discover([path])
    if nothing:
        return [], [], nothing
    todo, skipped = [], []
    for root in roots:
        try:
            skill = load_skill(root)
        except ContractError as exc:
            skipped.append(Row(root.name, root, "invalid", str(exc.problems[0]),
                                exit_code=EXIT_USAGE))
            continue
        tier, source = find_contract(skill, find_marketplace(root))
        if tier == Tier.generic or args.force:
            todo.append(root)
        else:
            skipped.append(Row(skill.name, root, "exists", f"{source}"))
    return todo, skipped, None


def _init_one(root: Path, args: argparse.Namespace, model: str | None,
              api_base: str | None, sandbox: str = "auto") -> Row:
    from aeval.errors import ContractError, ModelPermanentError, ModelTransientError
    from aeval.skill.contract import parse_config
    from aeval.skill.contract_draft import existing_contract, template_config, write_contract
    from aeval.skill.skill_md import load_skill

    try:
        skill = load_skill(root)
    except ContractError as exc:
        return Row(root.name, root, "invalid", str(exc.problems[0]), exit_code=EXIT_USAGE)
    old = existing_contract(root)
    if old is not None and not args.force:
        return Row(skill.name, root, "exists", f"{old} exists; --force replaces it (the old "
                                               "file is kept as eval.config.orig)",
                   exit_code=EXIT_USAGE)
    if model:
        from aeval.tasks.skill.draft_contract import draft_contract

        try:
            draft = draft_contract(skill, model, args.cases, api_base)
        except ModelPermanentError as exc:
            return Row(skill.name, root, "model error", str(exc), exit_code=EXIT_USAGE)
        except ModelTransientError as exc:
            return Row(skill.name, root, "model error", f"{exc} (retry)", exit_code=EXIT_MODEL)
        if draft.config is None:
            return Row(skill.name, root, "refused",
                       f"the model's answer stayed invalid after {draft.attempts} attempts, "
                       f"nothing written: {draft.error}", exit_code=EXIT_MODEL)
        config = draft.config.model_dump(mode="json", exclude_defaults=True)
        outcome, detail = "drafted", f"by {model}"
    else:
        from aeval.verdicts.self_contained import rehearsed, steps_from_doc_test

        outcomes, not_run = _doc_test(skill, sandbox)
        blocks = steps_from_doc_test(skill, outcomes, not_run)
        config, skipped = template_config(skill, blocks)
        if outcomes is not None and any(why is None for _, why in blocks):
            case = config["evals"][0]
            failures = _rehearse(skill, case["steps"], case["files"], sandbox)
            if failures is not None and any(failures):
                blocks = rehearsed(skill, blocks, outcomes, failures)
                config, skipped = template_config(skill, blocks)
        outcome = "template"
        detail = "fill the TODO fields (aeval validate lists them)"
        if skipped:
            detail += f"; {len(skipped)} block(s) left out: {skipped[0]}"
    written, kept = write_contract(root, config, force=args.force)
    parse_config(written)  # what was written loads (a bug here is an internal error)
    if kept is not None:
        detail += f"; the old contract is kept as {kept.name}"
    return Row(skill.name, root, outcome, detail, cases=len(config["evals"]))


def _doc_test(skill, sandbox: str) -> tuple[list | None, str]:
    """What each of the skill's SKILL.md blocks did in the doc test (None when it could not
    run, and why: then no block becomes a step)."""
    from aeval.errors import AevalError
    from aeval.isolation.sandbox import SandboxUnavailable
    from aeval.tasks.skill.doc_probe import PROBE_TIMEOUT_S, probe_doc_test

    print(f"    running SKILL.md's blocks as the doc test (sandbox {sandbox}, at most "
          f"{PROBE_TIMEOUT_S:.0f}s) to see which are self-contained", flush=True)
    try:
        report = probe_doc_test(skill, sandbox, lambda line: print(line, flush=True))
    except (AevalError, SandboxUnavailable, OSError) as exc:  # a copy refused, a full disk
        why = f"the doc test could not run at init: {type(exc).__name__}: {exc}"
        print(f"    {inert(why.splitlines()[0][:300])}", flush=True)
        return None, why.splitlines()[0][:300]
    summary = report.summary()
    print(f"    doc test: {summary.status}: {inert(summary.final_text.splitlines()[0][:300])}",
          flush=True)
    return report.blocks, "not run by aeval init"


def _rehearse(skill, steps: list[str], files: list[str], sandbox: str) -> list | None:
    """How each step fails when run from the workspace as the literal runtime runs it (None
    per step that succeeds); None when the rehearsal could not run (the steps are kept)."""
    from aeval.errors import AevalError
    from aeval.isolation.sandbox import SandboxUnavailable
    from aeval.tasks.skill.doc_probe import rehearse_steps

    print(f"    rehearsing the {sum(1 for s in steps if not s.startswith('#'))} step(s) from "
          "the workspace", flush=True)
    try:
        failures = rehearse_steps(skill, steps, files, sandbox)
    except (AevalError, SandboxUnavailable, OSError) as exc:
        print(f"    the rehearsal could not run: {inert(str(exc).splitlines()[0][:300])}",
              flush=True)
        return None
    for step, failed in zip(steps, failures, strict=False):
        if failed is not None:
            print(f"    a step failed from the workspace ({inert(failed[:200])}): "
                  f"{inert(step.splitlines()[0][:120])}", flush=True)
    return failures


def _first_run(rows: list[Row], args: argparse.Namespace) -> dict[str, list[tuple[str, str]]]:
    """Run the written skills' cases once (`aeval run` itself); case statuses per skill
    folder."""

    from aeval.run.read import read_run
    from aeval.run.store import RunStore

    argv = [str(r.root) for r in rows]
    for name in args.runtime or []:
        argv += ["--runtime", name]
    for flag, value in (("--model", args.model), ("--api-base", args.api_base),
                        ("--out", args.out), ("--sandbox", args.sandbox)):
        if value:
            argv += [flag, value]
    run_args = args.run_parser.parse_args(argv)
    print(f"running the new cases once: aeval run {' '.join(argv)}")
    store = RunStore(resolve(args).store)
    before = set(store.run_ids())
    run_args.func(run_args)
    new = sorted(set(store.run_ids()) - before)
    if not new:
        return {}
    manifest = read_run(store.run_dir(new[-1])).manifest
    out: dict[str, list[tuple[str, str]]] = {}
    for s in manifest.skills:
        out.setdefault(str(Path(s.path).resolve()), []).extend(
            (c.case_id, c.status) for c in s.cases if not c.supplementary)
    return out


def _print_table(rows: list[Row], results: dict[str, list[tuple[str, str]]]) -> None:
    print()
    print("aeval init:")
    for r in rows:
        cases = results.get(str(r.root.resolve()), [])
        counts: dict[str, int] = {}
        for _, status in cases:
            counts[status] = counts.get(status, 0) + 1
        ran = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        line = f"  {inert(r.skill)}: {r.outcome}"
        if r.cases:
            line += f", {r.cases} case(s)"
        if ran:
            line += f"; first run: {ran}"
        print(line)
        if r.detail:
            print(f"      {inert(r.detail)[:400]}")
        for case_id, status in cases:
            if status != "pass":
                print(f"      {inert(case_id)}: {status}")


def cmd_init(args: argparse.Namespace) -> int:
    if args.cases < 1:
        print("aeval init: --cases must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    todo, rows, problem = _targets(args)
    if problem:
        print(f"aeval init: {problem}", file=sys.stderr)
        return EXIT_USAGE
    opts = resolve(args)
    model, api_base = opts.model, opts.api_base
    from aeval.runtime.model_keys import missing_client

    if problem := missing_client(model, None):
        print(f"aeval init: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if not todo and args.missing:
        print("every skill has a contract: nothing to write")
    for n, root in enumerate(todo, 1):
        print(f"[{n}/{len(todo)}] {inert(root.name)}: "
              f"{'drafting with ' + model if model else 'writing a template'} ...", flush=True)
        rows.append(_init_one(root, args, model, api_base, opts.sandbox))
    written = [r for r in rows if r.outcome in ("drafted", "template")]
    results = _first_run(written, args) if written and not args.no_run else {}
    _print_table(rows, results)
    codes = {r.exit_code for r in rows}
    return next((c for c in (EXIT_USAGE, EXIT_MODEL) if c in codes), OK)
