"""Summarize one sheet of a workbook as Markdown: row count and the total of each numeric
column."""
import argparse
import sys

import openpyxl


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("workbook")
    ap.add_argument("--sheet", required=True)
    args = ap.parse_args()
    ws = openpyxl.load_workbook(args.workbook, data_only=True)[args.sheet]
    rows = list(ws.iter_rows(values_only=True))
    header, body = rows[0], rows[1:]
    print(f"# {args.sheet}\n\n{len(body)} rows\n")
    for i, name in enumerate(header):
        values = [r[i] for r in body if isinstance(r[i], (int, float))]
        if values:
            print(f"- {name}: total {sum(values)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
