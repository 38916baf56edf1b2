"""A mkdocs hook: a page's link to a file of the repository outside docs/ (an example script,
deployments/README.md) works where the Markdown is read in the repository (GitHub, GitLab),
but the built site holds no such file. On the site it becomes the path in code; a link that
names no existing file is left alone, so `mkdocs build --strict` still fails on it."""

from __future__ import annotations

import re
from pathlib import Path

LINK = re.compile(r"\[([^\]]+)\]\((\.\./[^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown, page, config, files):
    docs = Path(config["docs_dir"]).resolve()
    here = (docs / page.file.src_path).parent

    def plain(m: re.Match) -> str:
        target = (here / m.group(2)).resolve()
        if target.is_relative_to(docs) or not target.exists():
            return m.group(0)
        label = m.group(1)
        return label if label.startswith("`") else f"`{label}`"

    return LINK.sub(plain, markdown)
