"""The builtin agent's tools under attack: hardlinks and symlinks out of the workspace, huge
files, FIFOs, and arguments a confused model sends."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from aeval.adapters.runtimes._agent_tools import Toolbox
from aeval.adapters.sandbox.bwrap import bwrap_problem, make_sandbox
from aeval.isolation.redact import Redactor
from aeval.isolation.sandbox import SandboxPolicy
from aeval.isolation.shell import base_env
from aeval.isolation.workspace import prepare_workspace
from tests.conftest import EXAMPLES

CANARY = "hf_tOkEn-canary-31415926535897932"


@pytest.fixture
def ws(tmp_path):
    return prepare_workspace(tmp_path / "attempt", EXAMPLES / "skills" / "segmentation",
                             "segmentation", ".agents/skills", ["fixtures/"])


@pytest.fixture
def outside(tmp_path):
    f = tmp_path / "outside.txt"
    f.write_text("HOST FILE, must not change\n")
    return f


def tools(ws, **kw):
    return Toolbox(ws.path, ws.skill_dir, base_env(ws.home), 16_000, **kw)


def test_a_hardlink_made_with_bash_cannot_be_written_edited_or_read(ws, outside):
    tb = tools(ws)
    made = tb.run("bash", {"command": f"ln {outside} notes.txt && echo linked"}, 60)
    assert made.ok and "linked" in made.output
    w = tb.run("write_file", {"path": "notes.txt", "content": "overwritten"}, 60)
    e = tb.run("edit_file", {"path": "notes.txt", "old_text": "HOST", "new_text": "PWNED"}, 60)
    r = tb.run("read_file", {"path": "notes.txt"}, 60)
    for out in (w, e, r):
        assert not out.ok and "hard links" in out.output
    assert outside.read_text() == "HOST FILE, must not change\n"


def test_symlinks_out_of_the_workspace_are_refused(ws, outside):
    tb = tools(ws)
    assert tb.run("bash", {"command": f"ln -s {outside} out.txt; ln -s {outside.parent} up"},
                  60).ok
    for args in ({"path": "out.txt", "content": "x"}, {"path": "up/outside.txt", "content": "x"},
                 {"path": "../outside.txt", "content": "x"}):
        out = tb.run("write_file", args, 60)
        assert not out.ok and "outside the workspace" in out.output
    assert not tb.run("read_file", {"path": "out.txt"}, 60).ok
    assert outside.read_text() == "HOST FILE, must not change\n"


def test_a_dangling_symlink_is_not_created_through(ws, tmp_path):
    tb = tools(ws)
    target = tmp_path / "created-outside.txt"
    assert tb.run("bash", {"command": "ln -s ../../created-outside.txt out.txt"}, 60).ok
    out = tb.run("write_file", {"path": "out.txt", "content": "x"}, 60)
    assert not out.ok and not target.exists()


def test_a_fifo_does_not_hang_read_or_write(ws):
    tb = tools(ws)
    os.mkfifo(ws.path / "pipe")
    assert not tb.run("read_file", {"path": "pipe"}, 60).ok
    assert not tb.run("write_file", {"path": "pipe", "content": "x"}, 60).ok


def test_read_file_of_an_800_mb_sparse_file_stays_small(ws, tmp_path):
    big = ws.path / "outputs" / "huge.log"
    big.parent.mkdir()
    with big.open("wb") as fh:
        fh.write(b"first line\n")
        fh.seek(800_000_000)
        fh.write(b"\nlast line: done\n")
    probe = (
        "import json, resource\n"
        "from pathlib import Path\n"
        "from aeval.adapters.runtimes._agent_tools import Toolbox\n"
        f"tb = Toolbox(Path({str(ws.path)!r}), Path({str(ws.skill_dir)!r}), {{}}, 16000)\n"
        "r = tb.run('read_file', {'path': 'outputs/huge.log'}, 60)\n"
        "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0]\n"
        "print(json.dumps({'rss_kb': int(hwm.split()[1]),"
        " 'ok': r.ok, 'out': r.output, 'cut': r.truncated}))\n")
    res = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True,
                                    text=True, timeout=120, check=True).stdout)
    assert res["ok"] and res["cut"] and res["rss_kb"] < 200_000
    assert res["out"].startswith("first line") and res["out"].rstrip().endswith("last line: done")
    assert len(res["out"]) < 17_000


def test_read_file_redacts_before_it_cuts(ws):
    tb = tools(ws, redactor=Redactor({"HF_TOKEN": CANARY}))
    head_keep = 16_000 // 3
    (ws.path / "log.txt").write_text("a" * (head_keep - 6) + CANARY + "b" * 50_000 + CANARY)
    out = tb.run("read_file", {"path": "log.txt"}, 60)
    assert out.ok and out.truncated
    assert "hf_tOk" not in out.output and "hf_" not in out.output.replace("[REDACTED", "")
    small = tools(ws, redactor=Redactor({"HF_TOKEN": CANARY}))
    (ws.path / "short.txt").write_text(f"token={CANARY}\n")
    assert small.run("read_file", {"path": "short.txt"}, 60).output == \
        "token=[REDACTED:HF_TOKEN]\n"


@pytest.mark.parametrize("tool,args", [
    ("bash", {"command": "echo hi", "timeout_s": "abc"}),
    ("bash", {"command": "echo hi", "timeout_s": -5}),
    ("bash", {"command": "echo hi", "timeout_s": "nan"}),
    ("bash", {"command": "echo hi", "timeout_s": True}),
    ("bash", {"command": "echo hi", "timeout_s": [1]}),
    ("bash", {"command": ["echo", "hi"]}),
    ("read_file", {"path": 7}),
    ("read_file", {"path": "a\0b"}),
    ("write_file", {"path": "x.txt", "content": {"not": "text"}}),
    ("write_file", {"path": ["x.txt"], "content": "x"}),
    ("edit_file", {"path": "SKILL.md", "old_text": None, "new_text": "x"}),
    ("list_dir", {"path": 3.5}),
    ("bash", ["echo", "hi"]),
    ("bash", "echo hi"),
    ("no_such_tool", {}),
])
def test_bad_arguments_are_tool_errors_not_exceptions(ws, tool, args):
    out = tools(ws).run(tool, args, 60)
    assert out.ok is False and out.output.startswith("error: ")
    # the call did not run: the agent's error, never the skill's
    assert out.refused == ("unknown_tool" if tool == "no_such_tool" else "invalid_arguments")


def test_a_tool_that_ran_and_failed_is_not_a_refusal(ws):
    assert tools(ws).run("read_file", {"path": "no/such.md"}, 60).refused is None
    out = tools(ws).run("bash", {"command": "exit 3"}, 60)
    assert out.ok is False and out.exit_code == 3 and out.refused is None


def test_a_numeric_string_timeout_is_accepted(ws):
    out = tools(ws).run("bash", {"command": "echo fine", "timeout_s": "30"}, 60)
    assert out.ok and "fine" in out.output


def test_write_then_edit_inside_the_workspace_still_work(ws):
    tb = tools(ws)
    assert tb.run("write_file", {"path": "outputs/notes.md", "content": "a b c\n"}, 60).ok
    assert tb.run("edit_file", {"path": "outputs/notes.md", "old_text": "b",
                                "new_text": "B"}, 60).ok
    assert (ws.path / "outputs" / "notes.md").read_text() == "a B c\n"
    skill_edit = tb.run("edit_file", {"path": ".agents/skills/segmentation/SKILL.md",
                                      "old_text": "| `segment_train` |",
                                      "new_text": "| `train` |"}, 60)
    assert skill_edit.ok and skill_edit.paths_written == [".agents/skills/segmentation/SKILL.md"]


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap: {bwrap_problem()}")
def test_bash_runs_in_the_sandbox_when_given(ws, outside):
    sb = make_sandbox("require", SandboxPolicy(root=ws.root))
    tb = tools(ws, sandbox=sb)
    out = tb.run("bash", {"command": f"ls /proc | grep -c '^[0-9]'; cat {outside} || true; "
                                     f"ln {outside} here.txt || echo no-link"}, 60)
    assert out.ok, out.output
    lines = out.output.splitlines()
    assert int(lines[1]) < 10 and "HOST FILE" not in out.output and "no-link" in out.output
    skill = tb.run("bash", {"command": f"chmod +x {ws.skill_dir}/SKILL.md"}, 60)
    assert skill.paths_written == [".agents/skills/segmentation/SKILL.md"]
