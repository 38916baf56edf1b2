"""The rough edges a new user hit on the command line, each pinned: every option documented,
unknown schema names answered with the valid ones, closed pipes ending quietly, unexpected
exceptions as one line (exit 4), gate reasons that say what they cut, and a fast `--help`."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.artifacts import SCHEMA_NAMES, CaseResult, SkillResult
from aeval.deployments.cli.main import build_parser, main
from aeval.exit_codes import epilog
from aeval.verdicts.status import gate
from tests.conftest import EXAMPLES

BIN = Path(sys.executable).parent


def aeval(*args: str, stdout=subprocess.PIPE, **kw) -> subprocess.CompletedProcess:
    """The installed console script, as a user runs it."""
    return subprocess.run([str(BIN / "aeval"), *args], stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=120, **kw)


def closed_pipe() -> int:
    """The write end of a pipe whose reader is already gone: every write gets EPIPE, the way
    `| head -1` looks once head has exited (deterministic, no race with head)."""
    r, w = os.pipe()
    os.close(r)
    return w


# -- every option in every --help has a help text ------------------------------------------

def subparsers(parser: argparse.ArgumentParser, name: str = "aeval"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from subparsers(sub, f"{name} {sub_name}")


def test_every_option_of_every_command_has_a_help_text():
    walked = dict(subparsers(build_parser()))
    assert {"aeval run", "aeval validate", "aeval schema", "aeval sweep", "aeval compare",
            "aeval regrade", "aeval runtimes", "aeval post", "aeval show"} <= set(walked)
    missing = [f"{name}: {'/'.join(a.option_strings) or a.dest}"
               for name, p in walked.items() for a in p._actions
               if not isinstance(a, argparse._SubParsersAction)
               and (not a.help or a.help == argparse.SUPPRESS or not a.help.strip())]
    assert missing == []


def test_every_command_takes_verbose_for_the_traceback_of_an_internal_error():
    for name, p in subparsers(build_parser()):
        if name != "aeval":
            assert any("--verbose" in a.option_strings for a in p._actions), name


def test_show_documents_its_exit_code():
    text = aeval("show", "--help").stdout
    assert "Exit code" in text and "gate code" in text
    assert "2 if RUN is unknown or did not finish" in text


def test_the_epilog_lists_every_exit_code_in_the_gates_order():
    """--help shows the codes the gate returns, in the order it tries them (it listed 1, 2,
    3, 0, 4 while the gate and the README said 1, 2, 4, 3, 0)."""
    text = aeval("--help").stdout
    assert epilog() in text
    codes = [int(m) for m in re.findall(r"^  (\d)  ", text[text.index("exit codes of"):], re.M)]
    assert codes == [1, 2, 4, 3, 5, 0]
    for line in ("1  a case failed", "2  a usage error", "3  an environment error",
                 "5  fewer case runs were tested", "0  every tested case passed",
                 "4  internal error: aeval itself failed"):
        assert line in text, line


def test_help_imports_neither_prefect_nor_a_model_sdk():
    """`aeval --help` stays fast: the parser module imports no heavy dependency."""
    code = ("import sys; import aeval.deployments.cli.main as c; c.build_parser().format_help(); "
            "heavy = [m for m in ('prefect', 'litellm', 'openai', 'anthropic', 'pandas', "
            "'rich') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


# -- aeval schema NAME ---------------------------------------------------------------------

def test_unknown_schema_name_says_so_and_lists_every_valid_name(capsys):
    assert main(["schema", "nosuch"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    (line,) = cap.err.splitlines()
    assert "unknown schema name 'nosuch'" in line
    assert line.endswith(", ".join(SCHEMA_NAMES))
    assert "eval-config" in SCHEMA_NAMES


def test_missing_schema_name_is_not_called_unknown(capsys):
    assert main(["schema"]) == 2
    err = capsys.readouterr().err
    assert "required" in err and "unknown" not in err and "eval-config" in err


# -- closed pipes --------------------------------------------------------------------------

def test_schema_into_head_exits_quietly():
    """The README's `aeval schema eval-config | head -1`, through a real shell pipeline."""
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {BIN / 'aeval'} schema eval-config | head -1"],
        capture_output=True, text=True, timeout=120)
    assert proc.stdout == "{\n"
    assert proc.stderr == "" and proc.returncode == 0


@pytest.mark.parametrize("args", [
    ["schema", "eval-config"],
    ["schema", "run"],
    ["validate", str(EXAMPLES / "skills" / "csv-stats")],  # a skill without a defect: exit 0
    ["runtimes"],
    ["--help"],
    ["show", "--help"],
])
def test_every_command_writing_into_a_closed_pipe_exits_quietly(args):
    w = closed_pipe()
    try:
        proc = aeval(*args, stdout=w)
    finally:
        os.close(w)
    assert proc.stderr == "", proc.stderr
    assert proc.returncode == 0


def test_a_closed_pipe_keeps_the_command_exit_code():
    """validate still says 2 for an invalid skill when nobody reads its output."""
    w = closed_pipe()
    try:
        proc = aeval("validate", str(EXAMPLES / "skills" / "nosuch-skill"), stdout=w)
        bad = aeval("schema", "nosuch", stdout=w)
    finally:
        os.close(w)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert bad.returncode == 2 and "unknown schema name" in bad.stderr


# -- an unexpected exception: one line, exit 4 ---------------------------------------------

@pytest.fixture
def foreign_run(tmp_path: Path) -> Path:
    """A run store whose run.json was written by something else: `aeval show` cannot read it
    and has no handling for that, so it reaches the last line of defence."""
    d = tmp_path / "store" / "runs" / "20260101-000000-000001"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps(["not", "a", "run"]))
    return tmp_path / "store"


def test_an_unexpected_exception_is_one_line_and_exit_4(foreign_run):
    proc = aeval("show", "latest", "--out", str(foreign_run))
    assert proc.returncode == 4
    (line,) = proc.stderr.splitlines()
    assert line.startswith("aeval: internal error: ValidationError")
    assert line.endswith("; rerun with -v for the traceback")
    assert "Traceback" not in proc.stdout + proc.stderr


def test_verbose_shows_the_traceback_of_an_internal_error(foreign_run):
    proc = aeval("show", "latest", "--out", str(foreign_run), "-v")
    assert proc.returncode == 4
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert "cmd_show" in proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("aeval: internal error: ValidationError")
    assert "rerun with -v" not in last


def test_main_restores_stdout_after_an_internal_error(foreign_run, capsys):
    before = sys.stdout
    assert main(["show", "latest", "--out", str(foreign_run)]) == 4
    assert sys.stdout is before
    assert "internal error" in capsys.readouterr().err


# -- gate reasons that cut a list say what they cut ----------------------------------------

def case(cid: str, status: str) -> CaseResult:
    return CaseResult(case_id=cid, runtime="literal", status=status, dir=f"s/literal/{cid}",
                      reason="r")


def skill(name: str, *statuses: str, invalid: bool = False) -> SkillResult:
    return SkillResult(name=name, path=f"/m/{name}", status="invalid" if invalid else "pass",
                       cases=[case(f"c{i}", st) for i, st in enumerate(statuses)])


@pytest.mark.parametrize("status,code", [("fail", 1), ("error", 3)])
def test_a_cut_case_list_says_and_n_more(status, code):
    g = gate([skill("big", *[status] * 7), skill("ok", "pass")])
    assert g.exit_code == code
    assert g.reason.startswith("7 case(s)")
    assert g.reason.endswith("big/c0, big/c1, big/c2, big/c3, big/c4 and 2 more")


@pytest.mark.parametrize("n", [1, 5])
def test_an_uncut_list_says_nothing_more(n):
    g = gate([skill("s", *["fail"] * n)])
    assert "more" not in g.reason and g.reason.endswith(f"s/c{n - 1}")


def test_a_cut_invalid_skill_list_says_and_n_more():
    g = gate([skill(f"bad{i}", invalid=True) for i in range(6)])
    assert g.exit_code == 2
    assert g.reason == "invalid skill(s): bad0, bad1, bad2, bad3, bad4 and 1 more"


# -- a mistyped flag of a subcommand gets that subcommand's usage ----------------------------

@pytest.mark.parametrize(("argv", "usage"), [
    (["run", "--modle", "openai/x"], "usage: aeval run "),
    (["sweep", "--epohcs", "2"], "usage: aeval sweep "),
    (["post", "--dryrun"], "usage: aeval post "),
    (["uplift", "--runtimes", "builtin", "."], "usage: aeval uplift "),
])
def test_a_mistyped_flag_shows_the_subcommand_usage(argv, usage, capsys):
    """`aeval run --modle` printed the top-level usage (`usage: aeval [-h] [--version]
    COMMAND ...`), which lists no flag of `run` at all."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage), err
    assert f"unrecognized arguments: {argv[1]}" in err.splitlines()[-1]


def test_runtimes_names_a_missing_clis_install_command_whole(tmp_path, monkeypatch):
    """`aeval runtimes` cut the reason at 80 characters: `npm install -g @openai/codex@0.17`
    for 0.171.0, a command that installs the wrong version."""
    from aeval.adapters.runtimes.codex import CODEX_VERSION
    from aeval.adapters.runtimes.opencode import OPENCODE_VERSION
    from aeval.deployments.cli.info import runtime_rows

    monkeypatch.setenv("AEVAL_CODEX_BIN", str(tmp_path / "no-codex"))
    monkeypatch.setenv("AEVAL_OPENCODE_BIN", str(tmp_path / "no-opencode"))
    rows = {r["name"]: r for r in runtime_rows()}
    assert f"npm install -g @openai/codex@{CODEX_VERSION} " in rows["codex"]["installed"]
    assert f"npm install -g opencode-ai@{OPENCODE_VERSION} " in rows["opencode"]["installed"]
    assert rows["codex"]["installed"].endswith("or set AEVAL_CODEX_BIN))")
