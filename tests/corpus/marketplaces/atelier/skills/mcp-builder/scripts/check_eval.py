"""Check an MCP evaluation file before running it: well-formed XML, 10 question/answer
pairs, every answer short and verifiable, no duplicate questions.

    python3 scripts/check_eval.py evaluation.xml [--min-pairs 10]
"""

from __future__ import annotations

import argparse
import sys
from xml.etree import ElementTree


def main() -> int:
    p = argparse.ArgumentParser(prog="check_eval.py", description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("--min-pairs", type=int, default=10)
    args = p.parse_args()
    try:
        root = ElementTree.parse(args.file).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        print(f"error: {args.file}: {exc}", file=sys.stderr)
        return 1
    pairs = root.findall("qa_pair")
    problems = []
    if root.tag != "evaluation":
        problems.append(f"root element is <{root.tag}>, expected <evaluation>")
    if len(pairs) < args.min_pairs:
        problems.append(f"{len(pairs)} qa_pair(s), at least {args.min_pairs} expected")
    seen = set()
    for i, pair in enumerate(pairs, 1):
        q = (pair.findtext("question") or "").strip()
        a = (pair.findtext("answer") or "").strip()
        if not q or not a:
            problems.append(f"pair {i}: empty question or answer")
        if len(a.split()) > 8:
            problems.append(f"pair {i}: answer has {len(a.split())} words; keep it to one "
                            "verifiable value")
        if q in seen:
            problems.append(f"pair {i}: duplicate question")
        seen.add(q)
    for prob in problems:
        print(prob)
    print(f"{args.file}: {len(pairs)} pairs, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
