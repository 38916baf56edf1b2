"""The latency-bound workload of issue 13, as data: N one-case skills (``ledger-NN``: a small
CSV-totalling skill with a script, a fixture and an eval.config) and the scripted model
conversation of each case (R requests: R-1 bash calls, then the final answer).

The same skills and the same conversation serve aeval (builtin runtime: tool ``bash``, a
final text answer) and Inspect AI (``react`` agent: tool ``bash``, the final answer through
its ``submit`` tool); both bash tools take ``command``. So both harnesses make the same
number of model requests and run exactly the same commands.
"""

from __future__ import annotations

import json
from pathlib import Path

from aeval.testing import Script, ToolCall, Turn

SKILL_MD = """---
name: {name}
description: Total the amounts of a ledger CSV (date,account,amount) and write the total to a
  file. Use when asked to sum, total or reconcile a ledger.
---

# Ledger totals

Sum the `amount` column of a ledger:

```bash
python3 $SKILL_DIR/scripts/tally.py ledger.csv --out outputs/total.txt
```

It prints `total: X` (two decimals) and, with `--out`, writes the same line to the file.
"""

TALLY_PY = '''"""Sum the amount column of a ledger CSV."""
import argparse
import csv
import pathlib

ap = argparse.ArgumentParser()
ap.add_argument("ledger")
ap.add_argument("--out")
args = ap.parse_args()
with open(args.ledger, newline="") as f:
    total = sum(float(row["amount"]) for row in csv.DictReader(f))
line = f"total: {total:.2f}"
print(line)
if args.out:
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(line + "\\n")
'''


def skill_name(i: int) -> str:
    """The name of skill ``i``: ``ledger-00``, ``ledger-01``, ..."""
    return f"ledger-{i:02d}"


def ledger_csv(i: int) -> tuple[str, float]:
    """A small ledger for skill ``i`` and its total."""
    rows = [(f"2026-11-{d:02d}", f"acct-{(d * 7 + i) % 5}", round(d * 12.5 + i, 2))
            for d in range(1, 13)]
    text = "date,account,amount\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows)
    return text, sum(r[2] for r in rows)


def prompt(i: int) -> str:
    """The case prompt (names the skill, which is what the scripted server matches on)."""
    return (f"Use the {skill_name(i)} skill to total the amounts in fixtures/ledger.csv and "
            "write the total to outputs/total.txt.")


def skill_files(i: int) -> dict[str, str]:
    """The files of skill ``i``, relative to the skill folder."""
    return {"SKILL.md": SKILL_MD.format(name=skill_name(i)), "scripts/tally.py": TALLY_PY}


def write_marketplace(root: Path, skills: int) -> list[Path]:
    """Write ``skills`` one-case skills under ``root``; return their folders."""
    dirs = []
    for i in range(skills):
        d = root / skill_name(i)
        for rel, text in skill_files(i).items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text)
        csv_text, total = ledger_csv(i)
        (d / "fixtures").mkdir(exist_ok=True)
        (d / "fixtures" / "ledger.csv").write_text(csv_text)
        (d / "eval.config").write_text(json.dumps({"evals": [{
            "id": "total",
            "prompt": prompt(i),
            "expected_outcome": f"outputs/total.txt holds `total: {total:.2f}`.",
            "files": ["fixtures/ledger.csv"],
            "steps": ["python3 $SKILL_DIR/scripts/tally.py fixtures/ledger.csv "
                      "--out outputs/total.txt"],
            "assertions": [
                {"type": "file_exists", "path": "outputs/total.txt"},
                {"type": "file_contains", "path": "outputs/total.txt",
                 "pattern": f"total: {total:.2f}"},
                {"type": "tool_used", "tool": "bash", "input": "tally\\.py"},
            ],
            "timeout_s": 300,
            "max_turns": 40,
        }]}, indent=2))
        dirs.append(d)
    return dirs


def commands(i: int, requests: int) -> list[str]:
    """The ``requests - 1`` bash commands of case ``i``, run from the workspace root."""
    sk = f".agents/skills/{skill_name(i)}"
    base = [
        f"cat {sk}/SKILL.md",
        f"ls {sk}/scripts",
        "head -3 fixtures/ledger.csv",
        "wc -l fixtures/ledger.csv",
        f"python3 {sk}/scripts/tally.py fixtures/ledger.csv",
        "mkdir -p outputs",
        f"python3 {sk}/scripts/tally.py fixtures/ledger.csv --out outputs/total.txt",
        "cat outputs/total.txt",
        "ls -l outputs",
    ]
    n = requests - 1
    return [base[k % len(base)] for k in range(n)]


def script(i: int, requests: int, delay_s: float, harness: str) -> Script:
    """The scripted conversation of case ``i`` for ``harness`` (``aeval`` or ``inspect``):
    ``requests`` model requests, each answered after ``delay_s``."""
    _, total = ledger_csv(i)
    answer = f"The ledger totals {total:.2f}; written to outputs/total.txt."
    turns = [Turn(tool_calls=[ToolCall(name="bash", arguments={"command": c})], delay_s=delay_s)
             for c in commands(i, requests)]
    if harness == "aeval":
        turns.append(Turn(text=answer, delay_s=delay_s))
    else:
        turns.append(Turn(tool_calls=[ToolCall(name="submit", arguments={"answer": answer})],
                          delay_s=delay_s))
    return Script(name=skill_name(i), match=rf"\b{skill_name(i)}\b", turns=turns,
                  final=answer)
