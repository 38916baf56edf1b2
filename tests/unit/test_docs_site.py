"""The documentation site (issue 46, items 1 and 5): README.md's first screen and the pages of
docs/ that mkdocs.yml builds. The site builds with `mkdocs build --strict` (a nav entry to a
missing page, a page left out of the nav, a broken link or anchor fail it); every relative
link of README.md and the pages resolves where the Markdown is read in the repository too
(GitHub, GitLab: no site needed), anchors included; and every `aeval` command the pages show
in a console/bash/sh block parses with aeval's own argument parser (parsed, never run)."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from markdown.extensions.toc import slugify

from aeval.deployments.cli.main import build_parser
from tests.docs import DOCS, README, ROOT, documentation_pages, headings, prose_and_blocks

SHELL = {"bash", "sh", "shell", "console"}
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_-]*(\.\.\.)?|\.\.\.")
"""A value the reader fills in: `N`, `RUN_ID`, `PATH...`, `<run-id>` (read as `RUN-ID`)."""
SEPARATORS = {"&&", "||", "|", ";", "&", "|&", ";;", "(", ")"}


# -- the build --------------------------------------------------------------------------------

def nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in nav_pages(v)]
    return [p for item in nav for p in nav_pages(item)]


def test_every_page_is_in_the_nav_and_the_site_builds_strict(tmp_path):
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = nav_pages(config["nav"])
    assert sorted(pages) == sorted(p.name for p in DOCS.glob("*.md"))
    site = tmp_path / "site"
    # no -q: mkdocs 1.6 does not count the warnings it does not log, and passes
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for page in pages:
        name = page.removesuffix(".md")
        built = site / ("index.html" if name == "index" else f"{name}/index.html")
        assert built.is_file(), page


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The build is the check: a page linking to a page, an anchor or a repository file that
    is not there fails it; a link to a repository file outside docs/ that is there builds
    (the site shows its path)."""
    docs = tmp_path / "docs"
    (docs / "hooks").mkdir(parents=True)
    hook = "hooks/repository_links.py"
    (docs / hook).write_text((DOCS / hook).read_text())
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "script.json").write_text("{}\n")
    (docs / "index.md").write_text("# aeval\n\nThe [script](../examples/script.json).\n")
    config = (ROOT / "mkdocs.yml").read_text().split("\nnav:", 1)[0] + "\nnav:\n  - index.md\n"

    def build() -> subprocess.CompletedProcess:
        (tmp_path / "mkdocs.yml").write_text(config + "  - other.md\n" * (docs / "other.md")
                                             .exists())
        return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                               str(tmp_path / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})

    done = build()
    assert done.returncode == 0, done.stderr
    assert "The script (<code>examples/script.json</code>)." in (
        tmp_path / "site" / "index.html").read_text()
    (docs / "other.md").write_text("# Other\n\nSee [runtimes](runtimes.md), [the table]"
                                   "(index.md#exit-codes), [gone](../examples/gone.json).\n")
    done = build()
    assert done.returncode == 1
    for target in ("'runtimes.md'", "'#exit-codes'", "'../examples/gone.json'"):
        assert target in done.stderr, target


# -- links ------------------------------------------------------------------------------------

def anchors(text: str) -> set[str]:
    """The ids mkdocs gives the page's headings (its toc slugify; a repeated one gets _1 ...),
    which are GitHub's and GitLab's for these headings."""
    seen: dict[str, int] = {}
    out = set()
    for _, _, title in headings(text):
        plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).replace("`", "")
        slug = slugify(plain, "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}_{n}")
    return out


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Each relative link of ``page`` (outside code) whose file or anchor is not there."""
    text = page.read_text(encoding="utf-8")
    prose, _ = prose_and_blocks(text)
    broken = []
    for number, line in prose:
        line = re.sub(r"(`+).*?\1", "", line)  # inline code is not a link
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}:{number}: {target}"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(
                    dest.read_text(encoding="utf-8")):
                broken.append(f"{where}: no heading #{anchor} in {dest.name}")
    return broken


def test_every_relative_link_of_the_readme_and_the_pages_resolves():
    links = [m for p in documentation_pages() for m in LINK.findall(p.read_text())]
    assert len(links) > 20
    assert [b for p in documentation_pages() for b in broken_links(p)] == []


def test_the_readme_links_every_page():
    linked = {t.partition("#")[0] for t in LINK.findall(README.read_text())}
    assert {f"docs/{p.name}" for p in DOCS.glob("*.md")} <= linked


def test_a_missing_page_or_anchor_is_reported_with_its_line(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runtimes.md").write_text("# Runtimes\n\n## Case statuses\n")
    page = tmp_path / "docs" / "index.md"
    page.write_text("# aeval\n\n[ok](runtimes.md#case-statuses) [gone](security.md)\n"
                    "`[code](not-a-link.md)`\n\n[anchor](runtimes.md#exit-codes)\n")
    assert broken_links(page, tmp_path) == [
        "docs/index.md:3: security.md: no such file",
        "docs/index.md:6: runtimes.md#exit-codes: no heading #exit-codes in runtimes.md"]


# -- the commands -----------------------------------------------------------------------------

def shell_lines(block: str, lang: str) -> list[str]:
    """The commands of a block: continuation lines joined; in a console block only the
    lines after a `$ ` prompt (the rest is output)."""
    lines = block.replace("\\\n", " ").split("\n")
    if lang == "console":
        lines = [x.strip()[2:] for x in lines if x.strip().startswith("$ ")]
    return [x.strip() for x in lines if x.strip() and not x.strip().startswith("#")]


def synopsis(line: str) -> str:
    """A usage line as one invocation: `[--epochs 3]` given, the first of `a | b` or
    `auto|require|none`, a `<placeholder>` a word."""
    line = re.sub(r"<([^<>\s]+)>", lambda m: m.group(1).upper(), line)
    line = re.sub(r"(?<=\s)\d+(?=[<>])", "", line)  # 2>&1: a redirection, not an argument
    while m := re.search(r"\[([^\[\]]*)\]", line):
        line = line[:m.start()] + m.group(1).split(" | ")[0] + line[m.end():]
    return re.sub(r"(?<=\s)(-{0,2}[\w.-]+)(?:\|[\w.-]+)+(?=\s|$)", r"\1", line)


def aeval_arguments(command: list[str]) -> list[str] | None:
    """The arguments ``command`` gives aeval's parser, if it runs aeval: `aeval ...`,
    `.venv/bin/aeval ...`, `uvx [--from SPEC] aeval ...`, `uv [tool] run aeval ...`,
    `python -m aeval.deployments.cli ...`; None for any other program."""
    words = list(command)
    if words[:1] == ["uvx"]:
        words = words[3:] if words[1:2] == ["--from"] else words[1:]
    elif words[:2] in (["uv", "run"], ["uv", "tool"]):
        words = words[3:] if words[2:3] == ["run"] else words[2:]
    elif (words and re.fullmatch(r"(.*/)?python3?", words[0])
          and words[1:3] == ["-m", "aeval.deployments.cli"]):
        return words[3:]
    if words and (words[0] == "aeval" or words[0].endswith("/aeval")):
        return words[1:]
    return None


def aeval_invocations(line: str) -> list[list[str]]:
    """The arguments of each aeval command of a shell line (`aeval_arguments`); an
    environment assignment before it is not an argument."""
    lexer = shlex.shlex(synopsis(line), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    found, command = [], []
    for token in [*tokens, ";"]:
        if token in SEPARATORS or re.fullmatch(r"\d?[<>]+&?\d?", token):
            if command and (args := aeval_arguments(command)) is not None:
                found.append(args)
            command = []
        elif command or not re.fullmatch(r"[A-Za-z_]\w*=.*", token):
            command.append(token)
    return found


def strict_parser() -> argparse.ArgumentParser:
    """aeval's parser, taking no abbreviation (`--grader` for `--grader-model`): a page shows
    options whole. Everything else is as `aeval` parses."""
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for each in (parser, *commands.choices.values()):
        each.allow_abbrev = False
    return parser


def with_samples(parser: argparse.ArgumentParser, args: list[str]) -> list[str]:
    """``args`` with a placeholder given to a typed option (`--epochs N`, `--sandbox MODE`)
    replaced by a value of its type: 1, or the option's first choice."""
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    command = commands.choices.get(args[0]) if args else None
    if command is None:
        return args
    options = {o: a for a in command._actions for o in a.option_strings}
    out = list(args)
    for i in range(2, len(out)):
        action = options.get(out[i - 1])
        if action is not None and action.nargs != 0 and PLACEHOLDER.fullmatch(out[i]):
            if action.choices:
                out[i] = next(iter(action.choices))
            elif action.type in (int, float):
                out[i] = "1"
    return out


def parse_problem(args: list[str]) -> str | None:
    """What aeval's parser says about ``args`` (None: they parse). `--help` parses."""
    out, err = io.StringIO(), io.StringIO()
    parser = strict_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            parser.parse_args(with_samples(parser, args))
    except SystemExit as exc:
        if exc.code not in (0, None):
            return (err.getvalue().strip().splitlines() or ["exit 2"])[-1]
    return None


def command_problems(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    _, blocks = prose_and_blocks(text)
    problems = []
    for block in (b for b in blocks if b.lang in SHELL):
        for line in shell_lines(block.body, block.lang):
            for args in aeval_invocations(line):
                if problem := parse_problem(args):
                    problems.append(f"{page.name} (block at line {block.line}): "
                                    f"aeval {shlex.join(args)}: {problem}")
    return problems


def shown_invocations() -> list[list[str]]:
    return [args for p in documentation_pages()
            for b in prose_and_blocks(p.read_text(encoding="utf-8"))[1] if b.lang in SHELL
            for line in shell_lines(b.body, b.lang) for args in aeval_invocations(line)]


def test_every_aeval_command_the_pages_show_parses():
    shown = shown_invocations()
    # the quickstart's, the offline ones, compare, regrade, uplift, trigger-accuracy ...
    assert {a[0] for a in shown} >= {"run", "init", "compare", "regrade", "uplift",
                                     "trigger-accuracy"}
    assert [p for page in documentation_pages() for p in command_problems(page)] == []


@pytest.mark.parametrize(("line", "args"), [
    (".venv/bin/aeval run my-skills/word-count || echo \"exit $? (a skill defect)\"",
     ["run", "my-skills/word-count"]),
    ("OPENAI_API_KEY=placeholder .venv/bin/aeval run skills/x --model openai/m --no-grader",
     ["run", "skills/x", "--model", "openai/m", "--no-grader"]),
    ("aeval uplift PATH... --model M [--runtime builtin] [--grader-model G | --no-grader] "
     "[--sandbox auto|require|none] [-q | -v]",
     ["uplift", "PATH...", "--model", "M", "--runtime", "builtin", "--grader-model", "G",
      "--sandbox", "auto", "-q"]),
    ("aeval show <run-id> > summary.txt 2>&1", ["show", "RUN-ID"]),
    ("aeval validate skills/ 2>/dev/null", ["validate", "skills/"]),
    ("python3 -m venv .venv && .venv/bin/pip install -q uv && .venv/bin/aeval run examples",
     ["run", "examples"]),
    ("aeval schema eval-config | head -1", ["schema", "eval-config"]),
    ("grep -c aeval run.log", []),
    ("uvx --from . aeval run examples/marketplace", ["run", "examples/marketplace"]),
    ("uv run aeval validate skills/", ["validate", "skills/"]),
    (".venv/bin/python -m aeval.deployments.cli show", ["show"]),
    ("python -m aeval.testing.model_server script.json --port 8123 &", []),
])
def test_an_aeval_command_is_found_in_a_shell_line(line, args):
    assert aeval_invocations(line) == ([args] if args else [])


@pytest.mark.parametrize(("page", "problem"), [
    ("```bash\n.venv/bin/aeval run my-skills/word-count --modle openai/gpt-4.1\n```\n",
     "unrecognized arguments: --modle"),
    ("```console\n$ aeval rnu examples/marketplace\nexit 1\n```\n", "invalid choice: 'rnu'"),
    ("```sh\naeval uplift skills/x --model M [--sandbox strict]\n```\n",
     "invalid choice: 'strict'"),
    ("```bash\naeval run . --changed-since origin/main [--epochs three]\n```\n",
     "invalid int value: 'three'"),
    ("```bash\naeval run examples/marketplace --no-grade\n```\n",  # --no-grader, abbreviated
     "unrecognized arguments: --no-grade"),
    ("```bash\nOPENAI_API_KEY=... aeval compare skills/x \\\n    --runtime builtin=m "
     "--api-bsae http://127.0.0.1:8123/v1\n```\n", "unrecognized arguments: --api-bsae"),
])
def test_a_misspelled_command_or_option_on_a_page_fails(tmp_path, page, problem):
    path = tmp_path / "page.md"
    path.write_text("# A page\n\n" + page)
    (found,) = command_problems(path)
    assert found.startswith("page.md (block at line 4): aeval ") and problem in found, found


def reference_problems(text: str) -> list[str]:
    """The command reference (an unlabeled block of `aeval COMMAND ...` lines, each option
    indented under its command): each synopsis parses, and each option listed is one its
    command has."""
    parser = strict_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    problems = []
    for block in prose_and_blocks(text)[1]:
        if block.lang or not block.body.startswith("aeval "):
            continue
        command = None
        for line in block.body.split("\n"):
            if line.startswith("aeval "):
                usage = re.split(r"\s{2,}", line)[0]
                for args in aeval_invocations(usage):
                    if problem := parse_problem(args):
                        problems.append(f"{usage}: {problem}")
                command = commands.choices.get(line.split()[1])
            elif (m := re.match(r"^ {4}(-[\w-]+)( / (-[\w-]+))?", line)) and command:
                options = {o for a in command._actions for o in a.option_strings}
                problems += [f"aeval {command.prog.split()[-1]}: no option {o}"
                             for o in (m.group(1), m.group(3)) if o and o not in options]
    return problems


def test_the_command_reference_lists_only_what_the_parser_has():
    text = (DOCS / "command-line.md").read_text(encoding="utf-8")
    assert text.count("\naeval ") > 10
    assert reference_problems(text) == []
    # a renamed option, a command that is gone, a subcommand's misspelled option
    found = reference_problems("```\naeval run [PATH...]  evaluate\n    --modle M   model\n"
                               "aeval lint PATH...  gone\n"
                               "aeval post RUN --forge github [--pr N] [--repo-url R]\n"
                               "aeval regrade RUN --grader G\n```\n")
    expected = [("aeval run: no option --modle", ""),
                ("aeval lint PATH...: ", "invalid choice: 'lint'"),
                ("aeval post RUN --forge github [--pr N] [--repo-url R]: ",
                 "unrecognized arguments: --repo-url R"),
                ("aeval regrade RUN --grader G: ", "required: --grader-model")]  # no abbreviation
    assert len(found) == len(expected), found
    for problem, (start, fragment) in zip(found, expected, strict=True):
        assert problem.startswith(start) and fragment in problem, problem
