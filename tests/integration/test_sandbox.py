"""The bwrap sandbox with real bubblewrap, real processes and a real skill (the example
segmentation skill), attacked the way an untrusted skill or a misbehaving agent would."""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import BwrapSandbox, bwrap_problem, make_sandbox, wrapper_script
from aeval.isolation.sandbox import Sandbox, SandboxPolicy
from aeval.isolation.shell import base_env, run_argv, run_command
from aeval.isolation.workspace import manifest, prepare_workspace
from tests.conftest import EXAMPLES
from tests.procs import gone

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap: {bwrap_problem()}"),
]




@pytest.fixture
def attempt(tmp_path):
    """A real attempt: the segmentation skill as an 'original' in a marketplace folder, a run
    store beside it, and a workspace prepared the way aeval prepares one."""
    original = tmp_path / "marketplace" / "skills" / "segmentation"
    shutil.copytree(EXAMPLES / "skills" / "segmentation", original)
    store = tmp_path / "store"
    root = store / "run-1" / "segmentation" / "builtin" / "train" / "attempt-1"
    ws = prepare_workspace(root, original, "segmentation", ".agents/skills", ["fixtures/"])
    (store / "run-1" / "run.json").write_text('{"secret": "other cases live here"}')
    other = store / "run-1" / "segmentation" / "builtin" / "evaluate" / "attempt-1"
    (other / "workspace").mkdir(parents=True)
    (other / "workspace" / "answer.txt").write_text("another case's output\n")
    # the whole run store is hidden; this attempt, inside it, is bound back writable
    policy = SandboxPolicy(root=ws.root)
    sb = make_sandbox("require", policy)
    env = base_env(ws.home, {"SKILL_DIR": str(ws.skill_dir)})
    return sb, ws, env, original, store


def run(sb: Sandbox, ws, env, cmd: str, timeout: float = 60):
    return run_command(cmd, ws.path, env, timeout, sandbox=sb)


def test_make_sandbox_gives_bwrap_here(attempt):
    sb = attempt[0]
    assert isinstance(sb, BwrapSandbox) and isinstance(sb, Sandbox)
    assert sb.status.used == "bwrap" and sb.status.reason is None


def test_the_skill_runs_and_the_workspace_is_writable(attempt):
    sb, ws, env, _, _ = attempt
    r = run(sb, ws, env, "python3 $SKILL_DIR/scripts/run.py train --data fixtures --out outputs")
    assert r.ok, r.combined()
    assert (ws.path / "outputs" / "model.json").is_file()  # written inside, visible outside


def test_host_is_read_only_and_the_original_skill_cannot_be_found_or_written(attempt):
    sb, ws, env, original, store = attempt
    before = {p: p.read_bytes() for p in original.rglob("*") if p.is_file()}
    attack = (f"set +e; echo pwned >> {original}/SKILL.md; echo pwned > {original}/new.py; "
              f"sed -i s/segment_train/train/ {original}/SKILL.md; "
              f"cat {store}/run-1/run.json; ls -A {original}; touch /etc/aeval-pwned; "
              f"cat {store}/run-1/segmentation/builtin/evaluate/attempt-1/workspace/answer.txt; "
              f"ls -R {store}; touch {store}/planted; "
              f"touch {Path(sys.executable).parent}/pwned; "
              "grep -l segment_train -r /tmp 2>/dev/null | grep -v .agents/skills; true")
    r = run(sb, ws, env, attack)
    assert r.ok, r.combined()
    assert "other cases live here" not in r.combined() and "SKILL.md" not in r.stdout
    assert "another case's output" not in r.stdout and "evaluate" not in r.stdout
    assert not (store / "planted").exists()
    assert "Read-only file system" in r.stderr
    assert {p: p.read_bytes() for p in original.rglob("*") if p.is_file()} == before
    assert not Path("/etc/aeval-pwned").exists()
    assert not (Path(sys.executable).parent / "pwned").exists()


def test_proc_shows_neither_aeval_nor_another_case(attempt):
    sb, ws, env, _, _ = attempt
    other = subprocess.Popen(["sleep", "30.5151"])  # stands in for another case's tool
    try:
        r = run(sb, ws, env, "for p in /proc/[0-9]*; do echo \"${p#/proc/}: $(tr '\\0' ' ' "
                             "< $p/cmdline)\"; done")
    finally:
        other.kill()
    assert r.ok, r.combined()
    procs = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    assert procs and all(int(pid) < 20 for pid in procs)
    assert str(os.getpid()) not in procs
    assert "30.5151" not in r.stdout
    assert not any(cmd.startswith(sys.executable) or "prefect" in cmd for cmd in procs.values())
    assert procs["1"].startswith(sb.bwrap)  # the namespace's init, not the host's


def test_setsid_sleeper_dies_with_the_timeout(attempt):
    sb, ws, env, _, _ = attempt
    marker = "60.7071"
    start = time.monotonic()
    r = run(sb, ws, env, f"setsid sleep {marker} & setsid nohup sleep {marker} >/dev/null 2>&1 &"
                         f" sleep {marker}", timeout=5)
    assert r.timed_out and r.exit_code is None
    assert time.monotonic() - start < 10
    assert gone(marker) == []


def test_fifty_background_sleepers_are_gone_when_the_command_returns(attempt):
    sb, ws, env, _, _ = attempt
    marker = "88.2718"
    start = time.monotonic()
    r = run(sb, ws, env, f"for i in $(seq 50); do setsid sleep {marker} & done; echo spawned")
    assert r.ok and r.stdout == "spawned\n" and time.monotonic() - start < 10
    assert gone(marker) == []


def test_argv_wraps_a_long_running_cli(attempt):
    sb, ws, env, original, _ = attempt
    argv = sb.argv(["bash", "-c", f"echo $$; ls -A {original} | wc -l; pwd"], ws.path, env)
    out = subprocess.run(argv, cwd=ws.path, env=env, capture_output=True, text=True,
                         timeout=30, check=True).stdout.split()
    assert int(out[0]) < 10  # a fresh PID namespace
    assert out[1] == "0" and out[2] == str(ws.path)


def _wheel(tmp_path: Path) -> Path:
    """A tiny real wheel, so the install works offline."""
    name, ver = "aeval_canary_pkg", "1.0"
    files = {f"{name}/__init__.py": "VALUE = 42\n",
             f"{name}-{ver}.dist-info/METADATA":
                 f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n",
             f"{name}-{ver}.dist-info/WHEEL":
                 "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{name}-{ver}.dist-info/RECORD,,")
    files[f"{name}-{ver}.dist-info/RECORD"] = "\n".join(record) + "\n"
    whl = tmp_path / f"{name}-{ver}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return whl


def test_a_setup_pip_install_lands_in_the_attempt_not_in_aevals_venv(attempt, tmp_path):
    sb, ws, env, _, _ = attempt
    whl = _wheel(ws.path)
    site = Path(sysconfig.get_paths()["purelib"])
    before = sorted(p.name for p in site.iterdir())
    r = run(sb, ws, env, f"pip install -q --no-index --target vendored {whl.name} && "
                         "test -f vendored/aeval_canary_pkg/__init__.py && "
                         f"pip install --no-index --no-deps {whl.name} && "
                         "python -c 'import aeval_canary_pkg as m; print(m.VALUE, m.__file__)'",
            timeout=180)
    assert r.ok, r.combined()
    value, where = r.stdout.split()[-2:]
    assert value == "42" and Path(where).is_relative_to(ws.root)
    assert sorted(p.name for p in site.iterdir()) == before
    assert subprocess.run([sys.executable, "-c", "import aeval_canary_pkg"],
                          capture_output=True).returncode != 0
    # a fresh attempt does not see it
    fresh = prepare_workspace(tmp_path / "attempt-2", ws.original_skill, "segmentation",
                              ".agents/skills", [])
    sb2 = make_sandbox("require", SandboxPolicy(root=fresh.root))
    r2 = run_command("python -c 'import aeval_canary_pkg'", fresh.path,
                     base_env(fresh.home), 60, sandbox=sb2)
    assert not r2.ok and "No module named" in r2.stderr


@pytest.fixture
def http_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()


def _registry() -> str:
    """A package registry's index (the one network these machines have)."""
    conf = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.index-url"],
                          capture_output=True, text=True).stdout.strip()
    url = os.environ.get("PIP_INDEX_URL") or conf or "https://pypi.org/simple/"
    return url if url.startswith("http") else "https://pypi.org/simple/"


def test_the_network_is_private_and_outbound_only_on_request(attempt, http_server):
    """No case reaches a server on the host, whichever address it tries; a case that
    declares network: true reaches the outside (a package registry) and still not the host."""
    from aeval.adapters.sandbox._network import host_addresses

    sb, ws, env, _, _ = attempt
    assert sb.policy.network is False
    targets = ["127.0.0.1", "10.0.2.2", *host_addresses()]
    probe = ("python3 - <<'EOF'\nimport socket, urllib.request as u\n"
             f"for host in {targets!r}:\n"
             "    s = socket.socket(); s.settimeout(3)\n"
             f"    try: s.connect((host, {http_server})); print('REACHED', host)\n"
             "    except OSError as e: print('closed', host, e)\n"
             "try: print('OUT', u.urlopen(%r, timeout=15).status)\n"
             "except Exception as e: print('no way out', e)\nEOF" % _registry())
    r = run(sb, ws, env, probe)
    assert r.ok and "REACHED" not in r.stdout and "OUT 200" not in r.stdout, r.combined()
    opened = BwrapSandbox(sb.policy.model_copy(update={"network": True}), sb.bwrap)
    try:
        r = run_command(probe, ws.path, env, 60, sandbox=opened)
    finally:
        opened.close()
    assert r.ok and "REACHED" not in r.stdout, r.combined()
    try:
        host_out = urllib.request.urlopen(_registry(), timeout=15).status == 200
    except OSError:
        host_out = False
    if host_out:  # the registry answers the host: it must answer the case too
        assert "OUT 200" in r.stdout, r.combined()


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed here")
def test_without_network_the_package_managers_try_the_registry_once(attempt):
    """npm backs off 10 s then 60 s before it gives up on a registry it cannot resolve: 71 s
    per `npx` in a case that has no network, for the same EAI_AGAIN. Inside such a case npm,
    pip and uv try once; a case that declares network: true keeps their retries; a retry
    count the case sets itself is kept."""
    sb, ws, env, _, _ = attempt
    ask = "npm config get fetch-retries; echo pip=$PIP_RETRIES uv=$UV_HTTP_RETRIES"
    r = run(sb, ws, env, ask)
    assert r.ok and r.stdout.split() == ["0", "pip=0", "uv=0"], r.combined()
    r = run(sb, ws, {**env, "NPM_CONFIG_FETCH_RETRIES": "5"}, ask)
    assert r.ok and r.stdout.split()[0] == "5", r.combined()
    opened = BwrapSandbox(sb.policy.model_copy(update={"network": True}), sb.bwrap)
    try:
        r = run_command(ask, ws.path, env, 60, sandbox=opened)
    finally:
        opened.close()
    assert r.ok and r.stdout.split() == ["2", "pip=", "uv="], r.combined()


def test_memory_limit_stops_a_hog(attempt):
    sb, ws, env, _, _ = attempt
    small = BwrapSandbox(sb.policy.model_copy(update={"memory_bytes": 512 << 20}), sb.bwrap)
    r = run_command("python3 -c 'b = bytearray(1 << 30); print(len(b))'", ws.path, env, 60,
                    sandbox=small)
    assert not r.ok and "MemoryError" in r.stderr


def test_the_skill_manifest_is_unchanged_by_reads(attempt):
    sb, ws, env, _, _ = attempt
    before = manifest(ws.skill_dir)
    assert run(sb, ws, env, "cat $SKILL_DIR/SKILL.md >/dev/null").ok
    assert manifest(ws.skill_dir) == before


def test_a_fork_bomb_stops_at_max_processes(attempt):
    sb, ws, env, _, _ = attempt
    small = BwrapSandbox(sb.policy.model_copy(update={"max_processes": 40}), sb.bwrap)
    if small.cgroup is None:
        pytest.skip("no writable pids cgroup here (RLIMIT_NPROC does not bind root)")
    bomb = ("python3 -c '\nimport os, time\nn = 0\ntry:\n    for _ in range(200):\n"
            "        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n"
            "        n += 1\nexcept OSError as e:\n    print(\"refused after\", n)\n'")
    start = time.monotonic()
    r = run_command(bomb, ws.path, env, 60, sandbox=small)
    assert r.ok and r.stdout.startswith("refused after"), r.combined()
    assert int(r.stdout.split()[-1]) < 40 and time.monotonic() - start < 20
    cgroup = small.cgroup
    small.close()
    assert not cgroup.exists()


def test_memory_limit_leaves_reserved_address_space_alone(attempt):
    """The runtime CLIs run on node, which reserves ~10 GB of address space for wasm."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    sb, ws, env, _, _ = attempt
    r = run_command("node -e 'new WebAssembly.Memory({initial: 1}); console.log(\"wasm ok\")'",
                    ws.path, env, 60, sandbox=sb)
    assert r.ok and r.stdout == "wasm ok\n", r.combined()


def test_no_other_process_environment_is_readable(attempt):
    """A key in another process's environment (aeval's Prefect server, another case's tool)
    cannot be read through /proc from inside."""
    sb, ws, env, _, _ = attempt
    canary = "sk-env-canary-5f0c1e9a7b3d"
    other = subprocess.Popen(["sleep", "30"], env={"OPENAI_API_KEY": canary})
    try:
        r = run(sb, ws, env, "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | "
                             "grep -c sk-env-canary || true")
    finally:
        other.kill()
    assert r.ok and r.stdout.strip() == "0" and canary not in r.combined()


def test_wrapper_script_runs_a_cli_inside_with_its_arguments(attempt):
    sb, ws, env, original, _ = attempt
    cli = ws.root / "bin" / "fake-cli"
    cli.parent.mkdir()
    cli.write_text("#!/bin/bash\necho \"pid=$$ args=$*\"; ls -A \"$1\" | wc -l\n")
    cli.chmod(0o755)
    wrapper = wrapper_script(sb, str(cli), ws.path, env, ws.root / "bin" / "cli-in-sandbox")
    out = subprocess.run([str(wrapper), str(original), "two words"], env=env, cwd=ws.path,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    first, count = out.splitlines()
    pid = int(first.split()[0].removeprefix("pid="))
    assert pid < 10 and first.endswith(f"args={original} two words") and count == "0"


def test_a_program_installed_under_tmp_runs_and_its_neighbours_stay_private(attempt):
    """A checkout (and its venv or CLIs) under /tmp, as CI clones are: the sandbox's private
    /tmp must not hide the program a case runs, nor reveal the folders beside it."""
    sb, ws, env, _original, _store = attempt
    top = Path(tempfile.mkdtemp(prefix="aeval-test-clone-"))
    neighbour = Path(tempfile.mkdtemp(prefix="aeval-test-other-"))
    try:
        prefix = top / ".ci" / "node_modules"
        (prefix / "lib" / "reporter").mkdir(parents=True)
        (prefix / "lib" / "reporter" / "data.txt").write_text("from the package\n")
        (prefix / "bin").mkdir()
        tool = prefix / "bin" / "reporter"
        tool.write_text(f"#!/bin/sh\ncat {prefix}/lib/reporter/data.txt\n")
        tool.chmod(0o755)
        (neighbour / "notes.txt").write_text("another user's file\n")
        r = run_argv(sb.argv([str(tool)], ws.path, env), ws.path, env, 60)
        assert r.exit_code == 0 and "from the package" in r.stdout, r.combined()
        r = run(sb, ws, env, f"cat {neighbour}/notes.txt")
        assert r.exit_code != 0 and "another user's file" not in r.combined()
        # not started by aeval, not declared: not there, even when the host's PATH names it
        on_path = {**env, "PATH": f"{prefix}/bin:{env['PATH']}"}
        r = run(sb, ws, on_path, "reporter")
        assert r.exit_code == 127 and "from the package" not in r.stdout, r.combined()
        # declared (a case's host_tools): shown read-only, on PATH inside
        declared = BwrapSandbox(sb.policy.model_copy(update={"shown": [tool]}), sb.bwrap)
        try:
            r = run(declared, ws, env, "reporter")
            assert r.exit_code == 0 and "from the package" in r.stdout, r.combined()
            r = run(declared, ws, env, f"touch {prefix}/lib/x")
            assert r.exit_code != 0 and "Read-only file system" in r.combined()
            r = run(declared, ws, env, f"cat {neighbour}/notes.txt")
            assert r.exit_code != 0 and "another user's file" not in r.combined()
        finally:
            declared.close()
    finally:
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(neighbour, ignore_errors=True)


def test_shown_prefixes_never_expose_the_attempt_or_a_system_tree():
    from aeval.adapters.sandbox._view import shown_prefixes

    base = Path(tempfile.mkdtemp(prefix="aeval-test-prefix-"))
    try:
        (base / "venv" / "bin").mkdir(parents=True)
        tool = base / "venv" / "bin" / "tool"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
        (base / "attempt").mkdir()
        (base / "attempt" / "x").write_text("#!/bin/sh\n")
        got = shown_prefixes([str(tool), "/usr/bin/env", str(base / "attempt" / "x")],
                             [base / "attempt"])
        assert got == [str(base / "venv")]
    finally:
        shutil.rmtree(base, ignore_errors=True)
