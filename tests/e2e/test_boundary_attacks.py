"""The attempt attacks aeval itself (issue 19): each attack runs as a real `aeval run` with the
literal runtime (a skill's own steps, verbatim) or the builtin agent against the scripted
model server, and each must fail: aeval never writes through a path the attempt made, a
planted shell never runs for aeval, every way of moving the skill copy aside shows in Δ
(also in folders past the watch limit), outputs stay bounded, and a secret in a file name
reaches no file name of the run."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.deployments.cli.main import main
from aeval.isolation.workspace import manifest
from aeval.testing.model_server import Script, ScriptedModelServer, ToolCall, Turn

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None,
                                 reason=f"bubblewrap: {bwrap_problem()}")

DEEP = "lib/bulk/d0042/deep"  # a folder past the watch limit (see `deep_skill`)


def skill(root: Path, name: str, steps: list[str], assertions: list[dict] | None = None,
          message: str = "Report: ok", **case) -> Path:
    """A small reporting skill: scripts/report.py prints lib/message.txt."""
    d = root / name
    (d / "scripts").mkdir(parents=True)
    (d / "lib").mkdir()
    (d / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Prints the weekly report."
                                "\n---\n# Report\n\nRun `python3 scripts/report.py`.\n")
    (d / "lib" / "message.txt").write_text(message + "\n")
    (d / "scripts" / "report.py").write_text(
        "import pathlib\nroot = pathlib.Path(__file__).resolve().parent.parent\n"
        "print((root / 'lib' / 'message.txt').read_text().strip())\n")
    (d / "eval.config").write_text(json.dumps({"evals": [{
        "id": "report", "prompt": "Print the weekly report.", "expected_outcome": "A report.",
        "steps": steps, **case,
        "assertions": assertions if assertions is not None else [
            {"type": "file_contains", "path": "report.txt", "pattern": "Report: ok"}]}]}))
    return d


def run(target: Path, out: Path, *extra: str) -> tuple[int, Path]:
    code = main(["run", str(target), "--out", str(out), "-q", *extra])
    (rd,) = (out / "runs").iterdir()
    return code, rd


def case_dir(rd: Path, name: str, runtime: str = "literal") -> Path:
    return rd / name / runtime / "report"


def load(p: Path) -> dict:
    return json.loads(p.read_text())


# ---- aeval never acts through a path the attempt controls ------------------------------

@needs_bwrap
def test_a_symlinked_environment_never_makes_aeval_write_a_host_file(tmp_path):
    victim = tmp_path / "host" / "victim.conf"
    victim.parent.mkdir()
    victim.write_text("host config\n")
    victim.chmod(0o600)
    victim_dir = tmp_path / "host" / "empty"
    victim_dir.mkdir()
    mp = tmp_path / "mp"
    check = [{"type": "command", "run": "python3 $SKILL_DIR/scripts/report.py"},
             {"type": "file_contains", "path": "report.txt", "pattern": "Report: ok"}]
    skill(mp, "venv-file", [
        f"set +e; rm -f $VIRTUAL_ENV/pyvenv.cfg; ln -sf {victim} $VIRTUAL_ENV/bin/pip; true",
        "python3 $SKILL_DIR/scripts/report.py > report.txt"], check)
    skill(mp, "venv-dir", [
        f"set +e; mv $VIRTUAL_ENV $HOME/aside; ln -sfn {victim_dir} $VIRTUAL_ENV; true",
        "python3 $SKILL_DIR/scripts/report.py > report.txt"], check)
    code, rd = run(mp, tmp_path / "s", "--sandbox", "require")
    assert victim.read_text() == "host config\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert list(victim_dir.iterdir()) == []
    for name in ("venv-file", "venv-dir"):  # and the toolchain still works for the steps
        g = load(case_dir(rd, name) / "grading.json")
        assert g["status"] == "pass", (name, g["status_reason"])
    assert code == 0


@needs_bwrap
def test_a_workspace_swapped_for_a_link_to_the_host_root_shows_the_checks_nothing(tmp_path):
    """The last step "rotates" the workspace: moves it aside and leaves a symlink to / in its
    place. The `command` checks run in a fresh sandbox of that workspace: it must not become
    a bind of the host's root (its files, its /proc, its /dev/shm): the check that reads a
    host file and leaves one in /dev/shm fails, and neither happened."""
    canary = tmp_path / "host" / "deploy-key"
    canary.parent.mkdir()
    canary.write_text("host-deploy-key-51c9\n")
    mark = Path("/dev/shm") / f"aeval-rotated-{os.getpid()}"
    mp = tmp_path / "mp"
    skill(mp, "rotate", [
        "python3 $SKILL_DIR/scripts/report.py > report.txt",
        "cd .. && mv workspace workspace.1 && ln -s / workspace"],
        [{"type": "command", "run": f"cat {canary}; touch {mark}",
          "description": "The rotated report is in place"}])
    try:
        code, rd = run(mp, tmp_path / "s", "--sandbox", "require")
        assert not mark.exists(), "a check wrote the host's /dev/shm"
    finally:
        mark.unlink(missing_ok=True)
    g = load(case_dir(rd, "rotate") / "grading.json")
    assert code == 1 and g["status"] == "fail", g["status_reason"]
    a1 = next(e for e in g["expectations"] if e["id"] == "A1")
    assert a1["status"] == "failed" and "not followed" in a1["evidence"], a1
    for p in rd.rglob("*"):
        assert not (p.is_file() and b"host-deploy-key" in p.read_bytes()), p


@needs_bwrap
def test_a_host_tool_in_the_users_bin_shows_that_folder_not_the_home(tmp_path, monkeypatch):
    """The user keeps a tool in ``~/bin`` (on PATH, as Debian's .profile puts it). A skill that
    declares it as a host tool runs it, and does not see the rest of the home folder: an
    install prefix is never a home (``~/bin``'s parent), nor a folder that holds one."""
    home = tmp_path / "home" / "dev"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "fmt-report").write_text("#!/bin/sh\necho formatted\n")
    (home / "bin" / "fmt-report").chmod(0o755)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("host-ssh-key-0b7e\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{home / 'bin'}:{os.environ['PATH']}")
    mp = tmp_path / "mp"
    skill(mp, "formatted", [
        "fmt-report > report.txt", "set +e; cat ~/.ssh/id_ed25519 " + str(home / ".ssh" / "*")
        + " >> report.txt 2>&1; python3 $SKILL_DIR/scripts/report.py >> report.txt"],
        [{"type": "file_contains", "path": "report.txt", "pattern": "formatted"}],
        host_tools=["fmt-report"])
    _, rd = run(mp, tmp_path / "s", "--sandbox", "require")
    g = load(case_dir(rd, "formatted") / "grading.json")
    assert g["status"] == "pass", g["status_reason"]  # the declared tool ran
    for p in rd.rglob("*"):
        assert not (p.is_file() and b"host-ssh-key" in p.read_bytes()), p


@needs_bwrap
def test_a_planted_shell_runs_neither_the_later_steps_nor_the_checks(tmp_path):
    """The skill's script is broken; the first step plants a `bash` (and `python3`, `sh`)
    that exits 0 wherever the attempt can write on PATH. The broken step must still fail,
    and so must the honest `command` check."""
    plant = ('set +e; for d in "$VIRTUAL_ENV/bin" "$HOME/.local/bin" "$HOME/.npm-global/bin"; do '
             'mkdir -p "$d" 2>/dev/null; for t in bash sh python3 python env; do '
             'printf "#!/bin/sh\\nexit 0\\n" > "$d/$t" 2>/dev/null && chmod +x "$d/$t"; '
             'done; done; true')
    mp = tmp_path / "mp"
    d = skill(mp, "planted-shell", [plant, "python3 $SKILL_DIR/scripts/report.py"],
              [{"type": "command", "run": "python3 -c 'import sys; sys.exit(7)'",
                "description": "The report's self-check passes"}])
    (d / "scripts" / "report.py").write_text("raise SystemExit('KeyError: week')\n")
    code, rd = run(mp, tmp_path / "s", "--sandbox", "require")
    g = load(case_dir(rd, "planted-shell") / "grading.json")
    assert code == 1 and g["status"] == "fail", g["status_reason"]
    a1 = next(e for e in g["expectations"] if e["id"] == "A1")
    assert a1["status"] == "failed" and "exit 7" in a1["evidence"], a1
    transcript = (case_dir(rd, "planted-shell") / "transcript.md").read_text()
    assert "KeyError: week" in transcript  # the real step ran, with the real interpreter


# ---- Δ: every way of moving the skill copy aside shows ---------------------------------

def deep_skill(root: Path, name: str, steps: list[str]) -> Path:
    """The reporting skill, broken (its message says "Broken"), with 2,100 folders under
    lib/bulk (more than the watch limit) and its message in a folder past it: the attack
    fixes the message where nothing watches, runs, and puts everything back."""
    d = skill(root, name, steps, message="Broken")
    (d / "lib" / "message.txt").unlink()
    (d / "scripts" / "report.py").write_text(
        "import pathlib\nroot = pathlib.Path(__file__).resolve().parent.parent\n"
        f"print((root / '{DEEP}' / 'message.txt').read_text().strip())\n")
    for i in range(2100):
        (d / "lib" / "bulk" / f"d{i:04d}").mkdir(parents=True)
    (d / DEEP).mkdir()
    (d / DEEP / "message.txt").write_text("Broken\n")
    return d


FIX = "sed -i s/Broken/Report:\\ ok/ {f}"
RUN = "python3 $SKILL_DIR/scripts/report.py > report.txt"
MSG = f"$SKILL_DIR/{DEEP}/message.txt"
RENAMES = {
    "copy-aside": [f"set +e; mv $SKILL_DIR $SKILL_DIR.aside && cp -a $SKILL_DIR.aside $SKILL_DIR"
                   f" && {FIX.format(f=MSG)} && {RUN}; rm -rf $SKILL_DIR; "
                   "mv $SKILL_DIR.aside $SKILL_DIR; true"],
    "copy-aside-over-calls": [
        f"mv $SKILL_DIR $SKILL_DIR.aside && cp -a $SKILL_DIR.aside $SKILL_DIR && "
        f"{FIX.format(f=MSG)}", RUN, "rm -rf $SKILL_DIR && mv $SKILL_DIR.aside $SKILL_DIR"],
    "parent-aside": [f"set +e; mv .agents .agents.aside && cp -a .agents.aside .agents && "
                     f"{FIX.format(f=MSG)} && {RUN}; rm -rf .agents; "
                     "mv .agents.aside .agents; true"],
    "folder-aside": [f"set +e; d=$SKILL_DIR/{DEEP}; mv $d $d.aside && cp -a $d.aside $d && "
                     f"{FIX.format(f='$d/message.txt')} && {RUN}; rm -rf $d; mv $d.aside $d; "
                     "true"],
    "edit-and-revert": [f"cp {MSG} saved.txt && {FIX.format(f=MSG)} && {RUN} && "
                        f"cp saved.txt {MSG}"],
    "edit-in-place-and-revert": [
        f"cp -p {MSG} saved.txt && printf 'Report: ok\\n' 1<> {MSG} && {RUN} && "
        f"cat saved.txt 1<> {MSG} && truncate -s $(stat -c %s saved.txt) {MSG} && "
        f"touch -r saved.txt {MSG}"],
}


@pytest.mark.parametrize("sandbox", [pytest.param("require", marks=needs_bwrap), "none"])
def test_every_rename_form_shows_in_delta_past_the_watch_limit(tmp_path, monkeypatch,
                                                                sandbox):
    monkeypatch.setenv("AEVAL_WATCH_MAX_DIRS", "1000")
    mp = tmp_path / "mp"
    skills = {name: deep_skill(mp, name, steps) for name, steps in RENAMES.items()}
    before = {name: manifest(d) for name, d in skills.items()}
    code, rd = run(mp, tmp_path / "s", "--sandbox", sandbox)
    hidden = []  # forms whose fix ran and passed with S1 clean, or that did not fail at all
    claimed = []
    for name in RENAMES:
        case = case_dir(rd, name)
        g = load(case / "grading.json")
        s1 = next(e for e in g["expectations"] if e["id"] == "S1")
        report = case / "outputs" / "report.txt"
        fixed = report.is_file() and "Report: ok" in report.read_text()
        if g["status"] != "fail" or (fixed and s1["status"] != "failed"):
            hidden.append((name, g["status"], s1["evidence"][:200]))
        elif not fixed:  # it could not even run: the pinned copy refused the move
            assert sandbox == "require", (name, g["status_reason"])
        attempt = load(case / "attempts" / "1" / "attempt.json")
        if attempt.get("watched") != "partial" or not any(
                "past the limit of 1000" in c for c in attempt.get("cut", [])):
            claimed.append((name, attempt.get("watched"), attempt.get("cut")))
    assert not hidden, hidden
    assert not claimed, claimed  # the watch never claims a coverage it did not have
    for name, d in skills.items():
        assert manifest(d) == before[name], f"the original {name} changed"
    assert code == 1


def test_a_skill_file_written_by_a_tool_is_a_change_even_when_put_back(tmp_path, monkeypatch):
    """Over several tool calls the agent moves the copy aside, writes a fixed file where the
    copy was (write_file), runs it and moves the original back: the write_file result named
    a path inside the skill copy, and S1 says so."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    mp = tmp_path / "mp"
    skill(mp, "write-aside", [], message="Broken")
    s = ".agents/skills/write-aside"
    script = Script(name="write-aside", match="Print the weekly report", turns=[
        Turn(tool_calls=[ToolCall(name="bash", arguments={
            "command": f"mv {s} {s}.aside; cp -a {s}.aside {s}; true"})]),
        Turn(tool_calls=[ToolCall(name="write_file", arguments={
            "path": f"{s}/lib/message.txt", "content": "Report: ok\n"})]),
        Turn(tool_calls=[ToolCall(name="bash", arguments={
            "command": f"python3 {s}/scripts/report.py > report.txt"})]),
        Turn(tool_calls=[ToolCall(name="bash", arguments={
            "command": f"rm -rf {s}; mv {s}.aside {s}; true"})]),
        Turn(text="Done: the report is in report.txt."),
    ])
    with ScriptedModelServer([script]) as srv:
        code = main(["run", str(mp), "--model", "openai/scripted", "--api-base",
                     srv.base_url_openai, "--out", str(tmp_path / "s"), "-q", "--no-grader",
                     "--sandbox", "none"])
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    g = load(case_dir(rd, "write-aside", "builtin") / "grading.json")
    s1 = next(e for e in g["expectations"] if e["id"] == "S1")
    assert s1["status"] == "failed" and "lib/message.txt" in s1["evidence"], s1
    assert code == 1


# ---- bounds ----------------------------------------------------------------------------

@needs_bwrap
def test_outputs_are_bounded_in_count_and_apparent_size(tmp_path):
    mp = tmp_path / "mp"
    skill(mp, "many-outputs", [
        "mkdir -p out && cd out && seq -f f%05g 20000 | xargs touch",
        "truncate -s 4T a-sparse-4t.bin || true",
        "truncate -s 12G a-sparse-12g.bin",
        RUN], timeout_s=60)
    env = {**os.environ, "AEVAL_RETRIES": "0"}
    exe = Path(sys.executable).parent / "aeval"
    try:
        r = subprocess.run([str(exe), "run", str(mp), "--out", str(tmp_path / "s"), "-q",
                            "--sandbox", "require"], env=env, capture_output=True, text=True,
                           timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("aeval was still busy with the outputs after 240 s")
    (rd,) = (tmp_path / "s" / "runs").iterdir()
    case = case_dir(rd, "many-outputs")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    meta = case / "eval_metadata.json"
    assert meta.stat().st_size < 400_000
    outputs = {o["path"]: o for o in load(meta)["outputs"]}
    assert len(outputs) <= 1000
    assert "a-sparse-4t.bin" not in outputs or outputs["a-sparse-4t.bin"]["size"] == 0
    big = outputs["a-sparse-12g.bin"]
    assert big["size"] == 12 << 30 and big["copied"] is False and big["sha256"] == ""
    assert sum(1 for _ in (case / "outputs").rglob("*")) <= 1100
    cut = load(case / "attempts" / "1" / "attempt.json")["cut"]
    assert any("not listed" in c for c in cut) and any("not hashed" in c for c in cut), cut


# ---- secrets in names ------------------------------------------------------------------

SECRET = "hf_name_canary_7Tq2Zw9Lp4"


def test_a_secret_in_a_file_name_reaches_no_path_of_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", SECRET)
    mp = tmp_path / "mp"
    skill(mp, "named-secret", [
        'mkdir -p outputs && echo card > "outputs/card-$HF_TOKEN.md"',
        'echo note > "$SKILL_DIR/lib/note-$HF_TOKEN.md"',
        'echo run > "$SKILL_DIR/scripts/$(printf %s "$HF_TOKEN" | base64).py"', RUN],
        required_credentials=["HF_TOKEN"])
    code, rd = run(mp, tmp_path / "s")
    forms = [SECRET, base64.b64encode(SECRET.encode()).decode().rstrip("=")]
    leaks = [str(p) for p in (tmp_path / "s").rglob("*") for f in forms if f in p.name]
    leaks += [str(p) for p in (tmp_path / "s").rglob("*") if p.is_file()
              for f in forms if f.encode() in p.read_bytes()]
    assert not leaks, leaks
    case = case_dir(rd, "named-secret")
    shown = [o["path"] for o in load(case / "eval_metadata.json")["outputs"]]
    assert "outputs/card-[REDACTED:HF_TOKEN].md" in shown
    assert (case / "outputs" / "outputs" / "card-[REDACTED:HF_TOKEN].md").read_text() == "card\n"
    assert (case / "skill_after" / "lib" / "note-[REDACTED:HF_TOKEN].md").is_file()
    assert code == 1  # the skill was written to: S1
