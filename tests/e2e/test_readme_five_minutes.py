"""The README's five-minute path, run verbatim: the README's first command, then every bash
block between the markers of docs/quickstart.md (which starts with that command), in
order, in a fresh copy of the repository (what a clone holds) with a fresh venv, the files it
says to copy written where it says. The reader has uv (the README says how to get it): this
environment's, alone on PATH; `uv pip install -e .` uses uv's cache; every step is bounded.
It checks what the README says each step shows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e

BEGIN, END = "<!-- five-minute path:", "<!-- five-minute path: end -->"
# what the conftest sets for in-process tests; a user's shell has none of it
TEST_ONLY = ("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "PREFECT_SERVER_LOGGING_LEVEL",
             "COLUMNS", "VIRTUAL_ENV", "PYTHONPATH")
FILE = re.compile(r"^`(?P<path>[\w./-]+)`\n(?P<fence>`{3,})(?P<lang>\w*)\n(?P<body>.*?)\n"
                  r"(?P=fence)$", re.M | re.S)
BLOCK = re.compile(r"^(?P<fence>`{3,})(?P<lang>\w*)\n(?P<body>.*?)\n(?P=fence)$", re.M | re.S)


def five_minute_path() -> list[tuple[str, str, str]]:
    """The section's steps in order: ("file", path, text) or ("bash", "", commands); the
    first is the README's own first command, which the quickstart page repeats."""
    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    start = text.index("\n", text.index(BEGIN)) + 1
    section = text[start:text.index(END)]
    files = {m.start("fence"): m for m in FILE.finditer(section)}
    steps = []
    for m in BLOCK.finditer(section):
        if m.start() in files:
            steps.append(("file", files[m.start()]["path"], m["body"] + "\n"))
        elif m["lang"] == "bash":
            steps.append(("bash", "", m["body"]))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = next(m["body"] for m in BLOCK.finditer(readme) if m["lang"] == "bash")
    assert steps[0] == ("bash", "", first), "docs/quickstart.md starts otherwise than README.md"
    return [("bash", "", first), *steps[1:]]


def clone(dest: Path) -> Path:
    """What a clone of the repository holds: its tracked and untracked-but-not-ignored
    files (so the working tree's changes are what is tested)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def test_the_steps_are_what_the_readme_shows():
    steps = five_minute_path()
    assert [kind for kind, *_ in steps] == ["bash", "file", "file", "bash", "file", "bash",
                                            "bash"]
    # the first step installs with uv (no model client: the literal runtime needs none) and
    # runs the bundled example; tests/unit/test_readme.py ties it to benchmarks/install_time.py
    assert steps[0][2] == ("python3 -m venv .venv && .venv/bin/pip install -q uv && "
                     ".venv/bin/uv pip install -e . && "
                           ".venv/bin/aeval run examples/marketplace")
    assert [p for kind, p, _ in steps if kind == "file"] == [
        "my-skills/word-count/SKILL.md", "my-skills/word-count/scripts/count.py",
        "my-skills/word-count/eval.config"]


def test_the_five_minute_path_runs_as_written(tmp_path):
    repo = clone(tmp_path / "aeval")
    env = {k: v for k, v in os.environ.items() if k not in TEST_ONLY}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), AEVAL_RETRIES="0")
    uv = tmp_path / "uv-bin"
    uv.mkdir()
    (uv / "uv").symlink_to(shutil.which("uv") or Path(sys.executable).parent / "uv")
    env["PATH"] = os.pathsep.join([str(uv), *(p for p in env["PATH"].split(os.pathsep)
                                              if not p.startswith(str(ROOT)))])  # not our venv
    results = []
    for kind, path, body in five_minute_path():
        if kind == "file":
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(body)
            continue
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", body], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=1500)
        results.append(proc)
    install, init, own, broken = results
    out = install.stdout
    # 1: installs, runs the example, exits 1 on purpose: two skills broken, three pass
    assert install.returncode == 1, install.stdout[-3000:] + install.stderr[-3000:]
    assert (repo / ".venv" / "bin" / "aeval").is_file()
    assert "starting Prefect (embedded server, stopped when this run ends) …" in out
    assert re.search(r"^exit 1: 4 case\(s\) failed: invoice-totals/skill-md, "
                     r"invoice-totals/totals, segmentation/inference, segmentation/train$",
                     out, re.M)
    for name in ("csv-stats", "hello-docs", "release-notes"):
        assert re.search(rf"^\S+ {name}/\S+ \[literal\]: PASS$", out, re.M), name
    assert "KeyError: 'segment_train'" in out and "What failed, with evidence:" in out
    report = repo / re.search(r"^report: +(\S+)$", out, re.M).group(1)  # in .aeval/
    assert report.is_file() and report.name == "report.html"
    assert report.parent.parent == repo / ".aeval" / "runs"
    # 3: aeval init writes a template from SKILL.md's block and runs it once
    assert init.returncode == 0, init.stdout[-3000:] + init.stderr[-3000:]
    assert "word-count: template, 1 case(s); first run: 1 pass" in init.stdout
    assert "fill the TODO fields (aeval validate lists them)" in init.stdout
    # the copied skill, with the contract that replaced the template, passes both its cases
    assert own.returncode == 0, own.stdout[-3000:] + own.stderr[-3000:]
    assert "word-count/count [literal]: PASS" in own.stdout
    assert "word-count/skill-md [literal]: PASS" in own.stdout
    assert own.stdout.rstrip().endswith("exit 0: every case passed")
    # broken the way skills break: a skill defect, exit 1, with the script's own refusal
    assert broken.returncode == 0, broken.stderr[-3000:]  # the `|| echo` of the README
    assert broken.stdout.rstrip().endswith("exit 1 (a skill defect, as expected)")
    assert "word-count/count [literal]: FAIL" in broken.stdout
    assert "unrecognized arguments: --out" in broken.stdout
