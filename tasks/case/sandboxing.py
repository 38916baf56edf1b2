"""The sandbox of every process a case makes aeval start: one policy (`sandbox_policy`, with
aeval's service state hidden wherever it is: `service_paths`) for the attempt's processes and
for the fresh sandbox the ``command`` checks run in."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import weakref
from pathlib import Path

from aeval.adapters.sandbox.bwrap import make_sandbox, sandbox_status

from aeval.isolation.sandbox import Sandbox, SandboxPolicy, SandboxStatus
from aeval.isolation.shell import base_env
from aeval.run.plan import CasePlan, ExecutionRecord

PREFECT_FILES = ("prefect.db", "prefect.db-wal", "prefect.db-shm", "prefect.db-journal",
                 "profiles.toml", "storage", "memo_store.toml")
"""What Prefect keeps in its home: hidden one by one when the home itself cannot be."""
DATABASE_VARS = ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL")
STORAGE_VARS = ("PREFECT_RESULTS_LOCAL_STORAGE_PATH", "PREFECT_LOCAL_STORAGE_PATH")


def _sqlite_file(url: str) -> Path | None:
    """The file of a ``sqlite[+driver]:///PATH`` database URL (None: not a SQLite file)."""
    scheme, sep, rest = url.partition(":///")
    if not sep or not scheme.strip().lower().startswith("sqlite"):
        return None
    rest = rest.split("?", 1)[0]
    return Path(rest) if rest and rest != ":memory:" else None


def service_paths(keep: list[Path]) -> list[Path]:
    """aeval's own service state, hidden from every sandbox wherever it is: the Prefect home
    (its database holds every flow and task run and their logs; its profiles may hold an API
    key or auth string), the reused server's state folder (`aeval.servers.home.state_dir`: its
    record with the auth string, the warm process's socket, token and log), and what the
    environment moves out of the home (the profiles file, a SQLite database, the results
    storage). A path that would hide one of ``keep`` (the sandbox's writable folders), the
    interpreter or aeval's own files is not hidden whole: the Prefect home then hides its own
    files (`PREFECT_FILES`), and the rest stay hidden on their own."""
    from aeval.servers.home import prefect_home, state_dir

    home = prefect_home()
    found: list[Path] = [home, state_dir()]
    if profiles := os.environ.get("PREFECT_PROFILES_PATH"):
        found.append(Path(profiles).expanduser())
    for name in DATABASE_VARS:
        if db := _sqlite_file(os.environ.get(name) or ""):
            db = db.expanduser()
            found += [db, *(db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal"))]
    for name in STORAGE_VARS:
        if storage := os.environ.get(name):
            found.append(Path(storage).expanduser())
    keep = [*keep, Path(sys.prefix), Path(sys.base_prefix),
            Path(__file__).parent.parent]  # aeval's own files (and a checkout's CLIs)
    try:
        kept = [Path(k).resolve() for k in keep]
        home = home.resolve()
    except OSError:
        kept = []
    out: list[Path] = []
    for path in found:
        try:
            path = path.resolve()
        except OSError:
            continue
        if path == Path(path.anchor):
            continue
        if any(k.is_relative_to(path) for k in kept):
            if path == home:
                out += [home / name for name in PREFECT_FILES]
            continue
        out.append(path)
    return list(dict.fromkeys(out))


def sandbox_policy(plan: CasePlan, root: Path, *, writable: list[Path] | None = None,
                   hidden: list[Path] | None = None) -> SandboxPolicy:
    """The one policy of every process a case makes aeval start (setup, preflight, steps,
    doc-test blocks, the agent's tools, the runtime CLIs, the probe, the introduced-error
    base runs, ``command`` checks): only ``root`` and ``writable`` writable; hidden the
    original skill folder, the run store, aeval's service state (`service_paths`) and
    ``hidden``."""
    writable = list(writable or [])
    return SandboxPolicy(
        root=root, writable=writable,
        hidden=[Path(plan.skill.path), plan.layout.store.resolve(), *(hidden or []),
                *service_paths([root, *writable])],
        network=plan.case.network, output_cap=plan.output_cap,
        max_disk_bytes=plan.case.max_disk_mb << 20)


def attempt_policy(plan: CasePlan, root: Path) -> SandboxPolicy:
    """The attempt rooted at ``root``: `sandbox_policy` with only that root writable."""
    return sandbox_policy(plan, root)


def attempt_sandbox(plan: CasePlan, root: Path) -> Sandbox:
    """The sandbox of the attempt rooted at ``root`` (bwrap, or none as ``plan.sandbox``
    allows); raises SandboxUnavailable under `require` when bubblewrap cannot run."""
    return make_sandbox(plan.sandbox, attempt_policy(plan, root))


def check_sandbox(plan: CasePlan, execution: ExecutionRecord,
                  credentials: dict[str, str]) -> tuple[Sandbox, dict[str, str]]:
    """A fresh sandbox and environment for the ``command`` checks of a graded attempt.

    The checks run in the workspace (their cwd; it stays writable), but nothing else of the
    attempt reaches them: HOME is a new empty folder (no ``~/.local/bin``, user site or rc
    file the attempt planted), PATH is aeval's own (aeval's read-only toolchain, then the
    host's; no folder the attempt wrote), and the rest of the attempt (its HOME) is hidden
    with what every process of a case has hidden (`sandbox_policy`: the original skill, the
    run store, aeval's service state). The empty HOME goes when the sandbox does."""
    home = Path(tempfile.mkdtemp(prefix="aeval-check-home-"))
    policy = sandbox_policy(plan, execution.workspace, writable=[home],
                            hidden=[execution.attempt_root])
    sandbox = make_sandbox(plan.sandbox, policy)
    weakref.finalize(sandbox, shutil.rmtree, home, True)
    env = base_env(home, {"SKILL_DIR": str(execution.skill_copy), **credentials})
    return sandbox, env


def run_sandbox_status(mode: str) -> SandboxStatus:
    """What ``mode`` gives on this machine (probed once per process)."""
    return sandbox_status(mode)  # type: ignore[arg-type]
