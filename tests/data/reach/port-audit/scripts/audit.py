#!/usr/bin/env python3
"""What answers on this machine: the kernel's socket tables, then a connect scan.

Usage: python3 scripts/audit.py TARGETS.json [--out reports/port-audit.json]

TARGETS.json: {"scan_hosts": [...], "tcp": [[host, port], ...],
               "unix_sockets": [path, ...], "abstract_sockets": [name, ...]}
Every port listening in /proc/net/tcp{,6} is added (on its address, on loopback and on the
user-mode network gateway 10.0.2.2). Connections are closed as soon as they open. The
kernel's tables go beside the report, as socket-tables.json.gz.
"""

import argparse
import errno
import gzip
import json
import os
import resource
import select
import socket
import threading
import time

TABLES = ("tcp", "tcp6", "udp", "udp6", "unix")
GATEWAY = "10.0.2.2"
INFLIGHT = 200
PROBE_TIMEOUT_S = 1.0
HOST_DEADLINE_S = 150.0  # a full scan takes seconds; under load (every host scanned at once,
# one interpreter: one core), a minute and more. Only a slow scan waits for it; the case's
# timeout (300 s) bounds it
SAMPLE = 100  # open ports kept per host in the report


def decode(hexaddr):
    addr, port = hexaddr.split(":")
    raw = bytes.fromhex(addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1]), int(port, 16)
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words), int(port, 16)


def read_tables():
    out = {}
    for name in TABLES:
        try:
            with open(f"/proc/net/{name}") as fh:
                lines = fh.read().splitlines()[1:]
        except OSError as e:
            out[name] = {"error": str(e)}
            continue
        rows = []
        for line in lines:
            f = line.split()
            if name == "unix":  # Num RefCount Protocol Flags Type St Inode [Path]
                rows.append({"inode": int(f[6]), "flags": f[3], "state": f[5],
                             "path": f[7] if len(f) > 7 else ""})
            else:
                local, remote = decode(f[1]), decode(f[2])
                rows.append({"local": list(local), "remote": list(remote), "state": f[3],
                             "inode": int(f[9])})
        out[name] = rows
    return out


def scan(host, ports, result):
    """Non-blocking connect to each port of ``host``: open, closed, unreachable, timed out;
    a host that drops the first INFLIGHT probes is filtered (its listed ports still tried)."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    todo = list(reversed(ports))  # pop() takes the listed ports first
    r = {"open": [], "closed": 0, "unreachable": 0, "timeout": 0, "left": 0,
         "filtered": False, "self": 0}
    listed = set(result.pop("listed", []))
    pending, ep = {}, select.epoll()
    end = time.monotonic() + HOST_DEADLINE_S
    while (todo or pending) and time.monotonic() < end:
        while todo and len(pending) < INFLIGHT:
            port = todo.pop()
            if r["filtered"] and port not in listed:
                continue
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                rc = s.connect_ex((host, port))
            except OSError as e:
                rc = e.errno
            if rc == errno.EINPROGRESS:
                ep.register(s.fileno(), select.EPOLLOUT)
                pending[s.fileno()] = (s, port, time.monotonic())
                continue
            done(r, s, port, rc)
        for fd, _ in ep.poll(0.05):
            s, port, _ = pending.pop(fd)
            ep.unregister(fd)
            done(r, s, port, s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
        now = time.monotonic()
        for fd, (s, _, t0) in list(pending.items()):
            if now - t0 > PROBE_TIMEOUT_S:
                pending.pop(fd)
                ep.unregister(fd)
                s.close()
                r["timeout"] += 1
        if (not r["filtered"] and r["timeout"] >= INFLIGHT and not r["open"]
                and not r["closed"]):
            r["filtered"] = True
    r["left"] = len([p for p in todo if not r["filtered"] or p in listed]) + len(pending)
    for s, _, _ in pending.values():
        s.close()
    result.update(r)


def done(r, s, port, rc):
    if rc == 0:
        try:
            if s.getsockname() == s.getpeername():
                r["self"] += 1  # TCP self-connect (source port == port): nothing listens
            else:
                r["open"].append(port)
        except OSError:
            r["closed"] += 1
    elif rc in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
        r["unreachable"] += 1
    else:
        r["closed"] += 1
    s.close()


def try_unix(address):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address)
        return "open"
    except OSError as e:
        return f"{type(e).__name__}: {e.strerror or e}"
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("targets")
    ap.add_argument("--out", default="reports/port-audit.json")
    args = ap.parse_args()
    started = time.time()
    tables = read_tables()  # before this process opens any socket
    with open(args.targets) as fh:
        targets = json.load(fh)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    listed = {}
    for host, port in targets.get("tcp", []):
        listed.setdefault(host, set()).add(int(port))
    for name in ("tcp", "tcp6"):
        for row in tables.get(name, []) if isinstance(tables.get(name), list) else []:
            if row["state"] != "0A":
                continue
            addr, port = row["local"]
            loop = "::1" if name == "tcp6" else "127.0.0.1"
            for host in {loop if addr in ("0.0.0.0", "::") else addr, loop, GATEWAY}:
                listed.setdefault(host, set()).add(port)
    full = set(targets.get("scan_hosts", []))
    results, threads = {}, []
    for host in sorted(full | set(listed)):
        ports = sorted(listed.get(host, set()))
        if host in full:
            ports += [p for p in range(1, 65536) if p not in listed.get(host, set())]
        results[host] = {"listed": ports[:len(listed.get(host, ()))], "full": host in full}
        t = threading.Thread(target=scan, args=(host, ports, results[host]))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    unix = {p: try_unix(p) for p in targets.get("unix_sockets", [])}
    abstract = {n: try_unix("\0" + n) for n in targets.get("abstract_sockets", [])}
    for r in results.values():  # a host that answers on every port: the count and a sample
        r["open_count"] = len(r["open"])
        r["open"] = r["open"][:SAMPLE]
    report = {"started": started, "ended": time.time(),
              "tcp": results, "unix": unix, "abstract": abstract,
              "open": sorted([h, p] for h, r in results.items() for p in r["open"])
              + [["unix", p] for p, v in unix.items() if v == "open"]
              + [["abstract", n] for n, v in abstract.items() if v == "open"]}
    out_dir = os.path.dirname(args.out) or "."
    os.makedirs(out_dir, exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(report, fh, indent=1)
    with gzip.open(os.path.join(out_dir, "socket-tables.json.gz"), "wt") as fh:
        json.dump(tables, fh)
    for host, r in results.items():
        state = "filtered" if r["filtered"] else f"{r['open_count']} open"
        print(f"{host}: {state}, {r['closed']} closed, {r['unreachable']} unreachable, "
              f"{r['timeout']} no answer, {r['left']} not tried")
    print(f"unix sockets: {unix}; abstract: {abstract}")
    print(f"report in {args.out}")


if __name__ == "__main__":
    main()
