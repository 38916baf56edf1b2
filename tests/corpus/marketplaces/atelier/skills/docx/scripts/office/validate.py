"""Check that an Office file (or an unpacked folder) has its required parts and that every
XML part is well-formed.

    python3 scripts/office/validate.py document.docx
    python3 scripts/office/validate.py unpacked/
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

REQUIRED = {
    ".docx": ["[Content_Types].xml", "_rels/.rels", "word/document.xml"],
    ".pptx": ["[Content_Types].xml", "_rels/.rels", "ppt/presentation.xml"],
    ".xlsx": ["[Content_Types].xml", "_rels/.rels", "xl/workbook.xml"],
}


def parts_of(path: Path) -> dict[str, bytes]:
    if path.is_dir():
        return {p.relative_to(path).as_posix(): p.read_bytes()
                for p in path.rglob("*") if p.is_file()}
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def kind_of(parts: dict[str, bytes]) -> str:
    for ext, required in REQUIRED.items():
        if required[-1] in parts:
            return ext
    return ".docx"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: validate.py <office_file_or_dir>", file=sys.stderr)
        return 2
    path = Path(argv[0])
    if not path.exists():
        print(f"error: {path} does not exist", file=sys.stderr)
        return 1
    parts = parts_of(path)
    problems = [f"missing part {name}" for name in REQUIRED[kind_of(parts)]
                if name not in parts]
    for name, data in parts.items():
        if name.endswith((".xml", ".rels")):
            try:
                ElementTree.fromstring(data)
            except ElementTree.ParseError as exc:
                problems.append(f"{name}: {exc}")
    for p in problems:
        print(p)
    print(f"{path}: {len(parts)} parts, {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
