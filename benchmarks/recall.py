"""Planted-defect recall and false alarms of `aeval run` over the recall corpus
(tests/corpus/: marketplaces written the way public ones are, in the styles of issues 18,
31 and 45/49, and the defects planted in them, plants.json).

    .venv/bin/python benchmarks/recall.py                  # every marketplace and plant
    .venv/bin/python benchmarks/recall.py --plant P09      # one plant (and its baseline)
    .venv/bin/python benchmarks/recall.py --jobs 3 --json /tmp/recall.json

Each marketplace is built in a temporary git repository and run zero-key, exactly as CI
would (`aeval run <marketplace> --out <tmp> -q`: no model configured, so the literal
runtime), once as committed and once per plant with that plant alone applied. From run.json
and each case's grading.json and eval_metadata.json it prints, per plant, the planted
skill's status, whether the evidence (the failing case's `reason` plus the `evidence` of its
failed expectations) names the expected line (`line N` or `<file>:N`) and the cause, and
whether the other skills kept their verdicts; then the totals:

- recall: plants whose skill fails with the right line and cause, over all plants;
- false alarms: `fail`, `error` or `internal` skills of the unplanted marketplaces, a
  non-zero `aeval validate` on one of them, plus
  other skills whose verdict changed under a plant;
- dishonest passes: `pass` cases of the unplanted marketplaces whose resource record shows
  nothing of the skill ran (no file executed, none read but SKILL.md);
- skills found (against the folders holding a SKILL.md), pass and untested, per marketplace;
- figures per marketplace: skills, the share exercised (not `untested`) as committed, the
  planted defects caught and how (by the static skill check S0, whose finding names the line
  and cause, or by running: a doc test's or a step's failure), false fails and false errors
  (`fail`, or `error`/`internal`, of a skill nothing was planted in: goal 0).

    .venv/bin/python benchmarks/recall.py --set 45 --jobs 2   # issues 45/49's marketplaces

The machine's load is printed at the start and the end: on a shared machine the wall times
are not comparable between sittings, the verdicts are.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _common import aeval_exe, clean_env, machine, run_timed  # noqa: E402

from tests.corpus.loader import (  # noqa: E402
    RECALL_ASSERTED,
    STYLES_45,
    Plant,
    PlantResult,
    SkillView,
    build_marketplace,
    changed_verdicts,
    judge,
    load_plants,
    marketplace_names,
    one_line,
    read_run,
    skill_folders,
)

BAD = ("fail", "error", "internal")
ZERO_KEY = ("AEVAL_MODEL", "AEVAL_GRADER_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
            "AEVAL_API_BASE", "PREFECT_API_URL")


@dataclass
class Run:
    """One `aeval run` of a marketplace (unplanted, or with one plant)."""

    marketplace: str
    plant: str | None
    exit: int
    wall_s: float
    skills: dict[str, SkillView] = field(default_factory=dict)
    problem: str = ""
    validate: int | None = None
    """`aeval validate`'s exit on the unplanted marketplace (None for a planted run)."""


def run_one(marketplace: str, plant: Plant | None, work: Path, prefect_home: Path,
            timeout: float) -> Run:
    tag = plant.id if plant else "unplanted"
    root = build_marketplace(marketplace, work / f"{marketplace}-{tag}" / marketplace,
                             [plant] if plant else [])
    out = root.parent / "out"
    env = clean_env(prefect_home)
    for key in ZERO_KEY:
        env.pop(key, None)
    timed = run_timed([str(aeval_exe()), "run", str(root), "--out", str(out), "-q"], env,
                      timeout=timeout)
    skills, problem = read_run(root, out)
    validate = None
    if plant is None:
        validate = run_timed([str(aeval_exe()), "validate", str(root)], env,
                             timeout=timeout).returncode
    if problem:
        said = (timed.stdout + timed.stderr).strip().splitlines()
        problem = f"{problem}; exit {timed.returncode}: {one_line(said[-1] if said else '', 200)}"
    return Run(marketplace, plant.id if plant else None, timed.returncode,
               round(timed.wall_s, 1), skills, problem, validate)


def _table(rows: list[list[str]], head: list[str]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths)),
                      *(fmt.format(*r) for r in rows)])


def report(baselines: dict[str, Run], results: list[tuple[PlantResult, list[str]]],
           plants: list[Plant]) -> dict:
    print()
    print("Unplanted marketplaces")
    rows, false_alarms, dishonest = [], [], []
    for name, run in baselines.items():
        expected = skill_folders(name)
        statuses = [v.status for v in run.skills.values()]
        for folder, v in sorted(run.skills.items()):
            if v.status in BAD:
                false_alarms.append(f"{name}/{folder}: {v.status} (unplanted): "
                                    + one_line(v.cases[0].evidence if v.cases else ""))
            dishonest += [f"{name}/{folder}/{c.case_id}" for c in v.cases
                          if c.status == "pass" and c.honest is False]
        if run.validate not in (0, None):
            false_alarms.append(f"{name}: aeval validate exited {run.validate} (unplanted)")
        found = len(set(expected) & set(run.skills))
        rows.append([name, f"{found}/{len(expected)}", str(statuses.count("pass")),
                     str(statuses.count("untested")), str(sum(s in BAD for s in statuses)),
                     str(run.exit), str(run.validate), f"{run.wall_s:.0f}", run.problem])
    print(_table(rows, ["marketplace", "found", "pass", "untested", "fail/error", "exit",
                        "validate", "wall s", "problem"]))
    if results:
        print()
        print("Plants")
        print(_table([[r.plant, r.marketplace, r.skill, r.kind, r.status,
                       "yes" if r.line_ok else "no", "yes" if r.cause_ok else "no",
                       "yes" if not changed else f"no ({len(changed)})",
                       f"CAUGHT ({r.tier})" if r.caught else "missed"]
                      for r, changed in results],
                     ["plant", "marketplace", "skill", "kind", "status", "line", "cause",
                      "others kept", "result"]))
        missed = [r for r, _ in results if not r.caught]
        if missed:
            print()
            print("Missed: what aeval said instead")
            by_id = {p.id: p for p in plants}
            for r in missed:
                exp = by_id[r.plant].expect
                named = f", names line {', '.join(map(str, r.named))}" if r.named else ""
                print(f"  {r.plant} {r.skill} (wants {exp.file}:{exp.line}, "
                      f"{exp.cause!r}{named}): {r.status}: {r.said}")
        for r, changed in results:
            false_alarms += [f"{r.marketplace}/{c} under {r.plant}" for c in changed]
    figures = per_marketplace(baselines, results)
    print()
    print("Figures per marketplace")
    print(_table([[f["marketplace"], str(f["skills"]),
                   f"{f['exercised']}/{f['skills']} = {f['exercised'] / max(f['skills'], 1):.0%}",
                   f"{f['caught']}/{f['plants']}", str(f["by_static"]), str(f["by_running"]),
                   str(f["caught_on_false_fail"]), str(f["false_fails"]),
                   str(f["false_errors"])] for f in figures],
                 ["marketplace", "skills", "exercised", "caught", "by S0", "by running",
                  "on a false fail", "false fails", "false errors"]))
    caught = sum(r.caught for r, _ in results)
    print()
    print("Totals")
    if results:
        print(f"  recall:           {caught}/{len(results)} = {caught / len(results):.0%}")
    print(f"  false alarms:     {len(false_alarms)}")
    for fa in false_alarms:
        print(f"    {fa}")
    print(f"  dishonest passes: {len(dishonest)}")
    for d in dishonest:
        print(f"    {d}")
    return {"recall": [caught, len(results)], "false_alarms": false_alarms,
            "dishonest_passes": dishonest, "figures": figures}


def per_marketplace(baselines: dict[str, Run],
                    results: list[tuple[PlantResult, list[str]]]) -> list[dict]:
    """Per marketplace: skills and how many were exercised (not `untested`) as committed;
    plants, caught, and caught by the static check (S0) or by running; a plant whose skill
    already fails as committed proves nothing, so it is counted apart (``on a false fail``),
    not as caught; false fails and false errors: skills nothing was planted in that `fail`,
    or `error`/`internal`, as committed or under a plant (a verdict changed to one of these)."""
    out = []
    for name, run in baselines.items():
        statuses = [v.status for v in run.skills.values()]
        bad = {f for f, v in run.skills.items() if v.status in BAD}
        mine = [r for r, _ in results if r.marketplace == name and r.skill not in bad]
        tainted = [r for r, _ in results if r.marketplace == name and r.skill in bad]
        turned = [c.rsplit("->", 1)[1] for r, changed in results if r.marketplace == name
                  for c in changed]
        out.append({
            "marketplace": name, "skills": len(statuses),
            "exercised": sum(s != "untested" for s in statuses),
            "plants": len(mine) + len(tainted), "caught": sum(r.caught for r in mine),
            "caught_on_false_fail": sum(r.caught for r in tainted),
            "by_static": sum(r.tier == "static" for r in mine),
            "by_running": sum(r.tier == "running" for r in mine),
            "false_fails": statuses.count("fail") + turned.count("fail"),
            "false_errors": sum(s in ("error", "internal") for s in [*statuses, *turned]),
        })
    return out


def main() -> int:
    p = argparse.ArgumentParser(prog="recall.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Plants and marketplaces: tests/corpus/plants.json, "
                                       "tests/corpus/marketplaces/.")
    p.add_argument("--plant", action="append", metavar="ID",
                   help="run only this plant (repeatable); its marketplace's baseline runs too")
    p.add_argument("--marketplace", action="append", metavar="NAME",
                   help="only this marketplace (repeatable): "
                        + ", ".join(marketplace_names()))
    p.add_argument("--set", choices=["all", "asserted", "45"], default="all",
                   help="which marketplaces: all (default), those the e2e recall test asserts "
                        "(loader.RECALL_ASSERTED), or issues 45/49's (loader.STYLES_45)")
    p.add_argument("--no-plants", action="store_true", help="only the unplanted marketplaces")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="aeval runs at a time (default 1; each has its own PREFECT_HOME)")
    p.add_argument("--timeout", type=float, default=1800, metavar="S",
                   help="seconds one aeval run may take (default 1800)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write every result here")
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="build and run in DIR and keep it (default: a temporary folder)")
    args = p.parse_args()
    if args.jobs < 1:
        p.error("--jobs must be at least 1")

    plants = load_plants()
    known = {pl.id for pl in plants}
    if args.plant:
        unknown = sorted(set(args.plant) - known)
        if unknown:
            p.error(f"unknown plant(s): {', '.join(unknown)} (see tests/corpus/plants.json)")
        plants = [pl for pl in plants if pl.id in set(args.plant)]
    chosen = {"all": marketplace_names(), "asserted": sorted(RECALL_ASSERTED),
              "45": sorted(STYLES_45)}[args.set]
    names = args.marketplace or sorted({pl.marketplace for pl in plants} if args.plant
                                       else chosen)
    unknown = sorted(set(names) - set(marketplace_names()))
    if unknown:
        p.error(f"unknown marketplace(s): {', '.join(unknown)}")
    plants = [] if args.no_plants else [pl for pl in plants if pl.marketplace in names]

    print(f"machine: {machine()}")
    print(f"aeval: {aeval_exe()}; {len(names)} marketplace(s), {len(plants)} plant(s), "
          f"{args.jobs} job(s)")
    work = args.keep or Path(tempfile.mkdtemp(prefix="aeval-recall-"))
    work.mkdir(parents=True, exist_ok=True)
    homes = [work / f"prefect-home-{i}" for i in range(args.jobs)]
    free = list(homes)
    lock = threading.Lock()
    start = time.monotonic()

    def job(name: str, plant: Plant | None) -> Run:
        with lock:
            home = free.pop()
        try:
            run = run_one(name, plant, work, home, args.timeout)
        finally:
            with lock:
                free.append(home)
        print(f"  {name:<10} {plant.id if plant else 'unplanted':<9} exit {run.exit} "
              f"in {run.wall_s:.0f} s", flush=True)
        return run

    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            base_f = {n: pool.submit(job, n, None) for n in names}
            plant_f = [(pl, pool.submit(job, pl.marketplace, pl)) for pl in plants]
            baselines = {n: f.result() for n, f in base_f.items()}
            results = []
            for pl, f in plant_f:
                run = f.result()
                results.append((judge(pl, run.skills, run.problem),
                                changed_verdicts(run.skills, baselines[pl.marketplace].skills,
                                                 {pl.skill})))
        totals = report(baselines, results, plants)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"{time.monotonic() - start:.0f} s; load at the end: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({
            "machine": machine(), "totals": totals,
            "baselines": {n: asdict(r) for n, r in baselines.items()},
            "plants": [{**asdict(r), "changed": c} for r, c in results]}, indent=2) + "\n",
            encoding="utf-8")
        print(f"results: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
