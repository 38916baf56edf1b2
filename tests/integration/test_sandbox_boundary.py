"""The sandbox as a boundary, attacked with real bubblewrap and real processes: root inside
cannot undo the mounts, nothing inside names the hidden paths, a file cannot grow without
bound, and an attempt's processes share one memory budget.

The marketplace and the store sit outside /tmp here (as a CI checkout does): under /tmp they
would vanish inside anyway (the sandbox's /tmp is its own)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import BwrapSandbox, bwrap_problem, make_sandbox
from aeval.isolation.sandbox import SandboxPolicy
from aeval.isolation.shell import base_env, run_command
from aeval.isolation.workspace import prepare_workspace
from tests.conftest import EXAMPLES

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap: {bwrap_problem()}"),
]


@pytest.fixture(params=[1, 60], ids=["one-sibling", "sixty-siblings"])
def host(tmp_path, request):
    """A marketplace with the segmentation skill and 1 or 60 others, and a run store, on the
    host outside /tmp; the attempt root under /tmp, as aeval makes it."""
    base = Path(tempfile.mkdtemp(prefix="aeval-test-host-", dir="/var/tmp"))
    try:
        skills = base / "checkout" / "skills"
        original = skills / "segmentation-orig"
        shutil.copytree(EXAMPLES / "skills" / "segmentation", original)
        shutil.copytree(EXAMPLES / "skills" / "csv-stats", skills / "csv-stats")
        for i in range(request.param - 1):
            (skills / f"skill-{i:02d}").mkdir()
        store = base / "checkout" / ".aeval-store"
        (store / "runs").mkdir(parents=True)
        (store / "runs" / "run.json").write_text('{"other": "cases"}')
        (base / "checkout" / "README.md").write_text("a sibling of the store\n")
        ws = prepare_workspace(tmp_path / "attempt-1", original, "segmentation",
                               ".agents/skills", ["fixtures/"])
        sb = make_sandbox("require", SandboxPolicy(root=ws.root))
        yield sb, ws, base_env(ws.home, {"SKILL_DIR": str(ws.skill_dir)}), original, store
        sb.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def make_cgroup(controller: str, limit: int) -> Path | None:
    """Whether this machine lets aeval make a cgroup of ``controller`` (made and removed)."""
    from aeval.adapters.sandbox._limits import make_cgroup as make
    from aeval.adapters.sandbox._limits import remove_cgroup

    cg = make(controller, limit)
    if cg is not None:
        remove_cgroup(cg)
    return cg


def run(sb, ws, env, cmd, timeout=60):
    return run_command(cmd, ws.path, env, timeout, sandbox=sb)


def test_root_inside_can_neither_remount_the_host_nor_unhide_the_original(host):
    sb, ws, env, original, _ = host
    victim = original.parent.parent / "README.md"
    r = run(sb, ws, env, f"set +e; mount -o remount,bind,rw / ; echo pwned >> {victim}; "
                         f"umount {original.parent}; cat {original}/SKILL.md; "
                         f"mount -t tmpfs none {ws.path}/x 2>&1; mknod disk b 254 0; "
                         "grep CapEff /proc/self/status; true")
    assert r.ok, r.combined()
    assert victim.read_text() == "a sibling of the store\n"
    assert "segment_train" not in r.stdout  # the original's SKILL.md stayed hidden
    assert not (ws.path / "disk").exists()
    cap_eff = int(r.stdout.split("CapEff:")[1].split()[0], 16)
    assert not cap_eff & (1 << 21)  # CAP_SYS_ADMIN: no mounts of its own


def test_nothing_inside_names_a_hidden_path(host):
    sb, ws, env, original, store = host
    r = run(sb, ws, env, "cat /proc/self/mountinfo /proc/1/mountinfo /proc/self/mounts "
                         "/proc/self/mountstats; echo; ls -A " + str(original.parent) + " "
                         + str(store.parent) + " || true")
    assert r.ok, r.combined()
    for hidden in (original, store):
        assert str(hidden) not in r.stdout, f"{hidden} named inside"
        assert hidden.name not in r.stdout
    # nothing beside them either: the view shows, it does not hide
    assert "README.md" not in r.stdout and "csv-stats" not in r.stdout
    assert r.stdout.count("\n") < 400  # the mounts stay few, whatever the marketplace
    r = run(sb, ws, env, f"touch {original.parent.parent}/planted /planted")
    assert not r.ok and "No such file or directory" in r.stderr
    assert "Read-only file system" in r.stderr  # not even a folder of its own at the root


def test_a_file_cannot_grow_past_the_file_size_limit(host):
    sb, ws, env, _, _ = host
    r = run(sb, ws, env, "truncate -s 4T sparse.bin")
    assert not r.ok and (ws.path / "sparse.bin").stat().st_size == 0
    small = BwrapSandbox(sb.policy.model_copy(update={"max_file_bytes": 1 << 20}), sb.bwrap)
    try:
        r = run_command("head -c 2000000 /dev/zero > big.bin", ws.path, env, 60, sandbox=small)
        assert not r.ok and (ws.path / "big.bin").stat().st_size <= 1 << 20
    finally:
        small.close()


def test_the_attempts_processes_share_one_memory_budget(host):
    """Each process stays under its own RLIMIT_DATA; together they pass the attempt's, and
    the command is ended at the case's memory limit, named as such."""
    sb, ws, env, _, _ = host
    if make_cgroup("memory", 1 << 30) is None:
        pytest.skip("no writable memory cgroup here (the per-process RLIMIT_DATA still holds)")
    small = BwrapSandbox(sb.policy.model_copy(update={"memory_bytes": 384 << 20}), sb.bwrap)
    hog = ("python3 -c 'import time; b = bytearray(200 << 20); b[::4096] = b\"x\" * "
           "len(b[::4096]); print(\"held\", flush=True); time.sleep(6)'")
    try:
        r = run_command(f"set +e; for i in 1 2 3; do {hog} & done; wait; true", ws.path, env,
                        60, sandbox=small)
    finally:
        small.close()
    # together they passed the attempt's budget: the kernel ended one, and the command says
    # so (the case went over what it declared: it fails, whatever the script exits with)
    assert r.stdout.count("held") < 3 or "Killed" in r.combined(), r.combined()
    assert not r.ok and "killed at the case's memory limit of 384 MiB" in r.combined(), \
        r.combined()


# ---- issue 33: aeval's service state is hidden wherever it is -----------------------------------


@pytest.fixture
def prefect_layout(monkeypatch):
    """A Prefect home outside /tmp that also holds the attempt (PREFECT_HOME=~ style: it
    cannot be hidden whole), a reused server's state folder in it, and a SQLite database and
    a profiles file that the environment moved elsewhere."""
    base = Path(tempfile.mkdtemp(prefix="aeval-test-svc-", dir="/var/tmp"))
    try:
        home = base / "home"
        state = home / "aeval-server"
        state.mkdir(parents=True, mode=0o700)
        (state / "server.json").write_text('{"auth_string": "aeval-sekrit-auth-0001"}')
        (state / "warm.token").write_text("warm-token-0001")
        (home / "prefect.db").write_bytes(b"SQLite format 3\0")
        (home / "notes.txt").write_text("the user's own file\n")
        elsewhere = base / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "runs.db").write_bytes(b"SQLite format 3\0")
        (elsewhere / "profiles.toml").write_text('[profiles.x]\nPREFECT_API_KEY = "pnu_x"\n')
        monkeypatch.setenv("PREFECT_HOME", str(home))
        monkeypatch.setenv("PREFECT_API_DATABASE_CONNECTION_URL",
                           f"sqlite+aiosqlite:///{elsewhere / 'runs.db'}")
        monkeypatch.setenv("PREFECT_PROFILES_PATH", str(elsewhere / "profiles.toml"))
        yield home, elsewhere
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_service_state_is_hidden_even_where_the_prefect_home_holds_the_attempt(
        prefect_layout):
    home, elsewhere = prefect_layout
    ws = prepare_workspace(home / "work" / "attempt-1", EXAMPLES / "skills" / "csv-stats",
                           "csv-stats", ".agents/skills", [])
    sb = make_sandbox("require", SandboxPolicy(root=ws.root))
    try:
        r = run_command(f"set +e; ls -A {home}; cat {home}/aeval-server/server.json "
                        f"{home}/aeval-server/warm.token {home}/prefect.db "
                        f"{elsewhere}/runs.db {elsewhere}/profiles.toml; cat {home}/notes.txt; "
                        "echo written > out.txt; true", ws.path,
                        base_env(ws.home, {"SKILL_DIR": str(ws.skill_dir)}), 60, sandbox=sb)
    finally:
        sb.close()
    assert r.ok, r.combined()
    for secret in ("aeval-sekrit-auth-0001", "warm-token-0001", "SQLite format", "pnu_x",
                   "aeval-server", "prefect.db"):
        assert secret not in r.stdout, f"{secret!r} seen inside: {r.stdout}"
    assert "the user's own file" not in r.stdout  # nothing of the home but the attempt
    assert (ws.path / "out.txt").read_text() == "written\n"  # and the attempt writable


def test_a_case_that_walks_the_whole_tree_finds_only_what_the_view_shows(host, tmp_path):
    """The view is a list of what to show: a step that walks everything from / (beyond the
    system trees) finds only the attempt, the toolchain and the base interpreter, and the
    empty folders that lead to them. A canary anywhere else on the host, including one put
    there after the sandbox was made, is never seen."""
    from aeval.adapters.sandbox._toolchain import toolchain
    from aeval.adapters.sandbox._view import SYSTEM_TREES

    sb, ws, env, original, store = host
    canaries = [Path(tempfile.mkdtemp(prefix="aeval-canary-", dir=d))
                for d in ("/var/tmp", "/tmp", str(Path.home()), "/opt")]
    try:
        walk = ("python3 - <<'EOF'\nimport os\nskip = {'/proc', '/dev', '/sys', '/etc', "
                + ", ".join(repr(t) for t in SYSTEM_TREES) + "}\n"
                "with open('seen.txt', 'w') as out:\n"
                "    for top, dirs, files in os.walk('/'):\n"
                "        dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]\n"
                "        for name in dirs + files:\n"
                "            print(os.path.join(top, name), file=out)\nEOF")
        r = run(sb, ws, env, walk, timeout=120)
    finally:
        for c in canaries:
            shutil.rmtree(c, ignore_errors=True)
    assert r.ok, r.combined()
    shown = [ws.root.resolve(), toolchain(), Path(sys.base_prefix).resolve()]
    seen = (ws.path / "seen.txt").read_text()
    assert str(ws.path / "seen.txt") in seen  # the walk reached the attempt
    for line in seen.splitlines():
        path = Path(line)
        assert any(path.is_relative_to(s) or s.is_relative_to(path) for s in shown) \
            or path in (Path("/tmp"), Path("/dev")), f"{path} is visible inside"
    for secret in (str(original), str(store), *map(str, canaries), sys.prefix):
        assert secret not in seen
