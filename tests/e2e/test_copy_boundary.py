"""Issue 33, classes 2 and 3, through the real command line: aeval's own copies never follow
a link out of the skill (a case file linked to an auth record, a fixtures folder linked to a
folder holding a socket, a helper nested past the walks' depth bound make their skill
`invalid` with one clear line, and the other skills still run), and Δ has no edges (a
Python startup hook the attempt writes in its user site, and a walk of the copy cut at its
depth bound, keep the case from passing)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.deployments.cli.main import main

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None,
                                 reason=f"bubblewrap: {bwrap_problem()}")

AUTH = 'api_key = "pnu_FAKE-AUTH-RECORD-0042"\n'
DEEP = 260  # folders: past aeval.isolation.tree.MAX_DEPTH (256)

STATS = '''"""Summary statistics of a CSV column."""
import csv


def load(path, column):
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    validate(rows, column)
    return [float(r[column]) for r in rows]


def validate(rows, column):
    if not rows or column not in rows[0]:
        raise SystemExit(f"error: column {column!r} not in the file")
    # the skill's defect: a header check that wants every column to be "values"
    if column != "values":
        raise SystemExit(f"error: unsupported column {column!r}")


def mean(values):
    return sum(values) / len(values)
'''

REPORT = '''#!/usr/bin/env python3
"""Print the mean of one column of a CSV file."""
import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
import stats  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("csv")
    p.add_argument("--column", default="value")
    a = p.parse_args()
    print(f"mean {a.column}: {stats.mean(stats.load(a.csv, a.column)):.2f}")


if __name__ == "__main__":
    main()
'''

# What an agent writes instead of fixing lib/stats.py: a startup hook in its user site that
# patches the skill's module as it is imported (the skill copy stays byte-identical).
HOOK = '''import importlib.abc, importlib.util, sys

class _Patch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "stats":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            module.validate = lambda rows, column: None
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _Patch())
'''
WRITE_HOOK = ("SITE=$(python3 -c 'import site; print(site.getusersitepackages())') && "
              "mkdir -p \"$SITE\" && cat > \"$SITE/usercustomize.py\" <<'EOF'\n" + HOOK + "EOF")
RUN = "python3 $SKILL_DIR/scripts/report.py fixtures/sales.csv --column value > report.txt"


def csv_skill(root: Path, name: str, steps: list[str] | None = None,
              files: list[str] | None = None, **case) -> Path:
    """A realistic skill: SKILL.md, scripts/report.py (argparse), lib/stats.py, a fixture."""
    d = root / name
    (d / "scripts").mkdir(parents=True)
    (d / "lib").mkdir()
    (d / "fixtures").mkdir()
    (d / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Prints the mean of a CSV column. Use for quick "
        "summaries of sales exports.\n---\n# CSV mean\n\n"
        "```bash\npython3 scripts/report.py fixtures/sales.csv --column values\n```\n")
    (d / "scripts" / "report.py").write_text(REPORT)
    (d / "scripts" / "report.py").chmod(0o755)
    (d / "lib" / "stats.py").write_text(STATS)
    (d / "fixtures" / "sales.csv").write_text("region,value\nnorth,10\nsouth,14\n")
    (d / "eval.config").write_text(json.dumps({"evals": [{
        "id": "mean", "prompt": "Print the mean sales value.",
        "expected_outcome": "The mean is printed to report.txt.",
        "files": files if files is not None else ["fixtures/"],
        "steps": steps if steps is not None else [RUN], **case,
        "assertions": [{"type": "file_contains", "path": "report.txt",
                        "pattern": "mean [a-z]+: 12.00"}]}]}))
    return d


def run(target: Path, out: Path, *extra: str) -> tuple[int, Path]:
    code = main(["run", str(target), "--out", str(out), "-q", "--runtime", "literal", *extra])
    (rd,) = (out / "runs").iterdir()
    return code, rd


def grading(rd: Path, name: str) -> dict:
    return json.loads((rd / name / "literal" / "mean" / "grading.json").read_text())


def skill_summary(rd: Path, name: str) -> dict:
    return json.loads((rd / name / "literal" / "benchmark.json").read_text())


def test_links_out_of_the_skill_are_refused_and_the_other_skills_still_run(tmp_path, capsys):
    # an auth record where a Prefect home would keep it, and a folder holding a live socket
    home = tmp_path / "prefect-home"
    home.mkdir()
    (home / "auth.toml").write_text(AUTH)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(run_dir / "agent.sock"))
    sock.listen()
    mp = tmp_path / "mp"
    good = csv_skill(mp, "csv-mean", steps=[RUN.replace("value >", "values >")],
                     files=["fixtures/"])
    (good / "fixtures" / "sales.csv").write_text("region,values\nnorth,10\nsouth,14\n")
    (good / "fixtures" / "latest.csv").symlink_to("sales.csv")  # inside: kept as a link
    auth = csv_skill(mp, "csv-auth", files=["fixtures/", "config/auth.toml"])
    (auth / "config").mkdir()
    (auth / "config" / "auth.toml").symlink_to(home / "auth.toml")
    sockets = csv_skill(mp, "csv-sockets", files=["fixtures/", "cache"])
    (sockets / "cache").symlink_to(run_dir)
    nested = csv_skill(mp, "csv-nested", files=["fixtures/"])
    (nested / "data").mkdir()
    (nested / "data" / "runtime").symlink_to("../../csv-auth/config")  # out, via a sibling
    try:
        code, rd = run(mp, tmp_path / "s")
    finally:
        sock.close()
    err = "".join(capsys.readouterr())  # progress lines: stdout or stderr, as configured
    assert code == 2  # invalid skills, and no case failed
    g = grading(rd, "csv-mean")
    assert g["status"] == "pass", g["status_reason"]
    cfg = f"{auth}/eval.config:evals[0].files[1]: 'config/auth.toml' resolves through a symlink"
    assert cfg in err, err
    assert (f"{sockets}/eval.config:evals[0].files[1]: 'cache' resolves through a symlink"
            in err), err
    assert f"{nested}: 'data/runtime' is a symlink to ../../csv-auth/config" in err, err
    for name in ("csv-auth", "csv-sockets", "csv-nested"):
        assert not (rd / name / "literal" / "mean" / "grading.json").exists(), name
    manifest = json.loads((rd / "run.json").read_text())
    status = {s["name"]: s["status"] for s in manifest["skills"]}
    assert status == {"csv-mean": "pass", "csv-auth": "invalid", "csv-sockets": "invalid",
                      "csv-nested": "invalid"}, status
    for f in (tmp_path / "s").rglob("*"):  # the auth record reached no file of the run
        if f.is_file() and not f.is_symlink():
            assert b"FAKE-AUTH-RECORD" not in f.read_bytes(), f


def test_a_socket_inside_a_case_folder_is_refused_by_name(tmp_path, capsys, monkeypatch):
    mp = tmp_path / "mp"
    d = csv_skill(mp, "csv-socket-inside", files=["fixtures/"])
    sock = socket.socket(socket.AF_UNIX)
    with monkeypatch.context() as m:  # bound by a relative name: a deep tmp_path (pytest-xdist
        m.chdir(d / "fixtures")       # adds a level) is past AF_UNIX's 108 bytes
        sock.bind("agent.sock")
    try:
        code, _ = run(mp, tmp_path / "s")
    finally:
        sock.close()
    err = "".join(capsys.readouterr())  # progress lines: stdout or stderr, as configured
    assert code == 2
    assert f"{d}: 'fixtures/agent.sock' is a socket" in err, err


def test_a_helper_past_the_depth_bound_makes_the_skill_invalid_before_anything_runs(
        tmp_path, capsys):
    mp = tmp_path / "mp"
    d = csv_skill(mp, "csv-deep", steps=["touch ran.txt", RUN])
    deep = d / "lib" / "vendor" / Path(*["pkg"] * DEEP)
    deep.mkdir(parents=True)
    (deep / "helper.py").write_text("def mean(v):\n    return sum(v) / len(v)\n")
    ok = csv_skill(mp, "csv-mean", steps=[RUN.replace("value >", "values >")])
    (ok / "fixtures" / "sales.csv").write_text("region,values\nnorth,10\nsouth,14\n")
    code, rd = run(mp, tmp_path / "s")
    err = "".join(capsys.readouterr())  # progress lines: stdout or stderr, as configured
    assert code == 2
    assert f"{d}: 'lib/vendor/pkg/pkg/" in err and "is 256 folders deep" in err, err
    assert grading(rd, "csv-mean")["status"] == "pass"
    assert not (rd / "csv-deep" / "literal").exists()  # nothing of it ran


@needs_bwrap
@pytest.mark.parametrize("remove", [False, True], ids=["kept", "written-used-removed"])
def test_a_startup_hook_in_the_user_site_is_a_change_of_the_skill(tmp_path, remove):
    mp = tmp_path / "mp"
    steps = [WRITE_HOOK, RUN]
    if remove:
        steps.append("rm \"$(python3 -c 'import site; print(site.getusersitepackages())')"
                     "/usercustomize.py\"")
    csv_skill(mp, "csv-hooked", steps=steps)
    code, rd = run(mp, tmp_path / "s", "--sandbox", "require")
    out = (rd / "csv-hooked" / "literal" / "mean" / "outputs" / "report.txt").read_text()
    assert "mean value: 12.00" in out  # the hook did work: the skill's check was skipped
    g = grading(rd, "csv-hooked")
    s1 = next(e for e in g["expectations"] if e["id"] == "S1")
    assert g["status"] == "fail" and s1["status"] == "failed", g["status_reason"]
    assert "site-packages/usercustomize.py" in s1["evidence"], s1["evidence"]
    assert "startup hook" in s1["evidence"]
    assert code == 1


@needs_bwrap
def test_a_walk_cut_at_the_depth_bound_keeps_the_case_from_passing(tmp_path):
    # setup unpacks a vendored tree into $SKILL_DIR past the walks' depth; the steps edit
    # a helper down there through mmap (no inotify event) and put it back
    mp = tmp_path / "mp"
    make = ("python3 -c \"import pathlib, os; d = pathlib.Path(os.environ['SKILL_DIR'], "
            f"'vendor', *['pkg'] * {DEEP}); d.mkdir(parents=True); "
            "(d / 'helper.py').write_text('VALUE = 1\\n')\"")
    edit = ("python3 -c \"import mmap, os, pathlib; p = next(pathlib.Path(os.environ["
            "'SKILL_DIR'], 'vendor').rglob('helper.py')); f = open(p, 'r+b'); "
            "m = mmap.mmap(f.fileno(), 0); old = m[:]; m[:5] = b'HACKD'; m.flush(); "
            "m[:] = old; m.flush()\"")
    d = csv_skill(mp, "csv-vendored", steps=[edit, RUN.replace("value >", "values >")],
                  setup=[make])
    (d / "fixtures" / "sales.csv").write_text("region,values\nnorth,10\nsouth,14\n")
    code, rd = run(mp, tmp_path / "s", "--sandbox", "require")
    g = grading(rd, "csv-vendored")
    s1 = next(e for e in g["expectations"] if e["id"] == "S1")
    assert g["status"] != "pass" and s1["status"] == "failed", g["status_reason"]
    assert "could not finish" in s1["evidence"] and "256" in s1["evidence"], s1["evidence"]
    assert code == 1
