"""What the sandbox boundary costs (issues 19 and 42), on a 1,000-file skill: one sandboxed
command in the allowlisted view (bare, with the skill copy pinned, beside 300 sibling skills,
with a declared host tool shown, with network: true through slirp4netns), one walk of the
skill copy (manifest and identities, as Δ and every builtin bash call take it), and starting
the watch. Prints one line per figure (median of ``--repeat``).

    .venv/bin/python benchmarks/boundary_cost.py [--files 1000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aeval.adapters.sandbox.bwrap import bwrap_problem, make_sandbox  # noqa: E402
from aeval.adapters.sandbox.watch import SkillWatch  # noqa: E402
from aeval.isolation.sandbox import SandboxPolicy  # noqa: E402
from aeval.isolation.shell import base_env, run_command  # noqa: E402
from aeval.isolation.tree import tree  # noqa: E402
from aeval.isolation.workspace import prepare_workspace  # noqa: E402


def make_skill(d: Path, files: int) -> Path:
    """``files`` small files in folders of 10 (so files/10 folders), like a vendored skill."""
    (d / "SKILL.md").parent.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text("---\nname: big\ndescription: A big skill.\n---\n# Big\n")
    for i in range(files - 1):
        f = d / "lib" / f"pkg{i // 100:02d}" / f"mod{i // 10 % 10}" / f"f{i}.py"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"VALUE = {i}\n" * 40)
    return d


def median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="aeval-bench-boundary-", dir="/var/tmp"))
    attempts = Path(tempfile.mkdtemp(prefix="aeval-bench-ws-"))
    try:
        skills = base / "checkout" / "skills"
        original = make_skill(skills / "big", args.files)
        ws = prepare_workspace(attempts / "a", original, "big", ".agents/skills", [])
        folders = sum(1 for p in ws.skill_dir.rglob("*") if p.is_dir())
        print(f"skill: {args.files} files, {folders} folders")
        print(f"walk of the copy (manifest + identities): "
              f"{median(lambda: tree(ws.skill_dir, ws.root), args.repeat) * 1000:.1f} ms")

        def watch() -> None:
            SkillWatch(ws.skill_dir, above=ws.root).start().stop()

        print(f"watch start + stop: {median(watch, args.repeat) * 1000:.1f} ms")
        if bwrap_problem():
            print(f"no bubblewrap here: {bwrap_problem()}")
            return 0
        env = base_env(ws.home)
        git = Path(shutil.which("git") or "/usr/bin/git")
        for label, update, siblings in (
                ("bare", {}, 0), ("copy pinned", {"pinned": [ws.skill_dir]}, 0),
                ("copy pinned, 300 sibling skills", {"pinned": [ws.skill_dir]}, 300),
                ("copy pinned, a declared host tool", {"pinned": [ws.skill_dir],
                                                       "shown": [git]}, 0),
                ("copy pinned, network: true (slirp4netns)", {"pinned": [ws.skill_dir],
                                                              "network": True}, 0)):
            for i in range(siblings):
                (skills / f"other-{i:03d}").mkdir(exist_ok=True)
            sb = make_sandbox("require", SandboxPolicy(root=ws.root, **update))
            t = median(lambda sb=sb: run_command("true", ws.path, env, 60, sandbox=sb),
                       args.repeat)
            sb.close()
            print(f"one sandboxed command, {label}: {t * 1000:.0f} ms")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(attempts, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
