"""Unpack an Office file (.docx, .pptx, .xlsx) into a folder and pretty-print its XML parts,
so that they can be read and edited as text.

    python3 scripts/office/unpack.py document.docx unpacked/
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from xml.dom import minidom


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: unpack.py <office_file> <output_dir>", file=sys.stderr)
        return 2
    src, out = Path(argv[0]), Path(argv[1])
    if not zipfile.is_zipfile(src):
        print(f"error: {src} is not an Office file (not a zip archive)", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(src) as z:
        for info in z.infolist():
            target = (out / info.filename).resolve()
            if not target.is_relative_to(out.resolve()):
                print(f"error: {info.filename} points outside {out}", file=sys.stderr)
                return 1
            data = z.read(info)
            if info.filename.endswith((".xml", ".rels")):
                data = minidom.parseString(data).toprettyxml(indent="  ", encoding="utf-8")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    parts = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"unpacked {parts} parts of {src.name} into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
