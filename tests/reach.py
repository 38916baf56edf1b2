"""The machine as a case would look at it, for the tests that look for what a case can reach
(tests/e2e/test_reachable_from_a_case.py): what is listening here (every socket of the host's
network namespace, whoever opened it), the host's own addresses, listeners and canaries a test
plants, and the allowlist a case's view of the file system must fit.

Nothing here is a list of known paths or ports to hide: the host's sockets are read from
/proc/net at test time, and the view is checked against what a case is *given*.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import os
import shutil
import socket
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/tmp")
"""What every case sees of the host: the system trees (read-only binds or symlinks), a minimal
/etc and a private /tmp. Everything else a case sees is its own (the attempt) or the Python
toolchain."""
GATEWAY = "10.0.2.2"  # the user-mode network's gateway (slirp4netns, pasta), seen from a case
TABLES = ("tcp", "tcp6", "udp", "udp6", "unix")


# ---- sockets and addresses of the host -------------------------------------------------

def _decode(hexaddr: str) -> tuple[str, int]:
    addr, port = hexaddr.split(":")
    raw = bytes.fromhex(addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1]), int(port, 16)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words), int(port, 16)


def socket_table(name: str) -> list[dict]:
    """One of /proc/net/{tcp,tcp6,udp,udp6,unix} of this process's network namespace."""
    try:
        lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
    except OSError:
        return []
    rows = []
    for line in lines:
        f = line.split()
        if name == "unix":
            rows.append({"inode": int(f[6]), "state": f[5], "path": f[7] if len(f) > 7 else ""})
        else:
            rows.append({"local": _decode(f[1]), "state": f[3], "inode": int(f[9])})
    return rows


def socket_inodes() -> dict[int, str]:
    """Every socket of the host's network namespace now: inode -> what it is."""
    out = {}
    for name in TABLES:
        for row in socket_table(name):
            if row["inode"]:
                what = row["path"] if name == "unix" else "{}:{}".format(*row["local"])
                out[row["inode"]] = f"{name} {what} (state {row['state']})"
    return out


def listening_tcp() -> list[tuple[str, int]]:
    """Every listening TCP socket of the host, whoever started it: (address, port)."""
    return sorted({row["local"] for name in ("tcp", "tcp6") for row in socket_table(name)
                   if row["state"] == "0A"})


def named_unix_sockets() -> set[str]:
    """The host's unix sockets with a name (a path, or ``@name`` for an abstract one)."""
    return {row["path"] for row in socket_table("unix") if row["path"]}


def host_addresses() -> list[str]:
    """The host's own addresses other than loopback (IPv4 from fib_trie, global IPv6)."""
    found: set[str] = set()
    try:
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
    except OSError:
        lines = []
    for prev, line in itertools.pairwise(lines):
        if "/32 host LOCAL" in line and "|--" in prev:
            addr = prev.split("|--")[1].strip()
            if not addr.startswith("127."):
                found.add(addr)
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            hexaddr, _, _, scope, *_ = line.split()
            if scope == "00":  # global scope only (link-local needs an interface)
                found.add(socket.inet_ntop(socket.AF_INET6, bytes.fromhex(hexaddr)))
    return sorted(found)


def has_ipv6_loopback() -> bool:
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        return True
    return False


class SocketWatch:
    """Every socket the host's network namespace holds while a run goes on (sampled), so a
    socket a case lists can be told to be the host's even when it lived only a moment (the
    embedded Prefect server, a Dask scheduler)."""

    def __init__(self, every_s: float = 0.2):
        self.every_s = every_s
        self.seen: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while True:
            self.seen.update(socket_inodes())
            if self._stop.wait(self.every_s):
                self.seen.update(socket_inodes())
                return

    def __enter__(self) -> SocketWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class Listeners:
    """Servers the test opens on the host before a run: TCP on 127.0.0.1, on 0.0.0.0, on each
    of the host's own addresses and on ::1; an abstract unix socket; unix socket files in /tmp
    and in each folder of ``socket_dirs``. Each accepts, records and closes."""

    def __init__(self, token: str, socket_dirs: Iterable[Path] = ()):
        self.token = token
        self.tcp: list[tuple[str, int]] = []
        self.unix: list[str] = []
        self.abstract: list[str] = []
        self.accepted: list[str] = []
        self._socks: list[tuple[socket.socket, str]] = []
        self._stop = False
        self._dirs = [Path("/tmp"), *socket_dirs]

    def _listen(self, family: int, address, label: str) -> socket.socket | None:
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            s.bind(address)
        except OSError:
            s.close()
            return None
        s.listen(16)
        s.settimeout(0.2)
        self._socks.append((s, label))
        return s

    def __enter__(self) -> Listeners:
        for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "0.0.0.0"),
                             *((socket.AF_INET6 if ":" in a else socket.AF_INET, a)
                               for a in host_addresses()),
                             *([(socket.AF_INET6, "::1")] if has_ipv6_loopback() else [])):
            s = self._listen(family, (host, 0), host)
            if s is not None:
                self.tcp.append((host, s.getsockname()[1]))
        name = f"port-audit-{self.token}"
        if self._listen(socket.AF_UNIX, "\0" + name, "@" + name) is not None:
            self.abstract.append(name)
        for d in dict.fromkeys(self._dirs):
            path = str(d / f".{name}.sock")
            if self._listen(socket.AF_UNIX, path, path) is not None:
                self.unix.append(path)
        for s, label in self._socks:
            threading.Thread(target=self._accept, args=(s, label), daemon=True).start()
        return self

    def _accept(self, s: socket.socket, label: str) -> None:
        while not self._stop:
            try:
                conn, peer = s.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            port = s.getsockname()[1] if s.family != socket.AF_UNIX else ""
            self.accepted.append(f"{label}:{port} from {peer!r}" if port else
                                 f"{label} (unix)")
            conn.close()

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        for s, _ in self._socks:
            s.close()
        for path in self.unix:
            with contextlib.suppress(OSError):
                os.unlink(path)


def audit_targets(listeners: Listeners) -> dict:
    """The port-audit skill's inventory: every listening TCP socket of the host now (the
    test's own among them) on each address that could lead to it from a case (its own
    address, loopback, each host address, the user-mode gateway), full scans of loopback,
    the gateway and the host's addresses, and the test's unix sockets."""
    own = host_addresses()
    pairs: set[tuple[str, int]] = set()
    for addr, port in listening_tcp():
        wildcard = addr in ("0.0.0.0", "::")
        loop = "::1" if ":" in addr else "127.0.0.1"
        for host in {addr if not wildcard else loop, loop, GATEWAY,
                     *(own if wildcard else [])}:
            pairs.add((host, port))
    scan = ["127.0.0.1", GATEWAY, *own, *(["::1"] if has_ipv6_loopback() else [])]
    return {"scan_hosts": scan, "tcp": sorted([h, p] for h, p in pairs),
            "unix_sockets": listeners.unix, "abstract_sockets": listeners.abstract}


# ---- the file system -------------------------------------------------------------------

CANARY_HOMES = ("/root", "/home", "/opt", "/srv", "/var/tmp", "/var/lib", "/tmp")
"""Where people and services keep things on a machine (the canaries only name a few of the
places a case must not see; the allowlist check covers every other one)."""


@contextlib.contextmanager
def canaries(token: str, folders: Iterable[Path]) -> Iterator[list[Path]]:
    """A small file named after ``token`` in each existing, writable folder; removed after."""
    planted = []
    try:
        for d in dict.fromkeys(Path(f) for f in folders):
            p = d / f".reach-canary-{token}"
            try:
                p.write_text("canary: a case must never see this file\n")
            except OSError:
                continue
            planted.append(p)
        yield planted
    finally:
        for p in planted:
            with contextlib.suppress(OSError):
                p.unlink()


def python_prefixes() -> list[Path]:
    """The interpreter prefix a case may see: ``sys.base_prefix`` (what aeval's toolchain
    runs) as written and resolved, when it is not under a system tree already."""
    out = []
    for p in {Path(sys.base_prefix), Path(sys.base_prefix).resolve()}:
        if not any(p.is_relative_to(t) for t in SYSTEM_TREES):
            out.append(p)
    return out


def outside_view(paths: Iterable[str], roots: Iterable[Path]) -> dict[str, int]:
    """Paths that lie neither inside one of ``roots`` nor on the way to one (an ancestor must
    exist to hold the bind, but nothing else in it may), grouped by the first such folder:
    {area: entries seen in it}."""
    roots = sorted({str(r).rstrip("/") or "/" for r in roots})
    ancestors = {str(a) for r in roots for a in Path(r).parents}
    under = tuple(r + "/" for r in roots if r != "/")

    def allowed(p: str) -> bool:
        return p in ancestors or p in roots or p.startswith(under)

    areas: dict[str, int] = {}
    for p in paths:
        if allowed(p):
            continue
        top = "/"
        for part in p.strip("/").split("/"):
            top = top.rstrip("/") + "/" + part
            if not allowed(top):
                break
        areas[top] = areas.get(top, 0) + 1
    return dict(sorted(areas.items(), key=lambda kv: (-kv[1], kv[0])))


# ---- the port audit, from any entry point -----------------------------------------------

SKILLS = Path(__file__).resolve().parent / "data" / "reach"
AUDIT_CASES = {"offline": False, "online": True}
"""The port-audit skill's cases: one with the default ``network: false``, one with
``network: true`` (outbound through the user-mode network)."""


def add_port_audit(marketplace: Path, targets: dict, timeout_s: int = 300) -> Path:
    """The port-audit skill in ``marketplace``, with ``targets`` as its fixture and one case
    per entry of `AUDIT_CASES`."""
    d = marketplace / "port-audit"
    shutil.copytree(SKILLS / "port-audit", d)
    (d / "fixtures").mkdir()
    (d / "fixtures" / "targets.json").write_text(json.dumps(targets, indent=1))
    (d / "eval.config").write_text(json.dumps({"evals": [{
        "id": case, "network": network,
        "prompt": "Audit which services answer on this machine with the port-audit skill.",
        "expected_outcome": "reports/port-audit.json lists every port that answered.",
        "files": ["fixtures/"],
        "steps": ["python3 $SKILL_DIR/scripts/audit.py fixtures/targets.json "
                  "--out reports/port-audit.json"],
        "assertions": [{"type": "file_exists", "path": "reports/port-audit.json"}],
        "timeout_s": timeout_s} for case, network in AUDIT_CASES.items()]}, indent=1))
    return d


def read_audit(outputs: Path, why: str = "") -> tuple[dict, dict]:
    """The audit's report and the socket tables it read, from a case's ``outputs/``; fails
    with the case's own reason (grading.json) when it wrote none."""
    report, tables = outputs / "reports" / "port-audit.json", \
        outputs / "reports" / "socket-tables.json.gz"
    if not (report.is_file() and tables.is_file()):
        grading = outputs.parent / "grading.json"
        reason = (json.loads(grading.read_text()).get("status_reason", "")
                  if grading.is_file() else "no grading.json")
        raise AssertionError(f"{outputs.parent.name} wrote no audit ({reason})\n{why}")
    return json.loads(report.read_text()), json.loads(gzip.decompress(tables.read_bytes()))


def assert_nothing_answers(report: dict, ours: Iterable[tuple[str, int]],
                           accepted: list[str], label: str,
                           services: dict[str, int] | None = None) -> None:
    """No TCP port, unix socket or abstract socket the audit tried accepted, and every scan
    finished; ``ours`` are the test's own listeners and ``services`` (name -> port) the entry
    point's, both named apart in the message."""
    ours = set(ours)
    opened = [tuple(o) for o in report["open"]]
    mine = [o for o in opened if o in ours or o[0] in ("unix", "abstract")]
    theirs = sorted({f"{name} ({port})" for name, port in (services or {}).items()
                     for o in opened if o[1] == port})
    by_host = {h: r for h, r in report["tcp"].items() if r["open_count"]}
    unfinished = {h: {k: r[k] for k in ("left", "timeout", "filtered")}
                  for h, r in report["tcp"].items() if r["left"]}
    assert not opened and not unfinished, (
        f"[{label}] reachable from the case:\n"
        f"  the test's own listeners: {mine}\n"
        + (f"  the entry point's own services: {theirs}\n" if theirs else "")
        + "".join(f"  {h}: {r['open_count']} port(s) open, e.g. {r['open'][:12]}\n"
                  for h, r in by_host.items())
        + (f"  scans not finished: {unfinished}\n" if unfinished else "")
        + f"  (what the test's listeners accepted during the run, from any case: "
          f"{accepted[:8]})")
    # the unix ones are the test's alone: nobody else knows their names
    assert not [a for a in accepted if "(unix)" in a], accepted


def assert_no_host_sockets(tables: dict, host_sockets: dict[int, str],
                           host_unix_names: set[str], label: str) -> None:
    """The socket tables a case read hold no socket the host held during the run (by inode)
    and no named unix socket of the host."""
    inside = {row["inode"]: name for name, rows in tables.items() if isinstance(rows, list)
              for row in rows if row.get("inode")}
    shared = {i: host_sockets[i] for i in inside if i in host_sockets}
    names = {row["path"] for row in tables.get("unix", []) if row.get("path")}
    host_names = names & host_unix_names
    assert not shared and not host_names, (
        f"[{label}] the case lists {len(shared)} socket(s) of the host, e.g.:\n  "
        + "\n  ".join(sorted(shared.values(), key=lambda w: ("(state 0A)" not in w, w))[:15])
        + f"\n  named unix sockets of the host: {sorted(host_names)[:15]}")
    assert socket_inodes(), "the host's own socket tables are unreadable: nothing compared"
