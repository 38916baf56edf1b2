"""The sandbox's toolchain is made once per process, however many cases start at once: a case
must bind the same folder its PATH names (two folders made by racing threads left one case
with a ``python3`` that did not exist inside)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

RACE = textwrap.dedent("""
    import threading
    from aeval.adapters.sandbox._toolchain import toolchain
    start = threading.Barrier(16)
    made = set()
    def case():
        start.wait()
        made.add(toolchain())
    threads = [threading.Thread(target=case) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(len(made))
""")


def test_sixteen_cases_starting_at_once_share_one_toolchain():
    out = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "1"
