"""WCAG 2.1 contrast ratio of two colors, and which levels it meets.

    python3 scripts/contrast.py "#1F2A44" "#F7F4EF"
    python3 scripts/contrast.py ink paper          # names from assets/palette.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PALETTE = Path(__file__).resolve().parent.parent / "assets" / "palette.json"


def resolve(color: str) -> str:
    if color.startswith("#"):
        return color
    colors = json.loads(PALETTE.read_text())["colors"]
    if color not in colors:
        sys.exit(f"error: {color!r} is neither #RRGGBB nor a palette color "
                 f"({', '.join(colors)})")
    return colors[color]


def luminance(hex_color: str) -> float:
    h = hex_color.lstrip("#")
    if len(h) != 6:
        sys.exit(f"error: {hex_color!r} is not #RRGGBB")
    channels = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: contrast.py FOREGROUND BACKGROUND", file=sys.stderr)
        return 2
    fg, bg = resolve(argv[0]), resolve(argv[1])
    a, b = sorted((luminance(fg), luminance(bg)), reverse=True)
    ratio = (a + 0.05) / (b + 0.05)
    levels = [name for name, need in (("AA large", 3.0), ("AA", 4.5), ("AAA", 7.0))
              if ratio >= need]
    print(f"{fg} on {bg}: {ratio:.2f}:1  {', '.join(levels) or 'fails AA large'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
