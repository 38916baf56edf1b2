"""Recalculate every formula of a workbook with LibreOffice and save the cached values, so
that tools reading values (openpyxl data_only, pandas) see the results.

    python3 scripts/recalc.py book.xlsx [timeout_seconds]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print("usage: recalc.py BOOK.xlsx [timeout_seconds]", file=sys.stderr)
        return 2
    book = Path(argv[0])
    timeout = int(argv[1]) if len(argv) == 2 else 30
    if not book.is_file():
        print(f"error: {book} not found", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["soffice", "--headless", "--calc", "--convert-to", "xlsx", "--outdir",
                        tmp, str(book)], check=True, timeout=timeout, capture_output=True)
        shutil.move(str(Path(tmp) / book.name), book)
    print(f"recalculated {book}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
