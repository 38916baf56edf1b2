"""Mutation score of the verdict core: how many realistic one-line mutations of the code that
decides a verdict its fast tests catch (mutmut 3, the `[mutation]` extra).

    .venv/bin/pip install -e '.[test,mutation]'
    .venv/bin/python benchmarks/mutation.py                    # every module of the core
    .venv/bin/python benchmarks/mutation.py judge verdict      # some of them
    .venv/bin/python benchmarks/mutation.py redact --survivors # and list what survived
    .venv/bin/python benchmarks/mutation.py --json /tmp/mutation.json

Each module runs alone in a scratch copy of the working tree (tracked and untracked files,
not ignored ones), with mutmut pointed at that module's unit tests only (`MODULES`), so one
module takes minutes on two cores. mutmut mutates the module's function bodies (a flipped
comparison, a dropped condition, a changed constant or string, an argument left out, ...),
runs the tests that cover each mutated function, and a mutant is *killed* when one of them
fails (or times out). Every mutant counts, string ones included: a reason a user reads is
behaviour too.

A surviving mutant that no test could kill, because the program behaves the same, is listed
in `mutation_equivalent.toml` with the reason; it is left out of the score and printed as
such, never skipped silently. An entry names the module, the function and the mutated line
as mutmut writes it, so it survives renumbering; one that no longer matches a survivor is
reported as stale.

    score = killed / (mutants - equivalent)

Where a module holds more than the verdict core (workspace.py also places the skill copy and
collects the outputs), only its core functions count (`CORE_FUNCTIONS`); how many mutants
that leaves out is printed.

The machine's load is printed at the start and the end: the time taken is comparable only on
an otherwise idle machine, the score anywhere.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT = Path(__file__).resolve().parent / "mutation_equivalent.toml"

# module of the verdict core -> the fast tests that pin it
MODULES: dict[str, tuple[str, list[str]]] = {
    "judge": ("aeval/verdicts/judge.py", ["tests/unit/test_judge.py"]),
    "verdict": ("aeval/verdicts/status.py", ["tests/unit/test_verdict.py",
                                              "tests/unit/test_judge.py"]),
    # the diagnosis is pinned by real blocks run by the literal runtime (seconds, no model)
    "doctest": ("aeval/verdicts/doctest.py", ["tests/unit/test_doctest.py",
                                     "tests/unit/test_doctest_diagnosis.py",
                                     "tests/integration/test_doc_tests.py",
                                     "tests/integration/test_doc_test_taint.py"]),
    "diagnosis": ("aeval/verdicts/diagnosis.py", ["tests/unit/test_doctest.py",
                                         "tests/unit/test_doctest_diagnosis.py",
                                         "tests/unit/test_doctest_near_module.py",
                                         "tests/unit/test_doctest_readers.py",
                                         "tests/integration/test_doc_tests.py"]),
    "missing": ("aeval/verdicts/missing.py", ["tests/unit/test_doctest_readers.py",
                                     "tests/unit/test_doctest_near_module.py",
                                     "tests/unit/test_doctest_diagnosis.py"]),
    "documented": ("aeval/verdicts/documented.py", ["tests/unit/test_documented.py"]),
    "redact": ("aeval/isolation/redact.py", ["tests/unit/test_redact.py",
                                   "tests/unit/test_log_redaction.py"]),
    "workspace": ("aeval/isolation/workspace.py", ["tests/unit/test_manifest.py",
                                         "tests/unit/test_workspace.py"]),
    "static_check": ("aeval/verdicts/static_check.py", ["tests/unit/test_static_check.py"]),
}
# Where a module holds more than the verdict core, only these functions count (the rest of
# workspace.py places the copy and collects outputs: what the grader sees, not a verdict rule).
CORE_FUNCTIONS: dict[str, frozenset[str]] = {
    "workspace": frozenset({"shown_path", "restored_changes", "_moved", "path_changes",
                            "rewritten_changes", "manifest", "_text", "_parse", "_detail",
                            "_git_lines", "diff_skill", "render_diff"}),
}
KILLED = {"killed", "timeout", "caught by type check"}
_RESULT = re.compile(r"^\s*(\S+): (.+)$")


@dataclass
class Mutant:
    name: str
    status: str
    function: str = ""
    line: str = ""  # the mutated line, as mutmut wrote it
    diff: str = ""
    equivalent: str | None = None  # the reason, when listed as equivalent


@dataclass
class ModuleScore:
    module: str
    path: str
    tests: list[str]
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    equivalent: int = 0
    outside: int = 0  # mutants of functions outside the core (`CORE_FUNCTIONS`): not counted
    seconds: float = 0.0
    error: str | None = None
    survivors: list[Mutant] = field(default_factory=list)
    stale: list[dict] = field(default_factory=list)

    @property
    def score(self) -> float | None:
        counted = self.mutants - self.equivalent
        return self.killed / counted if counted else None


def mutmut_exe() -> Path:
    exe = Path(sys.executable).parent / "mutmut"
    if not exe.exists():
        raise SystemExit(f"error: {exe} not found: pip install -e '.[test,mutation]'")
    return exe


def load_equivalents() -> list[dict]:
    if not EQUIVALENT.exists():
        return []
    entries = tomllib.loads(EQUIVALENT.read_text()).get("mutant", [])
    for i, e in enumerate(entries, 1):
        missing = [k for k in ("module", "function", "line", "reason") if not e.get(k)]
        if missing:
            raise SystemExit(f"error: {EQUIVALENT.name}: mutant #{i}: missing "
                             f"{', '.join(missing)}")
    return entries


def scratch_copy(dest: Path) -> None:
    """The working tree's files (tracked and untracked, ignored ones left out) under ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    for raw in listed:
        if not raw:
            continue
        rel = Path(os.fsdecode(raw))
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _config(work: Path, path: str, tests: list[str]) -> str:
    """mutmut's section of setup.cfg for one module (the copied pyproject.toml has none):
    the other top-level folders are copied beside the mutated package (tests read them)."""
    top = sorted(p.name for p in work.iterdir() if p.is_dir() and p.name not in (
        "aeval", "tests", "mutants"))
    also = "\n    ".join(top)
    return (f"[mutmut]\nsource_paths=aeval\nonly_mutate={path}\n"
            f"pytest_add_cli_args_test_selection=\n    " + "\n    ".join(tests) + "\n"
            f"pytest_add_cli_args=-p no:cacheprovider -q\n"
            f"also_copy=\n    {also}\n")


def _functions(mutated: Path) -> dict[str, list[str]]:
    """Source lines of every function mutmut wrote into the mutated module, by name."""
    text = mutated.read_text()
    lines = text.splitlines()
    out = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name:
            out[node.name] = lines[node.lineno:node.end_lineno]  # the body, not the def line
    return out


def describe(m: Mutant, functions: dict[str, list[str]]) -> None:
    """The function a mutant lives in, its mutated line and its diff against the original."""
    short = m.name.rsplit(".", 1)[-1]
    base = short.rsplit("__mutmut_", 1)[0]
    m.function = base.removeprefix("x_").replace("ǁ", ".").strip(".").removeprefix("x.")
    orig, mutant = functions.get(base + "__mutmut_orig"), functions.get(short)
    if orig is None or mutant is None:
        return
    diff = list(difflib.unified_diff(orig, mutant, lineterm="", n=0))[2:]
    m.diff = "\n".join(d for d in diff if not d.startswith("@@"))
    added = [d[1:].strip() for d in diff if d.startswith("+")]
    m.line = added[0] if added else "(line removed)"


def run_module(module: str, children: int, keep: bool) -> ModuleScore:
    path, tests = MODULES[module]
    result = ModuleScore(module, path, tests)
    work = Path(tempfile.mkdtemp(prefix=f"aeval-mutation-{module}-"))
    start = time.monotonic()
    try:
        scratch_copy(work)
        (work / "setup.cfg").write_text(_config(work, path, tests))
        env = {**os.environ, "PREFECT_HOME": str(work / ".prefect"),
               "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("PREFECT_API_URL", None)
        run = subprocess.run(["nice", "-n", "15", str(mutmut_exe()), "run", "--max-children",
                              str(children)], cwd=work, env=env, capture_output=True, text=True)
        listed = subprocess.run([str(mutmut_exe()), "results", "--all", "true"], cwd=work,
                                env=env, capture_output=True, text=True)
        mutants = [Mutant(*m.groups()) for line in listed.stdout.splitlines()
                   if (m := _RESULT.match(line)) and "__mutmut_" in m.group(1)]
        if not mutants:
            tail = (run.stdout + run.stderr).strip().splitlines()[-15:]
            result.error = "mutmut produced no mutants:\n" + "\n".join(tail)
            return result
        functions = _functions(work / "mutants" / path)
        equivalents = [e for e in load_equivalents() if e["module"] == module]
        used: set[int] = set()
        core = CORE_FUNCTIONS.get(module)
        for m in mutants:
            if core is not None:
                describe(m, functions)
                if m.function not in core:
                    result.outside += 1
                    continue
            if m.status in KILLED:
                result.killed += 1
                continue
            describe(m, functions)
            hit = next((i for i, e in enumerate(equivalents) if e["function"] == m.function
                        and e["line"] == m.line), None)
            if hit is not None and m.status == "survived":
                used.add(hit)
                m.equivalent = equivalents[hit]["reason"]
                result.equivalent += 1
            else:
                result.survived += 1
            result.survivors.append(m)
        result.mutants = len(mutants) - result.outside
        result.stale = [e for i, e in enumerate(equivalents) if i not in used]
    finally:
        result.seconds = time.monotonic() - start
        if keep:
            print(f"  kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return result


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", metavar="MODULE",
                    help=f"modules of the core (default: all): {', '.join(MODULES)}")
    ap.add_argument("--children", type=int, default=2, help="mutants tested at once")
    ap.add_argument("--survivors", action="store_true", help="print every surviving mutant")
    ap.add_argument("--keep", action="store_true", help="keep each module's scratch copy")
    ap.add_argument("--json", type=Path, help="write the scores and survivors here")
    args = ap.parse_args()
    modules = args.modules or list(MODULES)
    if unknown := [m for m in modules if m not in MODULES]:
        ap.error(f"unknown module(s) {', '.join(unknown)}: choose from {', '.join(MODULES)}")
    mutmut_exe()
    print(f"mutmut {metadata.version('mutmut')}; load average at start: {load()}; "
          f"{os.cpu_count()} CPU(s)")
    scores = []
    for module in modules:
        print(f"{module} ({MODULES[module][0]}) ...", file=sys.stderr, flush=True)
        s = run_module(module, args.children, args.keep)
        scores.append(s)
        if s.error:
            print(f"{module}: {s.error}", file=sys.stderr)
    print(f"\n{'module':<14}{'mutants':>8}{'killed':>8}{'survived':>9}{'equiv.':>8}"
          f"{'score':>8}{'time':>8}")
    for s in scores:
        score = f"{s.score:.1%}" if s.score is not None else "-"
        print(f"{s.module:<14}{s.mutants:>8}{s.killed:>8}{s.survived:>9}{s.equivalent:>8}"
              f"{score:>8}{s.seconds:>7.0f}s")
    total = ModuleScore("overall", "", [], mutants=sum(s.mutants for s in scores),
                        killed=sum(s.killed for s in scores),
                        survived=sum(s.survived for s in scores),
                        equivalent=sum(s.equivalent for s in scores),
                        outside=sum(s.outside for s in scores),
                        seconds=sum(s.seconds for s in scores))
    score = f"{total.score:.1%}" if total.score is not None else "-"
    print(f"{'overall':<14}{total.mutants:>8}{total.killed:>8}{total.survived:>9}"
          f"{total.equivalent:>8}{score:>8}{total.seconds:>7.0f}s")
    print(f"load average at end: {load()}")
    for s in scores:
        if s.outside:
            print(f"{s.module}: {s.outside} mutant(s) of functions outside the verdict core "
                  "not counted")
        for e in s.stale:
            print(f"stale equivalent entry ({s.module}.{e['function']}): {e['line']}")
        if args.survivors:
            for m in s.survivors:
                if m.equivalent is None:
                    print(f"\n{m.name} [{m.status}] in {s.module}.{m.function}\n{m.diff}")
    if args.json:
        args.json.write_text(json.dumps(
            [{**asdict(s), "score": s.score} for s in [*scores, total]], indent=2) + "\n")
    return 1 if any(s.error for s in scores) else 0


if __name__ == "__main__":
    sys.exit(main())
