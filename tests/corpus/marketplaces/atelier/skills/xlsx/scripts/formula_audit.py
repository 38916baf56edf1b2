"""Audit the formulas of a workbook exported as CSV (sheet, cell, formula, value): error
values, and references to cells that are empty or outside the used range.

    python3 scripts/formula_audit.py errors formulas.csv
    python3 scripts/formula_audit.py refs formulas.csv

Export the CSV from a workbook with `python3 scripts/export_formulas.py book.xlsx`
(needs openpyxl) or from LibreOffice (File > Export > CSV with "Show formulas" on).
"""

from __future__ import annotations

import csv
import re
import sys

ERRORS = ("#REF!", "#DIV/0!", "#VALUE!", "#NAME?", "#N/A", "#NUM!", "#NULL!")
CELL = re.compile(r"(?:(\w+)!)?\$?([A-Z]{1,3})\$?(\d+)")


def load(path: str) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def errors(rows: list[dict[str, str]]) -> int:
    bad = [r for r in rows if r["value"].strip() in ERRORS]
    for r in bad:
        print(f"{r['sheet']}!{r['cell']}: {r['value']} from {r['formula']}")
    print(f"{len(bad)} error value(s) in {len(rows)} cells")
    return 0


def refs(rows: list[dict[str, str]]) -> int:
    filled = {(r["sheet"], r["cell"]) for r in rows if r["value"].strip()}
    dangling = 0
    for r in rows:
        if not r["formula"].startswith("="):
            continue
        for sheet, col, row in CELL.findall(r["formula"][1:]):
            target = (sheet or r["sheet"], f"{col}{row}")
            if target not in filled:
                dangling += 1
                print(f"{r['sheet']}!{r['cell']}: refers to empty {target[0]}!{target[1]}")
    print(f"{dangling} reference(s) to empty cells")
    return 0


COMMANDS = {"errors": errors, "refs": refs}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in COMMANDS:
        print(f"usage: formula_audit.py {'|'.join(COMMANDS)} FILE.csv", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](load(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
