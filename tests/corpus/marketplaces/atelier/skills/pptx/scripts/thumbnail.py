"""Render a grid of slide thumbnails for a .pptx file (needs LibreOffice and poppler).

    python3 scripts/thumbnail.py deck.pptx [--cols 4]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(prog="thumbnail.py", description=__doc__.splitlines()[0])
    p.add_argument("deck")
    p.add_argument("--cols", type=int, default=4)
    args = p.parse_args()
    deck = Path(args.deck)
    if not deck.is_file():
        print(f"error: {deck} not found", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["soffice", "--headless", "--convert-to", "pdf", "--outdir", tmp,
                        str(deck)], check=True, capture_output=True)
        pdf = Path(tmp) / (deck.stem + ".pdf")
        subprocess.run(["pdftoppm", "-jpeg", "-r", "50", str(pdf), str(Path(tmp) / "slide")],
                       check=True)
        pages = sorted(Path(tmp).glob("slide-*.jpg"))
        out = deck.with_name(deck.stem + "-thumbnails")
        out.mkdir(exist_ok=True)
        for i, page in enumerate(pages, 1):
            page.replace(out / f"slide-{i:02d}.jpg")
    print(f"{len(pages)} thumbnails in {out} ({args.cols} per row when tiled)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
