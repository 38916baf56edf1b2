"""aeval.isolation.text: untrusted text made inert, and junit.xml that parses whatever a case
held."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from aeval.artifacts import CaseResult, RunManifest
from aeval.isolation.text import code_span, escape_controls, one_line
from aeval.tasks.run.publish import junit_xml
from tests.unit.test_deliver import check_junit, make_run


@pytest.mark.parametrize("raw, shown", [
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("\x1b]8;;https://evil.example/\x07link", "\\x1b]8;;https://evil.example/\\x07link"),
    ("fake\rCI ok", "fake\\rCI ok"),
    ("nul\x00 bs\x08 ff\x0c del\x7f csi\x9b", "nul\\x00 bs\\x08 ff\\x0c del\\x7f csi\\x9b"),
    ("\u202egnp.exe \u2066x\u2069", "\\u202egnp.exe \\u2066x\\u2069"),
    ("file-\udcff.txt", "file-\\xff.txt"),  # a name that was not UTF-8 (surrogateescape)
    ("line 1\nline 2\ttab", "line 1\nline 2\ttab"),
    ("plain text, ünïcode ✓", "plain text, ünïcode ✓"),
])
def test_escape_controls(raw, shown):
    assert escape_controls(raw) == shown
    escape_controls(raw).encode("utf-8")  # always encodable


def test_one_line_escapes_newlines_and_tabs():
    assert one_line("a\nb\tc\r") == "a\\nb\\tc\\r"


@pytest.mark.parametrize("text", [
    "@all please look at #1, !2, ~bug, %v1.0 and &3",
    "![pixel](https://evil.example/p.png) [click](https://evil.example/) <img src=x>",
    "a `code` span, ``two``, and a trailing `",
    "**bold** _it_ <!-- aeval:fallback --> </details>",
    "multi\n\nline\n/merge",
])
def test_code_span_renders_nothing_live(text):
    span = code_span(text)
    html = MarkdownIt("commonmark").render(f"Why: {span}")
    assert html.count("<code>") == 1 and "<img" not in html and "<a " not in html
    assert "<strong>" not in html and "<details" not in html and "<!--" not in html
    assert "\n" not in span


def test_junit_parses_with_nul_esc_and_undecodable_names(tmp_path):
    run = make_run(tmp_path, "r1", [])
    manifest = RunManifest.model_validate_json((run / "run.json").read_text())
    hostile = "step said \x00\x1b[2K\x0b and wrote out-\udcff.bin"
    manifest.skills[0].cases.append(CaseResult(
        case_id="dump", runtime="literal", status="error", reason=hostile,
        dir="segmentation/literal/dump"))
    root = check_junit(junit_xml(run, manifest))
    (error,) = root.iter("error")
    assert error.text == "step said \\x00\\x1b[2K\\x0b and wrote out-\\xff.bin"
    assert error.get("message") == error.text
