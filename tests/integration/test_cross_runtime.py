"""Cross-runtime fidelity: the paper's segmentation case through builtin, claude-code, codex
and opencode (the real CLIs) against the scripted model server, with `aeval compare`. Every
row of the table must mean the same thing: the same verdicts, the skill edit tied to the
call that made it, one identical LV1, and the agent's own mistakes (a script written for
another runtime) never counted against the skill.

Skipped when a CLI is not installed (bash .ci/install-clis.sh; pip install
'aeval-skills[claude]')."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.adapters import get_runtime
from aeval.deployments.cli.main import main
from aeval.errors import RuntimeUnavailable
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn
from tests.conftest import ROOT
from tests.docs import documented_section
from tests.segmentation_case import MATCH, PROMPT, load, segmentation_copy

pytestmark = pytest.mark.integration

SCRIPTS = ROOT / "examples" / "model-server"
RUNTIMES = {  # runtime -> (model, skill copy, shell tool, read tool)
    "builtin": ("openai/scripted-builtin", ".agents/skills/segmentation",
                lambda c: ToolCall(name="bash", arguments={"command": c}),
                lambda p: ToolCall(name="read_file", arguments={"path": p})),
    "claude-code": ("claude-scripted", ".claude/skills/segmentation",
                    lambda c: ToolCall(name="Bash", arguments={"command": c,
                                                               "description": "run"}),
                    lambda p: ToolCall(name="Read", arguments={"file_path": p})),
    "codex": ("openai/scripted-codex", ".agents/skills/segmentation",
              lambda c: ToolCall(name="exec_command", arguments={"cmd": c}),
              lambda p: ToolCall(name="exec_command", arguments={"cmd": f"cat {p}"})),
    "opencode": ("openai/scripted-opencode", ".opencode/skills/segmentation",
                 lambda c: ToolCall(name="bash", arguments={"command": c,
                                                            "description": "run"}),
                 lambda p: ToolCall(name="read", arguments={"filePath": p})),
}


def _missing() -> str | None:
    for name in RUNTIMES:
        try:
            get_runtime(name).check_available()
        except RuntimeUnavailable as exc:
            return f"{name}: {exc}"
    return None


MISSING = _missing()
needs_clis = pytest.mark.skipif(MISSING is not None, reason=f"not installed: {MISSING}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readme_block() -> str:
    section = documented_section("Across runtimes, offline: `aeval compare`")
    (block,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return block


def events_of(case: Path) -> list[dict]:
    return [json.loads(x) for x in (case / "events.jsonl").read_text().splitlines()]


def compare_report(store: Path) -> dict:
    (cmp_dir,) = (store / "compare").iterdir()
    return json.loads((cmp_dir / "compare.json").read_text())


def case_dir(store: Path, row: dict, case: str) -> Path:
    return store / "runs" / row["run_id"] / "segmentation" / row["runtime"] / case


@needs_clis
def test_the_readme_compares_the_four_runtimes_offline_and_every_row_means_the_same(tmp_path):
    """The documented cross-runtime commands (docs/offline-testing.md), run as written (port
    and venv path aside) with the shipped per-runtime scripts: four rows with identical
    verdicts, each with the SKILL.md edit tied to the edit's own event, the KeyError as the
    documented first-attempt error, one identical LV1 on SKILL.md:14, fidelity `–` without a
    grader, exit 1."""
    block = readme_block()
    assert block.rstrip().endswith("kill %1")
    port, bindir = str(free_port()), str(Path(sys.executable).parent)
    script = block.replace("8123", port).replace(".venv/bin", bindir).rstrip()
    script = script.removesuffix("kill %1") + "code=$?\nkill %1\nwait\nexit $code\n"
    store = tmp_path / "store"
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env |= {"AEVAL_HOME": str(store), "PREFECT_HOME": str(tmp_path / "prefect")}
    proc = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=1800, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # every row fails both cases: a skill defect
    assert "Traceback" not in out and "warning:" not in proc.stdout
    assert "WARNING" not in proc.stderr  # no script called a tool its runtime lacks
    report = compare_report(store)
    rows = report["rows"]
    assert [r["runtime"] for r in rows] == list(RUNTIMES)
    assert report["gate"]["exit_code"] == 1
    verdicts, lv1s = [], []
    for row in rows:
        assert row["statuses"] == {"fail": 2} and row["gate"]["exit_code"] == 1, row
        assert row["protocol_fidelity"] == "–"  # --no-grader: no grader ran
        assert row["refused"]["calls"] == 0 and row["self_corrections"] == 1
        assert row["requests"] >= 6 and row["tokens_in"] > 0
        train = case_dir(store, row, "train")
        g = load(train / "grading.json")
        verdicts.append((g["status"], [(e["id"], e["passed"]) for e in g["expectations"]]))
        (change,) = g["self_correction"]["changes_made"]
        assert (change["path"], change["attribution"]) == ("SKILL.md", "recorded"), row
        edit = events_of(train)[change["event_seq"]]
        assert edit["kind"] == "tool_call" and edit["tool"] == "edit_file", (row, edit)
        assert "SKILL.md" in json.dumps(edit["input"])
        (err,) = g["self_correction"]["first_attempt_errors"]
        assert "KeyError: 'segment_train'" in err["excerpt"] and err["agent_error"] is None
        assert err["documented"] == "scripts/run.py segment_train --data --out"
        fixes = load(train.parent / "fix_suggestions.json")["suggestions"]
        (lv1,) = [f for f in fixes if f["level"] == "LV1" and f["source"] != "static"]
        lv1s.append((lv1["path"], lv1["start_line"], lv1["original"], lv1["replacement"]))
    assert all(v == verdicts[0] for v in verdicts), verdicts
    assert len(set(lv1s)) == 1 and lv1s[0][:2] == ("SKILL.md", 14), lv1s
    assert "| `train` |" in lv1s[0][3]


def sed_script(runtime: str) -> Script:
    """The agent fixes the runner instead of the docs: it reads the runner (naming it first),
    hits the KeyError, greps the runner, rewrites it with ``sed -i`` and reruns the
    documented action, which now works."""
    model, skill, shell, read = RUNTIMES[runtime]
    runner = f"{skill}/scripts/run.py"
    documented = f"python3 {runner} segment_train --data fixtures --out outputs"
    return Script(name=f"sed-{runtime}", match=MATCH, model=model.split("/")[-1], turns=[
        Turn(text="Reading the runner first.", tool_calls=[read(runner)]),
        Turn(tool_calls=[shell(documented)]),
        Turn(tool_calls=[shell(f"grep -n ACTIONS {runner}")]),
        Turn(text="The runner lacks the documented action; adding it.", tool_calls=[shell(
            f"sed -i 's/{{\"train\": train/{{\"segment_train\": train/' {runner}")]),
        Turn(tool_calls=[shell(documented)]),
        Turn(text="Done: trained with segment_train, mIoU=0.8125."),
    ])


@needs_clis
@pytest.mark.usefixtures("prefect_harness")
def test_a_sed_on_the_runner_is_delta_in_every_row_tied_to_the_sed_call(tmp_path,
                                                                      monkeypatch):
    """No edit tool: a shell `sed -i` on the skill's script. Every runtime lets the agent do
    it (claude-code approves a Bash write into .claude/ as a user would), Δ shows it in all
    four rows, and it is tied to the sed's own event, not to the read that named the runner
    first."""
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    skill = segmentation_copy(tmp_path, {
        "id": "train", "prompt": PROMPT, "files": ["fixtures/"],
        "expected_outcome": "outputs/model.json exists.",
        "assertions": [{"type": "file_exists", "path": "outputs/model.json"}],
        "timeout_s": 180, "max_turns": 12})
    store = tmp_path / "s"
    with ScriptedModelServer([sed_script(r) for r in RUNTIMES]) as srv:
        code = main(["compare", str(skill), *[f"--runtime={r}={m[0]}" for r, m in
                                              RUNTIMES.items()],
                     "--no-grader", "--api-base", srv.base_url_openai, "--out", str(store),
                     "-q"])
        assert not any(r.unknown_tools for r in srv.requests)
    assert code == 1
    for row in compare_report(store)["rows"]:
        case = case_dir(store, row, "train")
        g = load(case / "grading.json")
        assert g["status"] == "fail", row["label"]
        (change,) = g["self_correction"]["changes_made"]
        assert (change["path"], change["change"]) == ("scripts/run.py", "modified"), row
        assert '+ACTIONS = {"segment_train": train' in change["diff"]
        events = events_of(case)
        (sed,) = [e for e in events if e["kind"] == "tool_call"
                  and "sed -i" in e["input"].get("command", "")]
        assert (change["event_seq"], change["tool"], change["attribution"]) == (
            sed["seq"], "bash", "during_call"), (row["label"], change)
        by = {e["id"]: e for e in g["expectations"]}
        assert by["S1"]["passed"] is False and by["A1"]["passed"] is True


@needs_clis
@pytest.mark.usefixtures("prefect_harness")
def test_a_script_written_for_builtin_is_the_agents_error_under_the_other_runtimes(
        tmp_path, monkeypatch, capsys):
    """The shipped builtin script played to every runtime (what following the old README
    did): claude-code has no `bash`, `read_file` or `edit_file`; under opencode `bash` works
    but `.agents/skills/` is not where its skill copy is. Those failures never count against
    the skill (S2 holds), each says why it is the agent's, the server and the table warn,
    and compare still exits 1 for the builtin row's real failure."""
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder")
    builtin = json.loads((SCRIPTS / "segmentation.json").read_text())
    anyone = [Script.model_validate({**s, "model": None}) for s in builtin["scripts"]]
    skill = segmentation_copy(tmp_path)
    store = tmp_path / "s"
    runtimes = ("builtin", "claude-code", "opencode")
    with ScriptedModelServer(anyone) as srv:
        code = main(["compare", str(skill), *[f"--runtime={r}={RUNTIMES[r][0]}"
                                              for r in runtimes],
                     "--no-grader", "--api-base", srv.base_url_openai, "--out", str(store),
                     "-q"])
        unknown = {n for r in srv.requests for n in r.unknown_tools}
    captured = capsys.readouterr()
    assert code == 1  # builtin's row fails for the skill's defect
    assert {"bash", "read_file", "edit_file"} <= unknown
    assert "[aeval-model-server] WARNING: script 'builtin-train'" in captured.err
    rows = {r["runtime"]: r for r in compare_report(store)["rows"]}
    assert all(r["protocol_fidelity"] == "–" for r in rows.values())
    assert rows["builtin"]["refused"]["calls"] == 0
    assert rows["claude-code"]["refused"]["calls"] == 4
    assert set(rows["claude-code"]["refused"]["unknown_tools"]) == {
        "bash", "read_file", "edit_file"}
    assert rows["opencode"]["refused"]["misplaced"] == 2
    assert "warning: claude-code:claude-scripted: 4 tool call(s) the runtime refused" \
        in captured.out
    assert "warning: opencode:openai/scripted-opencode:" in captured.out
    assert "warning: builtin" not in captured.out
    for runtime in ("claude-code", "opencode"):
        g = load(case_dir(store, rows[runtime], "train") / "grading.json")
        s2 = next(e for e in g["expectations"] if e["id"] == "S2")
        assert s2["passed"] is True, (runtime, s2)  # not charged to the skill
        errors = g["self_correction"]["first_attempt_errors"]
        assert errors and all(e["agent_error"] and e["documented"] is None for e in errors)
    opencode = load(case_dir(store, rows["opencode"], "train") / "grading.json")
    assert any(".agents/skills/segmentation/scripts/run.py" in e["agent_error"]
               for e in opencode["self_correction"]["first_attempt_errors"])
