#!/usr/bin/env python3
"""Write every table of a PDF as CSV files: tables/page<N>-<M>.csv."""
import argparse
import csv
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("pdf", help="the PDF to read")
    ap.add_argument("--out", default="tables", help="folder for the CSV files")
    args = ap.parse_args()
    if not os.path.isfile(args.pdf):
        print(f"error: {args.pdf}: no such file", file=sys.stderr)
        return 1
    import pdfplumber

    os.makedirs(args.out, exist_ok=True)
    with pdfplumber.open(args.pdf) as pdf:
        for n, page in enumerate(pdf.pages, 1):
            for m, table in enumerate(page.extract_tables(), 1):
                with open(os.path.join(args.out, f"page{n}-{m}.csv"), "w", newline="") as fh:
                    csv.writer(fh).writerows(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
