"""SKILL.md's readers are linear in the text (issue 33): the pathological lines that made the
old patterns backtrack or the fence scan run to the end of the file for every unclosed fence
take about 10x the time at 10x the size (asserted generously: under 30x), and on real
markdown (every SKILL.md of this repository, and the shapes test_markdown covers) the
scanners give exactly the spans the old regular expressions gave."""

from __future__ import annotations

import gc
import re
import time
from pathlib import Path

import pytest

from aeval.skill import markdown

ROOT = Path(__file__).resolve().parents[2]


# ---- the readers before issue 33, kept as the oracle for ordinary markdown ------------------
_OLD_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
_OLD_LINK = re.compile(r"!?\[(?P<text>[^\]\n]*)\]\(\s*(?P<target><[^>\n]*>|[^\s)]+)"
                       r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")


def old_fences(text: str) -> list[tuple[int, str, str, int]]:
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _OLD_OPEN.match(lines[i])
        if m:
            char, size = m["fence"][0], len(m["fence"])
            close = re.compile(rf"^[ \t]*{re.escape(char)}{{{size},}}[ \t]*$")
            end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), None)
            if end is not None:
                body = "\n".join(markdown._dedent(ln, len(m["indent"]))
                                 for ln in lines[i + 1:end])
                lang = (m["info"].strip().split() or [""])[0].lower().strip("{}.")
                out.append((i + 1, lang, body, len(m["indent"].expandtabs(4))))
                i = end + 1
                continue
        i += 1
    return out


def old_inline(text: str) -> list[str]:
    out, i = [], 0
    while True:
        start = text.find("`", i)
        if start < 0:
            break
        rest = text[start:]
        run = len(rest) - len(rest.lstrip("`"))
        ticks = "`" * run
        end = text.find(ticks, start + run)
        while end >= 0 and (text[end + run:end + run + 1] == "`" or text[end - 1:end] == "`"):
            nxt = end + run
            while nxt < len(text) and text[nxt] == "`":
                nxt += 1
            end = text.find(ticks, nxt)
        if end < 0:
            break
        content = text[start + run:end]
        if content.strip():
            out.append(content.strip() if run > 1 else content)
        i = end + run
    return out


def old_links(text: str) -> list[str]:
    plain = re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), text)
    return [m["target"].strip("<>") for m in _OLD_LINK.finditer(plain)]


SHAPES = [
    "Run `python scripts/run.py --in data/x.csv` then ``a `b` c`` and ```` ``x`` ````.",
    "See [the guide](references/guide.md), ![chart](assets/chart.png \"Chart\") and "
    "[api](<docs/api ref.md>) or [t](x 'title'), [n](app/[slug]/page.tsx).",
    "`[not a link](x.md)` but [a link](y.md); [nested [x]](z.md) [a [b](c.md)",
    "unmatched ` tick then `code` and [broken](no close and [ok](ok.md)",
    "- item with `scripts/a.sh` and [ref](references/r.md#part)",
]


def real_skill_mds() -> list[Path]:
    return sorted(p for p in ROOT.rglob("SKILL.md") if ".venv" not in p.parts)


@pytest.mark.parametrize("path", real_skill_mds(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_scanners_give_the_old_spans_on_real_skill_files(path):
    text = path.read_text(encoding="utf-8", errors="replace")
    fences, prose = markdown.parse(text)
    assert [(f.line, f.lang, f.code, f.indent) for f in fences] == old_fences(text)
    assert [s.text for s in markdown.inline_code(prose)] == \
        [t for _, line in prose for t in old_inline(line)]
    assert [s.text for s in markdown.links(prose)] == \
        [t for _, line in prose for t in old_links(line)]


@pytest.mark.parametrize("line", SHAPES)
def test_the_scanners_give_the_old_spans_on_ordinary_lines(line):
    prose = [(1, line)]
    assert [s.text for s in markdown.inline_code(prose)] == old_inline(line)
    assert [s.text for s in markdown.links(prose)] == old_links(line)


def timed(text: str) -> float:
    """The readers' time on ``text``, the collector off (its pauses are not the readers')."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        _, prose = markdown.parse(text)
        markdown.inline_code(prose)
        markdown.links(prose)
        return time.perf_counter() - start
    finally:
        gc.enable()


PATHOLOGICAL = {
    "a line of backticks": lambda n: "`" * n,
    "backticks then a letter": lambda n: "`" * n + "x",
    "tick runs of growing length":
        lambda n: " ".join("`" * k for k in range(1, 200)) * (n // 20000 + 1),
    "a fence then blanks then a tick": lambda n: "```" + " " * n + "`",
    "open brackets": lambda n: "[" * n,
    "unclosed links": lambda n: "[a](x" * (n // 5),
    "unclosed bracketed links": lambda n: "[a](<x" * (n // 6),
    "a link destination then blanks": lambda n: "[a](x" + " " * n + "y",
    "unclosed fences": lambda n: "```bash\necho hi\n" * (n // 16),
    "an inline span per word": lambda n: "`a` " * (n // 4),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", PATHOLOGICAL)
def test_pathological_markdown_takes_linear_time(name):
    make = PATHOLOGICAL[name]
    small, large = make(20_000), make(200_000)
    t_small = min(timed(small) for _ in range(3))
    t_large = min(timed(large) for _ in range(3))
    # 10x the input: linear is ~10x; quadratic would be ~100x. Floors keep noise out.
    assert t_large < 30 * max(t_small, 0.002), (name, t_small, t_large)
