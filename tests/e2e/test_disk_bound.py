"""The disk bound of an attempt (issue 42, item 4): a real `aeval run` of realistic skills whose
literal steps write past the bound set in eval.config (`max_disk_mb`), in several files each
under the per-file limit, in the workspace, in $HOME and in the command's private /tmp, or
by preallocating blocks a file's apparent size does not show. Each ends `fail` with the
reason "wrote more than 64 MiB", quickly: the writer is killed, never left to fill the disk.
A case under the bound passes, a sparse file counting only what it holds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from aeval.adapters.sandbox.bwrap import bwrap_problem
from aeval.deployments.cli.main import main

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]
needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None,
                                 reason=f"bubblewrap: {bwrap_problem()}")

BOUND_MB = 64
SHARD_MB = 16  # each file well under the per-file limit (the bound: 64 MiB)

FETCH = '''"""Fetch the training shards of a dataset into a folder (here: generated locally)."""
import argparse
import os
import pathlib

parser = argparse.ArgumentParser()
parser.add_argument("--shards", type=int, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()
out = pathlib.Path(args.out)
out.mkdir(parents=True, exist_ok=True)
block = os.urandom(1 << 20)
for i in range(args.shards):
    with open(out / f"shard-{i:04d}.bin", "wb") as fh:
        for _ in range(SHARD_MIB):
            fh.write(block)
    print(f"shard {i} written", flush=True)
print(f"all {args.shards} shards written")
'''.replace("SHARD_MIB", str(SHARD_MB))

PREPARE = '''"""Download the model into the user cache, unpack it in a scratch folder."""
import os
import pathlib
import tempfile

cache = pathlib.Path.home() / ".cache" / "models"
cache.mkdir(parents=True, exist_ok=True)
scratch = pathlib.Path(tempfile.gettempdir()) / "unpack"
scratch.mkdir(parents=True, exist_ok=True)
block = os.urandom(1 << 20)
for i in range(12):
    for folder in (cache, scratch):
        with open(folder / f"part-{i:02d}.bin", "wb") as fh:
            for _ in range(SHARD_MIB):
                fh.write(block)
    print(f"part {i} cached and unpacked", flush=True)
print("model ready")
'''.replace("SHARD_MIB", str(SHARD_MB))

RESERVE = '''#!/bin/sh
# Reserve scratch space for the index (blocks allocated, apparent size unchanged).
set -e
: > "$1"
fallocate --keep-size -l "$2" "$1"
echo "reserved $2 for $1"
'''


def skill(root: Path, name: str, steps: list[str], assertions: list[dict],
          **case) -> Path:
    """A dataset skill: scripts/fetch.py (shards), scripts/prepare.py (model cache and
    scratch), scripts/reserve.sh (preallocated scratch)."""
    d = root / name
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Fetches a dataset and prepares the model.\n---\n"
        "# Dataset\n\nFetch the shards with `python3 scripts/fetch.py --shards N --out data`,"
        " cache the model with `python3 scripts/prepare.py`, reserve the index's scratch "
        "space with `sh scripts/reserve.sh index.bin SIZE`.\n")
    (d / "scripts" / "fetch.py").write_text(FETCH)
    (d / "scripts" / "prepare.py").write_text(PREPARE)
    (d / "scripts" / "reserve.sh").write_text(RESERVE)
    (d / "eval.config").write_text(json.dumps({"evals": [{
        "id": "fetch", "prompt": "Fetch the dataset.", "expected_outcome": "Shards in data/.",
        "steps": steps, "assertions": assertions, "max_disk_mb": BOUND_MB,
        "timeout_s": 600, **case}]}))
    return d


def run(target: Path, out: Path, capsys) -> tuple[int, Path, str]:
    capsys.readouterr()
    code = main(["run", str(target), "--out", str(out), "--sandbox", "require"])
    console = "".join(capsys.readouterr())
    (rd,) = (out / "runs").iterdir()
    return code, rd, console


def grading(rd: Path, name: str) -> dict:
    return json.loads((rd / name / "literal" / "fetch" / "grading.json").read_text())


def transcript(rd: Path, name: str) -> str:
    return (rd / name / "literal" / "fetch" / "transcript.md").read_text()


def attempt(rd: Path, name: str) -> dict:
    (record,) = (rd / name / "literal" / "fetch" / "attempts").glob("*/attempt.json")
    return json.loads(record.read_text())


SHARDS_EXIST = [{"type": "file_exists", "path": "data/shard-0000.bin"}]
OVER = f"wrote more than {BOUND_MB} MiB"


@needs_bwrap
def test_shards_past_the_bound_in_the_workspace_fail_the_case_and_the_writer_is_killed(
        tmp_path, capsys):
    """64 shards of 16 MiB (1 GiB, each file a quarter of the bound): the step is killed
    soon after the bound, long before its end; the case fails with the bound as its reason,
    on the console too, although the assertion (a shard exists) passed."""
    mp = tmp_path / "mp"
    skill(mp, "shards", ["python3 $SKILL_DIR/scripts/fetch.py --shards 64 --out data"],
          SHARDS_EXIST)
    start = time.monotonic()
    code, rd, console = run(mp, tmp_path / "out", capsys)
    took = time.monotonic() - start
    g = grading(rd, "shards")
    assert g["status"] == "fail" and g["status_reason"].startswith(OVER), g["status_reason"]
    assert code == 1
    assert OVER in console, console
    assert attempt(rd, "shards")["exceeded"].startswith(OVER)
    text = transcript(rd, "shards")
    assert "all 64 shards written" not in text and f"[killed: {OVER}" in text, text[-2000:]
    assert "shard 32 written" not in text, text[-2000:]  # killed near the bound, not later
    (err,) = g["self_correction"]["first_attempt_errors"]
    assert OVER in err["excerpt"], err
    assert took < 120, took


@needs_bwrap
def test_writing_into_home_and_the_private_tmp_counts_toward_the_same_bound(tmp_path, capsys):
    """A model cached in $HOME and unpacked in /tmp: 16 MiB to each per part, 12 parts;
    neither folder alone reaches the bound before the total does."""
    mp = tmp_path / "mp"
    skill(mp, "model-cache", ["python3 $SKILL_DIR/scripts/prepare.py > prepare.log"],
          [{"type": "file_exists", "path": "prepare.log"}])
    code, rd, console = run(mp, tmp_path / "out", capsys)
    g = grading(rd, "model-cache")
    assert g["status"] == "fail" and g["status_reason"].startswith(OVER), g["status_reason"]
    assert code == 1 and OVER in console
    assert "part 5 cached" not in transcript(rd, "model-cache")


@needs_bwrap
def test_blocks_preallocated_behind_a_zero_apparent_size_count(tmp_path, capsys):
    """The sparse-file trick reversed: `fallocate --keep-size` reserves 200 MiB in a file
    whose size stays 0 (and RLIMIT_FSIZE never sees it); the bound counts allocated blocks."""
    mp = tmp_path / "mp"
    skill(mp, "reserve", ["sh $SKILL_DIR/scripts/reserve.sh index.bin 200M; sleep 30"],
          [{"type": "file_exists", "path": "index.bin"}])
    start = time.monotonic()
    code, rd, _ = run(mp, tmp_path / "out", capsys)
    g = grading(rd, "reserve")
    assert g["status"] == "fail" and g["status_reason"].startswith(OVER), g["status_reason"]
    assert code == 1
    assert time.monotonic() - start < 25  # the sleeping step was killed, not waited for


@needs_bwrap
def test_a_case_under_the_bound_passes_and_a_sparse_file_counts_what_it_holds(
        tmp_path, capsys):
    """Two shards (32 MiB) and a 60 MiB sparse scratch file (apparent size near the bound,
    nothing allocated): within 64 MiB, so the case passes."""
    mp = tmp_path / "mp"
    skill(mp, "small", ["python3 $SKILL_DIR/scripts/fetch.py --shards 2 --out data",
                        "truncate -s 60M scratch.img && test $(stat -c %s scratch.img) = "
                        "62914560"],
          [*SHARDS_EXIST, {"type": "file_exists", "path": "scratch.img"}])
    code, rd, _ = run(mp, tmp_path / "out", capsys)
    g = grading(rd, "small")
    assert g["status"] == "pass", g["status_reason"]
    assert attempt(rd, "small")["exceeded"] is None
    assert code == 0
