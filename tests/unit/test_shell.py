"""run_command without a sandbox: output capped while read, redacted before cut, stdin closed,
the process group killed at the timeout and when the command returns."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time

from aeval.isolation.redact import Redactor
from aeval.isolation.shell import base_env, run_command
from tests.procs import gone

CANARY = "sk-proj-canary-9d41c7e2b8a64f03"




def test_500_mb_of_output_keeps_memory_flat_and_keeps_head_and_tail(tmp_path):
    step = ("echo FIRST-LINE; head -c 500000000 /dev/zero | tr '\\0' x; echo; "
            "echo 'Traceback: the real error' >&2; echo LAST-LINE")
    # VmHWM, not ru_maxrss: on Linux ru_maxrss survives exec, so a child of a large pytest
    # process would report its parent's size
    probe = (
        "import json, resource, sys\n"
        "from pathlib import Path\n"
        "from aeval.isolation.shell import base_env, run_command\n"
        f"r = run_command({step!r}, Path({str(tmp_path)!r}), base_env(Path({str(tmp_path)!r})),"
        " 120, cap=16000)\n"
        "hwm = [ln for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0]\n"
        "print(json.dumps({'rss_kb': int(hwm.split()[1]),"
        " 'out': r.stdout, 'err': r.stderr, 'truncated': r.truncated, 'code': r.exit_code}))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=True)
    res = json.loads(done.stdout)
    assert res["code"] == 0 and res["truncated"] is True
    assert res["rss_kb"] < 200_000, f"aeval's process peaked at {res['rss_kb']} kB"
    assert res["out"].startswith("FIRST-LINE") and res["out"].rstrip().endswith("LAST-LINE")
    assert "bytes cut" in res["out"] and len(res["out"]) < 17_000
    assert "the real error" in res["err"]


def test_secret_across_the_cut_and_encoded_is_redacted_before_truncation(tmp_path):
    cap = 3000
    # the head keeps cap // 3 = 1000 characters: put the secret across that boundary
    step = (f"printf '%0995d' 0; echo -n {CANARY}; head -c 200000 /dev/zero | tr '\\0' y; "
            f"echo; echo -n {CANARY} | base64; echo -n {CANARY} | rev")
    r = run_command(step, tmp_path, base_env(tmp_path), 30, cap=cap,
                    redactor=Redactor({"OPENAI_COMPAT_KEY": CANARY}))
    assert r.ok and r.truncated
    assert "sk-p" not in r.stdout and CANARY[::-1][:8] not in r.stdout
    assert base64.b64encode(CANARY.encode()).decode()[:12] not in r.stdout
    assert "[REDACTED:OPENAI_COMPAT_KEY]" in r.stdout


def test_short_output_is_whole_and_redacted(tmp_path):
    r = run_command(f"echo token={CANARY}; echo warn >&2", tmp_path, base_env(tmp_path), 30,
                    redactor=Redactor({"K": CANARY}))
    assert r.stdout == "token=[REDACTED:K]\n" and r.stderr == "warn\n" and not r.truncated


def test_stdin_is_closed(tmp_path):
    start = time.monotonic()
    r = run_command("cat; read -r line || echo no-input", tmp_path, base_env(tmp_path), 20)
    assert r.ok and r.stdout == "no-input\n" and time.monotonic() - start < 10


def test_timeout_kills_the_process_group(tmp_path):
    marker = "61.4213"
    start = time.monotonic()
    r = run_command(f"sleep {marker} & sleep {marker}; echo never", tmp_path,
                    base_env(tmp_path), 2)
    assert r.timed_out and r.exit_code is None and not r.ok
    assert time.monotonic() - start < 8
    assert gone(marker) == []


def test_background_children_are_killed_when_the_command_returns(tmp_path):
    marker = "97.3141"
    start = time.monotonic()
    r = run_command(f"for i in $(seq 50); do sleep {marker} >/dev/null 2>&1 & done; echo up",
                    tmp_path, base_env(tmp_path), 60)
    assert r.ok and r.stdout == "up\n" and time.monotonic() - start < 10
    assert gone(marker) == []


def test_failure_keeps_the_exit_code(tmp_path):
    r = run_command("echo partial; exit 3", tmp_path, base_env(tmp_path), 10)
    assert r.exit_code == 3 and not r.ok and r.stdout == "partial\n"


def test_a_command_past_the_128_kib_argument_limit_runs_as_with_bash_c(tmp_path):
    """Issue 33: the command is a script bash reads from a sealed descriptor, not one argv
    string (E2BIG past 128 KiB); $0, $#, the messages and the exit code are -c's, and the
    descriptor is not inherited by what the command starts."""
    table = "".join(f"2026-01-{1 + i % 28:02d},north,SKU-{i},{i % 40}\n" for i in range(9000))
    assert len(table) > 200 * 1024
    command = (f"wc -l <<'CSV'\n{table}CSV\n"
               'echo "argv0=${0##*/} argc=$#"\nls /proc/self/fd | sort -n | tr "\\n" " "\n'
               "echo\nsummarize-aeval-absent --by region\necho never\n")
    r = run_command(command, tmp_path, base_env(tmp_path), 60)
    assert r.exit_code == 127, r.stderr
    assert r.stdout.split("\n")[:2] == ["9000", "argv0=bash argc=0"]
    assert r.stdout.split("\n")[2].split() == ["0", "1", "2", "3"]  # 3: ls's own listing
    assert "never" not in r.stdout
    assert r.stderr.endswith("bash: line 9006: summarize-aeval-absent: command not found\n")
    assert r.command == command
