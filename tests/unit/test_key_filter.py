"""The sandbox's seccomp program (`key_filter`), run by a small classic-BPF interpreter: the
key ring calls fail with EPERM in every ABI a process can call them through (x86_64's native,
x32 and 32-bit ones; aarch64's and its 32-bit ones), and nothing else is refused."""

from __future__ import annotations

import struct

import pytest

from aeval.adapters.sandbox._limits import key_filter

ALLOW, EPERM = 0x7FFF0000, 0x00050001


def run(prog: bytes, arch: int, nr: int) -> int:
    """What the kernel would return for system call ``nr`` of ``arch`` (``seccomp_data``)."""
    ins = [struct.unpack("=HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]
    data, acc, pc = {0: nr, 4: arch}, 0, 0
    while True:
        code, jt, jf, k = ins[pc]
        if code == 0x20:
            acc = data[k]
        elif code == 0x54:
            acc &= k
        elif code == 0x15:
            pc += jt if acc == k else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")
        pc += 1


@pytest.mark.parametrize(("machine", "arch", "calls", "other"), [
    ("x86_64", 0xC000003E, (248, 249, 250), (0, 59, 247, 251)),
    ("x86_64", 0xC000003E, (0x40000000 | 248, 0x40000000 | 250), (0x40000000 | 59,)),
    ("x86_64", 0x40000003, (286, 287, 288), (11, 248, 250)),
    ("aarch64", 0xC00000B7, (217, 218, 219), (63, 220, 221)),
    ("aarch64", 0x40000028, (309, 310, 311), (11, 217, 219)),
])
def test_key_ring_calls_fail_and_nothing_else(machine, arch, calls, other):
    prog = key_filter(machine)
    assert prog is not None
    assert [run(prog, arch, nr) for nr in calls] == [EPERM] * len(calls)
    assert [run(prog, arch, nr) for nr in other] == [ALLOW] * len(other)


def test_an_unknown_machine_gets_no_filter_and_an_unknown_abi_is_let_through():
    assert key_filter("riscv64") is None
    assert run(key_filter("x86_64"), 0xC00000B7, 250) == ALLOW
