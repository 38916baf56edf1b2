"""Export every formula cell of a workbook as CSV rows: sheet, cell, formula, value.

    python3 scripts/export_formulas.py book.xlsx > formulas.csv

Needs openpyxl (`pip install openpyxl`). Values are the ones cached at the last save; run
scripts/recalc.py first when the workbook was written by code.
"""

from __future__ import annotations

import csv
import sys

from openpyxl import load_workbook


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: export_formulas.py BOOK.xlsx", file=sys.stderr)
        return 2
    formulas = load_workbook(argv[0])
    values = load_workbook(argv[0], data_only=True)
    out = csv.writer(sys.stdout)
    out.writerow(["sheet", "cell", "formula", "value"])
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.value is None:
                    continue
                v = values[ws.title][c.coordinate].value
                out.writerow([ws.title, c.coordinate, c.value, "" if v is None else v])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
