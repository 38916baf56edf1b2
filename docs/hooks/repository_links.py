"""A mkdocs hook: a page's link to a file of the repository outside docs/ (an example script,
deployments/README.md) works where the Markdown is read in the repository (GitHub, GitLab),
but the built site holds no such file. On the site it becomes the file's path in code (after
the link's text when that says something else); a link that names no existing file is left
alone, so `mkdocs build --strict` still fails on it."""

from __future__ import annotations

import re
from pathlib import Path

LINK = re.compile(r"\[([^\]]+)\]\((\.\./[^)\s#]+)(#[^)\s]*)?\)")


def on_page_markdown(markdown, page, config, files):
    docs = Path(config["docs_dir"]).resolve()
    root = Path(config["config_file_path"]).resolve().parent
    here = (docs / page.file.src_path).parent

    def plain(m: re.Match) -> str:
        target = (here / m.group(2)).resolve()
        if target.is_relative_to(docs) or not target.is_relative_to(root) \
                or not target.exists():
            return m.group(0)
        path = target.relative_to(root).as_posix()
        label = m.group(1)
        return f"`{path}`" if label.strip("`") == path else f"{label} (`{path}`)"

    return LINK.sub(plain, markdown)
