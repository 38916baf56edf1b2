"""The README a newcomer reads first and the documentation pages behind it (docs/): the
exit-code table is the one `--help` shows (both from `aeval.exit_codes`), the test command is
the one CI runs, the quickstart's first command is the README's, the glossary names the
project's jargon, the paper is named once on each, and links to sections resolve."""

from __future__ import annotations

import importlib.util
import re

from aeval.exit_codes import RUN_EXIT_CODES, epilog, markdown_table
from tests.conftest import ROOT
from tests.docs import DOCS, documentation_pages, documentation_text, documented_section

README = (ROOT / "README.md").read_text(encoding="utf-8")
QUICKSTART = (DOCS / "quickstart.md").read_text(encoding="utf-8")
PAPER = "AEVAL: From Anecdotal to\nDeterministic Testing for Agentic Skill Workflows"


def between(text: str, begin: str, end: str) -> str:
    start = text.index(begin)
    start = text.index("\n", start) + 1
    return text[start:text.index(end, start)]


def test_the_exit_code_table_is_the_generated_one():
    table = between(documentation_text(), "<!-- exit codes: generated",
                    "<!-- exit codes: end -->")
    assert table == markdown_table(), (
        "the documented exit-code table differs from aeval/exit_codes.py; paste the output of "
        "`python -m aeval.exit_codes`:\n" + markdown_table())


def test_help_and_readme_list_the_codes_in_the_gates_order():
    order = [e.code for e in RUN_EXIT_CODES]
    assert order == [1, 2, 4, 3, 5, 0]
    assert [int(c) for c in re.findall(r"^\| (\d) \|", markdown_table(), re.M)] == order
    assert [int(c) for c in re.findall(r"^  (\d)  ", epilog(), re.M)] == order


def test_the_test_command_is_the_one_ci_runs():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    test_command = next(c for c in commands if "python -m pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text()


def install_time():
    """benchmarks/install_time.py, whose table of install commands is the README's."""
    spec = importlib.util.spec_from_file_location("install_time",
                                                  ROOT / "benchmarks" / "install_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_quickstart_runs_the_example_without_a_key():
    five = between(README, "## Five minutes", "\n## ")
    first = re.search(r"```bash\n(.*?)\n```", five, re.S).group(1)
    assert first == ("python3 -m venv .venv && .venv/bin/pip install -q uv && "
                     ".venv/bin/uv pip install -e . && "
                     ".venv/bin/aeval run examples/marketplace")
    # what benchmarks/install_time.py measures is the README's install, by uv and by the pip
    # alternative it offers; the figures it stated are there, each with the load it ran under
    bench = install_time()
    assert first == f"{bench.QUICKSTART['uv'].format(target='.')} && {bench.RUN}"
    pip = f"{bench.QUICKSTART['pip'].format(target='.')} && {bench.RUN}"
    assert f"`{pip}`" in five
    step1 = between(five, "### 1.", "### 2.")
    assert "`benchmarks/install_time.py`" in step1
    for installer in ("uv", "pip"):
        assert re.search(rf"{installer}[^.]*? \d+ s cold,[^.]*? \d+ s warm", step1), installer
    assert re.search(r"load\s+(average\s+)?\d+(\.\d+)?", step1)
    # the install holds no model client; the way to get one is named
    assert "`models` extra" in step1
    # the five-minute path comes first, the pages of the deep sections after it
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings == ["Five minutes to a first result", "Run the tests", "Documentation"]
    assert len(README.splitlines()) <= 200


def test_the_quickstart_page_starts_as_the_readme_does():
    """docs/quickstart.md's five-minute path (tests/e2e/test_readme_five_minutes.py runs it)
    begins with the README's first command, step 1 and the output of step 2, verbatim."""
    five = between(QUICKSTART, "<!-- five-minute path:", "<!-- five-minute path: end -->")
    first = re.search(r"```bash\n(.*?)\n```", five, re.S).group(1)
    assert first == re.search(r"```bash\n(.*?)\n```", README, re.S).group(1)
    assert between(five, "## 1.", "## 2.") == between(README, "### 1.", "### 2.")
    output = re.compile(r"^```\n(aeval run .*?)^```$", re.S | re.M)
    assert output.search(five).group(1) == output.search(README).group(1)


def test_the_glossary_explains_the_jargon():
    glossary = documented_section("Glossary")
    terms = [m.group(1) for m in re.finditer(r"^\| ([^|]+?) \|", glossary, re.M)]
    for term in ("Δ (delta)", "S0–S3", "LV1 / LV2", "tiers", "first attempt", "terminal",
                 "untested", "ungraded"):
        assert term in terms, term


def test_the_paper_is_named_once_by_its_title():
    """Once on the README, once on the site (the quickstart's step 1, which it shares)."""
    assert README.count(PAPER) == 1
    assert sum(p.read_text().count(PAPER) for p in DOCS.glob("*.md")) == 1


def slug(heading: str) -> str:
    """GitHub's and GitLab's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_every_link_to_a_section_resolves_on_github_and_gitlab():
    """Their anchors, as a README or a page is read in the repository (the site's:
    tests/unit/test_docs_site.py)."""
    links = []
    for page in documentation_pages():
        for path, anchor in re.findall(r"\]\(([\w./-]*\.md)?#([^)]+)\)", page.read_text()):
            target = (page.parent / path) if path else page
            links.append((page.name, path, anchor, target))
    assert len(links) > 5
    assert [(name, path, anchor) for name, path, anchor, target in links
            if anchor not in {slug(h) for h in re.findall(r"^#{1,4} (.+)$",
                                                         target.read_text(), re.M)}] == []
