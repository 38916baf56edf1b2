"""Pack an unpacked Office folder back into a file, undoing the pretty-printing of unpack.py.

    python3 scripts/office/pack.py unpacked/ output.docx
"""

from __future__ import annotations

import re
import sys
import zipfile
from pathlib import Path

_BETWEEN_TAGS = re.compile(rb">\s+<")


def condense(data: bytes) -> bytes:
    """Drop the whitespace unpack.py added between tags (text inside w:t is kept)."""
    return _BETWEEN_TAGS.sub(b"><", data.strip())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: pack.py <input_dir> <office_file>", file=sys.stderr)
        return 2
    src, out = Path(argv[0]), Path(argv[1])
    if not (src / "[Content_Types].xml").is_file():
        print(f"error: {src} has no [Content_Types].xml: not an unpacked Office file",
              file=sys.stderr)
        return 1
    files = sorted(p for p in src.rglob("*") if p.is_file())
    # [Content_Types].xml goes first, as Office writes it
    files.sort(key=lambda p: p.name != "[Content_Types].xml")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for p in files:
            data = p.read_bytes()
            if p.suffix in (".xml", ".rels"):
                data = condense(data)
            z.writestr(p.relative_to(src).as_posix(), data)
    print(f"packed {len(files)} parts into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
