"""Reading SKILL.md as a reader does (aeval.skill.markdown): fences inside list items, spans,
links."""

from __future__ import annotations

from textwrap import dedent

from aeval.skill.markdown import inline_code, links, parse

DOC = dedent("""\
    # Converting slides

    1. Install the converter:

       ```bash
       pip install python-pptx
       ```

    2. Convert, from the skill folder:

        ```sh
        python3 scripts/pptx_to_md.py deck.pptx --out notes.md
          --verbose
        ```

    Don't do this:

    ```bash
    soffice --convert-to pdf *.pptx
    ```

    ~~~
    tree output, not a command
    ~~~

    Use `scripts/pptx_to_md.py` or ``python3 -c 'print("`")'``; see
    [the API notes](references/api.md#slides "API") and ![logo](assets/logo.png).
    `[not a link](nope.md)`
    [api]: references/api.md

    ```bash
    this fence is never closed
    """)


def test_fences_in_list_items_are_read_with_their_own_lines_and_dedented():
    fences, _ = parse(DOC, line_offset=4)
    shell = [(f.line, f.lang, f.code) for f in fences]
    assert shell[0] == (9, "bash", "pip install python-pptx")
    assert shell[1] == (15, "sh", "python3 scripts/pptx_to_md.py deck.pptx --out notes.md\n"
                                  "  --verbose")
    assert shell[3][1] == "" and shell[3][2] == "tree output, not a command"


def test_an_unclosed_fence_is_not_a_block_and_its_text_stays_prose():
    fences, prose = parse(DOC)
    assert not any("never closed" in f.code for f in fences)
    assert any("never closed" in text for _, text in prose)


def test_the_prose_before_a_fence_is_only_what_follows_the_previous_fence():
    fences, _ = parse(DOC)
    assert fences[2].before == "Don't do this:"
    assert "Don't" not in fences[3].before


def test_inline_spans_and_links_come_from_prose_only():
    _, prose = parse(DOC)
    spans = [s.text for s in inline_code(prose)]
    assert "scripts/pptx_to_md.py" in spans
    assert """python3 -c 'print("`")'""" in spans
    targets = [link.text for link in links(prose)]
    assert targets == ["references/api.md#slides", "assets/logo.png", "references/api.md"]
    assert "nope.md" not in " ".join(targets)
