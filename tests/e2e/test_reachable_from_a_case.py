"""What a case can reach, looked for as an attacker would (issue 42, item 6).

Each run is a real `aeval` process (literal runtime, ``--sandbox require``) on skills that look
like any others: a disk usage report that inventories the machine from the working folder
outward to ``/``, a Python environment check, a release-notes skill holding its bot token, and
a port audit. Their steps write what they found into the workspace; the tests read it from the
run's ``outputs/`` and compare it with what a case is *given*, never with a list of what was
hidden:

- the file system a case sees lies inside the allowlist (`tests.reach.SYSTEM_TREES`, the
  interpreter prefix, the case's own attempt and toolchain), so a folder anyone adds to the
  machine shows up as a finding; canaries planted where people keep things, the run store,
  aeval's venv and another case running at the same time are never seen; aeval's packages do
  not import;
- nothing listening on the machine answers a case, whoever opened it: the test opens its own
  listeners (loopback, all addresses, the host's own address, an abstract unix socket, socket
  files in /tmp and TMPDIR), lists every listening socket of the host at test time into the
  audit's inventory, and the case also scans loopback, the user-mode gateway and the host's
  addresses in full; the socket tables a case reads hold none of the host's sockets.

Run through `aeval run` (threads), `aeval run --dask local` and `aeval sweep`, a case with
``network: false`` and one with ``network: true``. TMPDIR is set outside /tmp where a CI job
would (and the run store, marketplace and Prefect home live outside /tmp too)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from tests.reach import (
    AUDIT_CASES,
    CANARY_HOMES,
    SKILLS,
    SYSTEM_TREES,
    Listeners,
    SocketWatch,
    add_port_audit,
    assert_no_host_sockets,
    assert_nothing_answers,
    audit_targets,
    canaries,
    named_unix_sockets,
    outside_view,
    python_prefixes,
    read_audit,
)

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(bwrap_problem() is not None,
                                 reason=f"bubblewrap: {bwrap_problem()}")]

AEVAL = Path(sys.executable).parent / "aeval"
PACKAGES = ("pandas", "prefect", "distributed", "litellm")  # in aeval's venv, not the base's
SETTLE_S = 15  # how long the release-notes case holds its token while the others run
WATCH_S = 20  # how long, after its walk, the inventory looks around its attempt each second


@dataclass
class Run:
    """One `aeval` process and what the test knows from outside it."""

    entry: str
    proc: subprocess.CompletedProcess
    run_dir: Path | None
    token: str
    planted: list[Path] = field(default_factory=list)
    forbidden: list[Path] = field(default_factory=list)  # host paths no case may see
    host_sockets: dict[int, str] = field(default_factory=dict)
    host_unix_names: set[str] = field(default_factory=set)
    accepted: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # what a fixture adds (secret, targets, ...)
    seconds: float = 0.0

    def why(self) -> str:
        return (f"aeval exited {self.proc.returncode} after {self.seconds:.0f} s\n"
                f"{self.proc.stdout[-1500:]}\n{self.proc.stderr[-1500:]}")

    def outputs(self, skill: str, case: str) -> Path:
        assert self.run_dir is not None, f"no run folder: {self.why()}"
        return self.run_dir / skill / "literal" / case / "outputs"

    def report(self, skill: str, case: str, rel: str) -> dict:
        path = self.outputs(skill, case) / rel
        if not path.is_file():
            grading = path.parents[len(Path(rel).parts)] / "grading.json"
            reason = (json.loads(grading.read_text()).get("status_reason", "")
                      if grading.is_file() else "no grading.json")
            pytest.fail(f"{skill}/{case} wrote no {rel} ({reason})\n{self.why()}")
        return json.loads(path.read_text())


@pytest.fixture(scope="module")
def host_dir():
    """Where this module keeps the run store, the marketplaces and Prefect's home: outside
    /tmp (which every sandbox has private anyway), as a checkout and ~/.prefect are."""
    d = Path(tempfile.mkdtemp(prefix="aeval-reach-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def add_skill(mp: Path, name: str, evals: list[dict], fixtures: dict | None = None) -> Path:
    d = mp / name
    shutil.copytree(SKILLS / name, d)
    for rel, data in (fixtures or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(json.dumps(data, indent=1))
    (d / "eval.config").write_text(json.dumps({"evals": evals}, indent=1))
    return d


def aeval(entry: str, mp: Path, top: Path, token: str, *, tmpdir: Path | None,
          planted: list[Path], extra_env: dict[str, str] | None = None) -> Run:
    """Run ``entry`` (run | dask | sweep) on ``mp``, the store and Prefect home under ``top``."""
    store, prefect_home = top / "store", top / "prefect-home"
    args = {"run": ["run", str(mp), "--sandbox", "require", "--runtime", "literal"],
            "dask": ["run", str(mp), "--sandbox", "require", "--runtime", "literal",
                     "--dask", "local"],
            "sweep": ["sweep", str(mp), "--epochs", "1", "--runtime", "literal"]}[entry]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PREFECT_API") and k != "TMPDIR"}
    env.update(PREFECT_HOME=str(prefect_home), AEVAL_RETRIES="0", AEVAL_SANDBOX="require",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", **(extra_env or {}))
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    start = time.monotonic()
    # every case at once (the SKILL.md doc tests are cases too): they run side by side
    proc = subprocess.run([str(AEVAL), *args, "--out", str(store), "--no-grader", "-q",
                           "--concurrency", "8"],
                          env=env, capture_output=True, text=True, timeout=450)
    runs = sorted((store / "runs").iterdir()) if (store / "runs").is_dir() else []
    run = Run(entry=entry, proc=proc, run_dir=runs[-1] if runs else None, token=token,
              planted=planted, seconds=time.monotonic() - start)
    run.forbidden = [*planted, Path(sys.prefix), store, mp, prefect_home]
    assert run.run_dir is not None, run.why()
    manifest = json.loads((run.run_dir / "run.json").read_text())
    assert (manifest.get("sandbox") or {}).get("used") == "bwrap", (
        f"the run was not sandboxed, so it proves nothing: {manifest.get('sandbox')}")
    return run


# ---- the file system -------------------------------------------------------------------

FS_VARIANTS = {
    "run": ("run", False),  # TMPDIR unset: attempts under /tmp
    "run-ci-tmpdir": ("run", True),  # TMPDIR outside /tmp, as CI jobs set it
    "dask-ci-tmpdir": ("dask", True),
}


@pytest.fixture(scope="module", params=list(FS_VARIANTS))
def fs_run(request, host_dir) -> Run:
    entry, ci_tmpdir = FS_VARIANTS[request.param]
    token = uuid.uuid4().hex[:12]
    top = host_dir / request.param
    tmpdir = top / "ci-tmp" if ci_tmpdir else None
    if tmpdir:
        tmpdir.mkdir(parents=True)
    mp = top / "marketplace"
    add_skill(mp, "disk-usage-report", [{
        "id": "inventory", "prompt": "Where did the disk space of this runner go? Use the "
                                     "disk-usage-report skill.",
        "expected_outcome": "reports/disk-usage.json with the usage per top-level folder.",
        # it looks around its attempt until well after release-notes started holding its
        # token, however late a loaded machine starts that case (up to ~WATCH_S)
        "steps": [f"python3 $SKILL_DIR/scripts/usage.py reports --watch {WATCH_S}"],
        "assertions": [{"type": "file_exists", "path": "reports/disk-usage.json"}],
        "timeout_s": 120}])
    add_skill(mp, "python-env-check", [{
        "id": "pipeline-deps", "prompt": "Check that this machine's Python can run the team's "
                                         "pipelines, with the python-env-check skill.",
        "expected_outcome": "reports/python-env.json lists each package and where it is.",
        "steps": ["python3 $SKILL_DIR/scripts/check_env.py " + " ".join(PACKAGES)
                  + " --out reports/python-env.json"],
        "assertions": [{"type": "file_exists", "path": "reports/python-env.json"}],
        "timeout_s": 120}])
    add_skill(mp, "release-notes", [{
        "id": "draft", "prompt": "Draft the release notes since v1.4.0 with the release-notes "
                                 "skill.",
        "expected_outcome": "reports/release-notes.md lists the merged changes.",
        "required_credentials": ["RELEASE_BOT_TOKEN"],
        "steps": [f"python3 $SKILL_DIR/scripts/draft.py --since v1.4.0 --settle {SETTLE_S} "
                  "--out reports/release-notes.md"],
        "assertions": [{"type": "file_exists", "path": "reports/release-notes.md"}],
        "timeout_s": 120}])
    secret = f"rbt_{uuid.uuid4().hex}"
    for d in (top / "store", top / "prefect-home"):
        d.mkdir(parents=True)
    places = [*map(Path, CANARY_HOMES), Path.home(), Path(sys.prefix), top, top / "store",
              top / "prefect-home", mp, *([tmpdir] if tmpdir else [])]
    with canaries(token, places) as planted:
        run = aeval(entry, mp, top, token, tmpdir=tmpdir, planted=planted,
                    extra_env={"RELEASE_BOT_TOKEN": secret})
    run.extra["secret"] = secret
    return run


def inventory(run: Run) -> tuple[dict, list[str]]:
    """The disk usage summary and every path the inventory listed (read once per run)."""
    if "inventory" not in run.extra:
        usage = run.report("disk-usage-report", "inventory", "reports/disk-usage.json")
        paths: list[str] = []
        for chunk in sorted((run.outputs("disk-usage-report", "inventory") / "reports")
                            .glob("inventory-*.json.gz")):
            paths += json.loads(gzip.decompress(chunk.read_bytes()))
        run.extra["inventory"] = (usage, paths)
    return run.extra["inventory"]


def given_roots(run: Run, usage: dict, also_forbidden: list[Path]) -> tuple[list[Path], list]:
    """What the case is given, from the host's side (the system trees, the interpreter prefix)
    and from its own (its working folder, HOME, skill copy, toolchain and interpreter, and the
    attempt that holds its working folder and HOME when they share one): a root the case
    reports counts only when it holds nothing the case must not see."""
    where, py = usage["where"], usage["python"]
    reported = {"the working folder": where["cwd"], "HOME": where["home"],
                "SKILL_DIR": where["skill_dir"], "the toolchain (sys.prefix)": py["prefix"],
                "the interpreter (sys.base_prefix)": py["base_prefix"]}
    roots = [*map(Path, SYSTEM_TREES), *python_prefixes()]
    refused = []
    forbidden = [*run.forbidden, *also_forbidden]

    def holds(r: Path) -> list[str]:
        return [str(f) for f in forbidden if f == r or f.is_relative_to(r)]

    for what, raw in reported.items():
        if raw:
            r = Path(raw)
            if r == Path("/") or holds(r):
                refused.append(f"{what} is {r}, which holds {holds(r)[:4] or 'everything'}")
            else:
                roots.append(r)
    if where["home"] and where["cwd"]:  # the attempt, when HOME and cwd are side by side
        attempt = Path(os.path.commonpath([where["home"], where["cwd"]]))
        if attempt != Path("/") and not holds(attempt):
            roots.append(attempt)
    return roots, refused


def victim(run: Run) -> dict:
    return run.report("release-notes", "draft", "reports/draft-run.json")


def test_a_case_sees_nothing_of_the_host_it_was_not_given(fs_run):
    """Every path the inventory found lies in the allowlist: a new folder anyone adds to the
    machine (or a new place aeval keeps things) is a finding until a case is given it."""
    usage, paths = inventory(fs_run)
    v = victim(fs_run)
    roots, refused = given_roots(fs_run, usage, [Path(v["cwd"]), Path(v["home"])])
    outside = outside_view(paths, roots)
    shown = "\n".join(f"  {area}  ({n} entries)" for area, n in list(outside.items())[:40])
    assert not refused and not outside, (
        f"[{fs_run.entry}] a case sees {len(outside)} area(s) of the host it was not given"
        f" ({sum(outside.values())} entries; given: {', '.join(map(str, roots))}):\n{shown}"
        + "".join(f"\n  {r}" for r in refused))
    assert not usage["truncated"], f"the inventory did not finish: {usage['entries']} entries"


def test_no_canary_is_seen_wherever_it_was_planted(fs_run):
    """Canaries in /root, /home, /opt, /srv, /var/tmp, /var/lib, the host's /tmp and TMPDIR,
    the run store, the marketplace, Prefect's home and aeval's venv."""
    _, paths = inventory(fs_run)
    assert len(fs_run.planted) >= 8, fs_run.planted  # the test could plant them
    seen = [p for p in paths if fs_run.token in p]
    assert not seen, f"[{fs_run.entry}] a case saw {len(seen)} canaries:\n  " + "\n  ".join(seen)


def test_another_case_running_at_the_same_time_is_out_of_sight(fs_run):
    """release-notes keeps its bot token in its HOME and a draft in its workspace while the
    inventory runs; the inventory sees neither, nor the token."""
    usage, paths = inventory(fs_run)
    v = victim(fs_run)
    held, walk = v["held"], usage["walk"]
    assert any(held[0] < start and end < held[1] for start, end in walk["nearby"]), (
        f"release-notes did not hold its token while the inventory looked around its own "
        f"attempt (held {held}, looked {walk['nearby']}): the test showed nothing")
    theirs = (v["cwd"], v["home"])
    seen = [p for p in paths if p in theirs or p.startswith(tuple(t + "/" for t in theirs))]
    assert not seen, (f"[{fs_run.entry}] the inventory listed {len(seen)} entries of "
                      "release-notes' running attempt:\n  " + "\n  ".join(seen[:20]))
    leaked = [p.name for p in fs_run.outputs("disk-usage-report", "inventory").rglob("*")
              if p.is_file() and fs_run.extra["secret"].encode() in gzip_or_plain(p)]
    assert not leaked, f"release-notes' token reached the other case's outputs: {leaked}"


def gzip_or_plain(p: Path) -> bytes:
    data = p.read_bytes()
    return gzip.decompress(data) if p.name.endswith(".gz") else data


def test_aevals_own_packages_do_not_import_in_a_case(fs_run):
    """pandas, prefect, distributed and litellm are aeval's (its venv), not the interpreter's:
    inside a case no Python on PATH imports them, the ``python3`` a command runs first
    among them."""
    report = fs_run.report("python-env-check", "pipeline-deps", "reports/python-env.json")
    unasked = {exe: r["error"][-300:] for exe, r in report.items() if "packages" not in r}
    assert report and not unasked, f"the check could not ask every Python: {unasked}"
    imported = {exe: {n: p.get("file") for n, p in r["packages"].items() if p["ok"]}
                for exe, r in report.items()}
    imported = {exe: found for exe, found in imported.items() if found}
    assert not imported, (f"[{fs_run.entry}] aeval's packages import inside a case: "
                          + json.dumps(imported, indent=1))


# ---- the network -----------------------------------------------------------------------

NET_ENTRIES = ("run", "dask", "sweep")
CASES = AUDIT_CASES


@pytest.fixture(scope="module", params=NET_ENTRIES)
def net_run(request, host_dir) -> Run:
    entry = request.param
    token = uuid.uuid4().hex[:12]
    top = host_dir / f"net-{entry}"
    tmpdir = top / "ci-tmp"  # where CI jobs put TMPDIR
    tmpdir.mkdir(parents=True)
    mp = top / "marketplace"
    with Listeners(token, socket_dirs=[tmpdir]) as listening, SocketWatch() as watch:
        targets = audit_targets(listening)
        add_port_audit(mp, targets)
        run = aeval(entry, mp, top, token, tmpdir=tmpdir, planted=[])
        unix_names = named_unix_sockets()
    run.host_sockets = watch.seen
    run.host_unix_names = unix_names
    run.accepted = list(listening.accepted)
    run.extra.update(targets=targets, listening=listening.tcp)
    return run


def audit(run: Run, case: str) -> tuple[dict, dict]:
    """The audit's report and the socket tables the case read."""
    return read_audit(run.outputs("port-audit", case), run.why())


def label(run: Run, case: str) -> str:
    return f"{run.entry}, network: {str(CASES[case]).lower()}"


@pytest.mark.parametrize("case", list(CASES))
def test_nothing_listening_on_the_machine_answers_a_case(net_run, case):
    """Every listening socket of the host (the test's own on loopback, on all addresses, on
    the host's address, its abstract and file unix sockets; aeval's and anyone else's), tried
    from the case on every address that could lead to it, and full scans of loopback, the
    gateway and the host's addresses: nothing accepts."""
    report, _ = audit(net_run, case)
    assert_nothing_answers(report, net_run.extra["listening"], net_run.accepted,
                           label(net_run, case))


@pytest.mark.parametrize("case", list(CASES))
def test_a_case_reads_none_of_the_hosts_sockets_in_proc_net(net_run, case):
    """/proc/net/{tcp,tcp6,udp,udp6,unix} inside list only the case's own network namespace:
    no socket the host held during the run (by inode), no named unix socket of the host."""
    _, tables = audit(net_run, case)
    assert_no_host_sockets(tables, net_run.host_sockets, net_run.host_unix_names,
                           label(net_run, case))
