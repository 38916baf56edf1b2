"""Validate a skill folder and package it as <name>.skill (a zip archive) for distribution.

    python3 scripts/package_skill.py <skill-folder> [output-directory]
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quick_validate import validate

SKIP = {"__pycache__", ".DS_Store", ".git"}


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print("usage: package_skill.py <skill-folder> [output-directory]", file=sys.stderr)
        return 2
    folder = Path(argv[0]).resolve()
    out_dir = Path(argv[1]) if len(argv) == 2 else Path.cwd()
    problems = validate(folder)
    if problems:
        print("not packaged, the skill has problems:")
        for p in problems:
            print(f"  - {p}")
        return 1
    out_dir.mkdir(parents=True, exist_ok=True)
    archive = out_dir / f"{folder.name}.skill"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and not SKIP & set(p.parts):
                z.write(p, Path(folder.name) / p.relative_to(folder))
    print(f"packaged {archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
