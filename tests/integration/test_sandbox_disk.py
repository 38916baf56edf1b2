"""The disk bound under bubblewrap (issue 42, item 4): the private /tmp is a tmpfs no larger
than the bound and counts toward it with the attempt's own folders; a writer in any of them
is killed over the bound, with the reason kept on the sandbox."""

from __future__ import annotations

import time

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem, make_sandbox
from aeval.isolation.sandbox import SandboxPolicy
from aeval.isolation.shell import base_env, run_command

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap: {bwrap_problem()}"),
]
MIB = 1 << 20


@pytest.fixture
def bounded(tmp_path):
    root = tmp_path / "attempt"
    (root / "workspace").mkdir(parents=True)
    (root / "home").mkdir()
    sb = make_sandbox("require", SandboxPolicy(root=root, max_disk_bytes=32 * MIB))
    return sb, root, base_env(root / "home")


def test_the_private_tmp_is_no_larger_than_the_bound(bounded):
    sb, root, env = bounded
    r = run_command("df -B1 --output=size /tmp | tail -1", root / "workspace", env, 60,
                    sandbox=sb)
    assert r.ok and int(r.stdout.strip()) == 32 * MIB, r


def test_a_writer_in_tmp_and_home_is_killed_over_the_bound(bounded):
    """4 MiB to /tmp, then 4 MiB to $HOME, again and again: neither alone nears 32 MiB when
    the total passes it."""
    sb, root, env = bounded
    start = time.monotonic()
    r = run_command('for i in $(seq 100); do head -c 4194304 /dev/zero > /tmp/t$i; '
                    'head -c 4194304 /dev/zero > "$HOME/h$i"; sleep 0.05; done; echo finished',
                    root / "workspace", env, 120, sandbox=sb)
    assert r.exceeded is not None and r.exceeded.startswith("wrote more than 32 MiB"), r
    assert "finished" not in r.stdout and sb.exceeded == r.exceeded
    assert time.monotonic() - start < 5
    assert len(list((root / "home").iterdir())) < 8  # killed near 16 MiB in $HOME


def test_blocks_reserved_past_the_file_size_limit_are_counted(bounded):
    """`fallocate --keep-size` passes RLIMIT_FSIZE (the size does not change); its blocks
    count."""
    sb, root, env = bounded
    r = run_command(": > big; fallocate --keep-size -l 100M big; sleep 20; echo finished",
                    root / "workspace", env, 60, sandbox=sb)
    assert r.exceeded is not None and r.exceeded.startswith("wrote more than 32 MiB"), r
    assert r.duration_s < 10
