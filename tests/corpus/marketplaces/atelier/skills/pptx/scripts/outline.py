"""Turn a Markdown outline into a slide plan (JSON): one slide per `##` heading, its bullets,
and a layout suggestion, so that a deck can be built slide by slide.

    python3 scripts/outline.py outline.md [--max-bullets 6] [--out plan.json]
"""

from __future__ import annotations

import argparse
import json
import sys


def parse(text: str) -> tuple[str, list[dict]]:
    title, slides = "", []
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("# ") and not title:
            title = line[2:].strip()
        elif line.startswith("## "):
            slides.append({"title": line[3:].strip(), "bullets": [], "notes": []})
        elif line.lstrip().startswith(("- ", "* ")) and slides:
            slides[-1]["bullets"].append(line.lstrip()[2:].strip())
        elif line.startswith("> ") and slides:
            slides[-1]["notes"].append(line[2:].strip())
    return title, slides


def layout(slide: dict) -> str:
    n = len(slide["bullets"])
    if n == 0:
        return "section-header"
    if n <= 3:
        return "title-and-content"
    return "two-content" if n > 5 else "title-and-content"


def main() -> int:
    p = argparse.ArgumentParser(prog="outline.py", description=__doc__.splitlines()[0])
    p.add_argument("outline", help="Markdown file: '# Deck title', '## Slide', '- bullet'")
    p.add_argument("--max-bullets", type=int, default=6,
                   help="split slides with more bullets than this (default: 6)")
    p.add_argument("--out", help="write the plan here instead of printing it")
    args = p.parse_args()
    with open(args.outline, encoding="utf-8") as f:
        title, slides = parse(f.read())
    if not slides:
        print(f"error: {args.outline} has no '## ' slide headings", file=sys.stderr)
        return 1
    plan = []
    for s in slides:
        chunks = [s["bullets"][i:i + args.max_bullets]
                  for i in range(0, len(s["bullets"]), args.max_bullets)] or [[]]
        for k, chunk in enumerate(chunks):
            part = {"title": s["title"] + (f" ({k + 1}/{len(chunks)})" if len(chunks) > 1 else ""),
                    "bullets": chunk, "notes": s["notes"] if k == 0 else []}
            part["layout"] = layout(part)
            plan.append(part)
    doc = {"title": title, "slides": plan}
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        print(f"{len(plan)} slides -> {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
