"""The disk bound's measure (`aeval.adapters.sandbox._disk`): allocated blocks, never the
apparent size, each inode once, no link followed, a bounded walk; and its watch on a real
unsandboxed command (the mechanism that needs no privilege)."""

from __future__ import annotations

import os
import subprocess
import time

from aeval.adapters.sandbox._disk import DiskBound, allocated, human
from aeval.adapters.sandbox.bwrap import NoSandbox
from aeval.isolation.sandbox import SandboxPolicy
from aeval.isolation.shell import base_env

MIB = 1 << 20


def test_sizes_read_as_the_field_is_written():
    assert human(64 * MIB) == "64 MiB"
    assert human(10 << 30) == "10 GiB"
    assert human(3 * MIB // 2) == "1.5 MiB"
    assert human(100) == "100 bytes"


def test_allocated_counts_blocks_not_the_apparent_size(tmp_path):
    (tmp_path / "data.bin").write_bytes(os.urandom(4 * MIB))
    with open(tmp_path / "sparse.img", "wb") as fh:
        fh.truncate(1 << 30)  # 1 GiB apparent, nothing written
    used, entries = allocated([tmp_path])
    assert 4 * MIB <= used < 5 * MIB and entries == 2


def test_a_hard_link_counts_once_and_a_symlink_is_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big.bin").write_bytes(os.urandom(8 * MIB))
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.bin").write_bytes(os.urandom(2 * MIB))
    os.link(root / "a.bin", root / "sub" / "b.bin")
    (root / "link").symlink_to(outside)
    (root / "link-file").symlink_to(outside / "big.bin")
    used, _ = allocated([root])
    assert 2 * MIB <= used < 3 * MIB


def test_a_walk_past_its_entry_limit_is_over_the_bound(tmp_path):
    for i in range(50):
        (tmp_path / f"f{i}").touch()
    bound = DiskBound([tmp_path], 64 * MIB, max_entries=20)
    _, why = bound.walk()
    assert why is not None and why.startswith("wrote more than 64 MiB") and "20" in why


def test_an_unsandboxed_writer_is_killed_over_the_bound(tmp_path):
    """No bubblewrap, no privilege: the watch alone stops a loop writing 4 MiB files."""
    root = tmp_path / "attempt"
    (root / "workspace").mkdir(parents=True)
    (root / "home").mkdir()
    sb = NoSandbox(SandboxPolicy(root=root, max_disk_bytes=32 * MIB))
    start = time.monotonic()
    r = sb.run("for i in $(seq 1000); do head -c 4194304 /dev/zero > f$i; done; echo finished",
               root / "workspace", base_env(root / "home"), 60)
    assert r.exceeded is not None and r.exceeded.startswith("wrote more than 32 MiB"), r
    assert not r.ok and "finished" not in r.stdout and sb.exceeded == r.exceeded
    assert f"[killed: {r.exceeded}]" in r.combined()
    assert time.monotonic() - start < 20
    held = int(subprocess.run(["du", "-sm", str(root)], capture_output=True,
                              text=True).stdout.split()[0])
    assert held < 512, held  # killed near the bound, never left to write its 4 GiB


def test_a_command_under_the_bound_is_left_alone(tmp_path):
    root = tmp_path / "attempt"
    (root / "workspace").mkdir(parents=True)
    (root / "home").mkdir()
    sb = NoSandbox(SandboxPolicy(root=root, max_disk_bytes=32 * MIB))
    r = sb.run("head -c 8388608 /dev/urandom > f && echo ok", root / "workspace",
               base_env(root / "home"), 60)
    assert r.ok and r.exceeded is None and sb.exceeded is None and "ok" in r.stdout
