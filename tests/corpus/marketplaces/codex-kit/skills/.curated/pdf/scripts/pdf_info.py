"""Quick facts about a PDF without any dependency: page count, metadata, and the text of
simple (uncompressed) content streams. For anything else use pypdf or poppler.

    python3 scripts/pdf_info.py pages file.pdf
    python3 scripts/pdf_info.py meta file.pdf
    python3 scripts/pdf_info.py text file.pdf
"""

from __future__ import annotations

import re
import sys

PAGE = re.compile(rb"/Type\s*/Page(?![s\w])")
INFO_KEY = re.compile(rb"/(Title|Author|Subject|Producer|Creator|CreationDate)\s*\(([^)]*)\)")
TEXT = re.compile(rb"\(((?:[^()\\]|\\.)*)\)\s*Tj")


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(b"%PDF-"):
        sys.exit(f"error: {path} is not a PDF (no %PDF- header)")
    return data


def pages(data: bytes) -> None:
    print(f"pages: {len(PAGE.findall(data))}")


def meta(data: bytes) -> None:
    found = INFO_KEY.findall(data)
    if not found:
        print("no document information dictionary")
    for key, value in found:
        print(f"{key.decode()}: {value.decode('latin-1')}")


def text(data: bytes) -> None:
    parts = [m.decode("latin-1") for m in TEXT.findall(data)]
    if not parts:
        print("no simple text found (compressed streams need pypdf or pdftotext)")
    print("\n".join(parts))


def main(argv: list[str]) -> int:
    commands = {"pages": pages, "meta": meta, "text": text}
    if len(argv) != 2:
        print(f"usage: pdf_info.py {{{','.join(commands)}}} FILE.pdf", file=sys.stderr)
        return 2
    command, path = argv
    if command not in commands:
        print(f"pdf_info.py: unknown command '{command}'; use one of: {', '.join(commands)}",
              file=sys.stderr)
        return 2
    commands[command](read(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
