"""The doc-test tier at the runtime level: a marketplace built here, examined by the generic
tier, each skill installed in a real workspace and its SKILL.md blocks run by
`LiteralRuntime.run_doc_test` with real processes.

The illustrative skills (placeholders, a missing host tool, a fragment needing earlier
context, a block fed by a skipped block, an input file the reader supplies) must give no
`failed`; the skills with a real defect (a documented action the runner does not know, an
undocumented choice, a script SKILL.md names that the skill lacks) must fail with the skill's
own error as evidence.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.adapters.runtimes.literal import LiteralRuntime
from aeval.errors import RuntimeUnavailable
from aeval.events import MessageEvent, ToolCallEvent, ToolResultEvent, read_events
from aeval.isolation.redact import Redactor
from aeval.isolation.shell import base_env
from aeval.isolation.workspace import prepare_workspace
from aeval.runtime.protocol import EventRecorder, ExecutionRequest, Limits
from aeval.skill.shell_blocks import doc_blocks
from aeval.tasks.run.examine import examine

SKILLS: dict[str, dict[str, str]] = {
    # Placeholder block skipped; a host tool the skill tells users to install is missing.
    "pdf-tools": {
        "SKILL.md": """\
            ---
            name: pdf-tools
            description: Extract text and tables from PDF files.
            ---
            # PDF tools

            Install poppler first (`apt install poppler-utils`).

            ```bash
            python scripts/extract.py <input.pdf> --pages 1-3
            ```

            For plain text, poppler is fastest:

            ```bash
            pdftotext -layout reference/sample.pdf /tmp/sample.txt
            ```
            """,
        "scripts/extract.py": "import sys\nprint('extracting', sys.argv[1:])\n",
        "reference/sample.pdf": "%PDF-1.4 not really a pdf\n",
    },
    # A skill script that imports a module the reader must install.
    "docx-to-markdown": {
        "SKILL.md": """\
            ---
            name: docx-to-markdown
            description: Convert Word documents to Markdown with markitdown.
            ---
            ```bash
            pip install markitdown  # once
            ```

            ```bash
            python scripts/convert.py reference/example.docx
            ```
            """,
        "scripts/convert.py": dedent("""\
            import sys

            from markitdown import MarkItDown

            print(MarkItDown().convert(sys.argv[1]).text_content)
            """),
        "reference/example.docx": "PK not really a docx\n",
    },
    # A script path relative to the skill folder that works; a cleanup fragment that needs
    # the PID of an earlier, illustrative command; an input file the reader supplies.
    "web-viewer": {
        "SKILL.md": """\
            ---
            name: web-viewer
            description: Serve a folder of HTML reports for review in a browser.
            ---
            Check the options:

            ```bash
            python scripts/office/serve.py --help
            ```

            Summarize the access log you collected:

            ```bash
            python scripts/office/serve.py --summarize access.log
            ```

            When you are done, stop the viewer:

            ```bash
            kill $VIEWER_PID
            ```
            """,
        "scripts/office/serve.py": dedent("""\
            import argparse

            p = argparse.ArgumentParser(prog="serve.py")
            p.add_argument("--port", type=int, default=8000)
            p.add_argument("--summarize")
            args = p.parse_args()
            if args.summarize:
                print(len(open(args.summarize).read().splitlines()), "requests")
            """),
    },
    # A block fed by a skipped block: its failure may depend on what the reader fills in.
    "report-builder": {
        "SKILL.md": """\
            ---
            name: report-builder
            description: Build a Markdown report from a metrics folder.
            ---
            ```bash
            export REPORT_DIR={output_dir}
            ```

            ```bash
            python scripts/build.py
            ```

            ```bash
            python scripts/build.py --version
            ```
            """,
        "scripts/build.py": dedent("""\
            import os
            import sys

            if "--version" in sys.argv:
                print("report-builder 1.2")
                sys.exit(0)
            out = os.environ["REPORT_DIR"]
            print("writing", out)
            """),
    },
    # Prose only: nothing runnable.
    "writing-style": {
        "SKILL.md": """\
            ---
            name: writing-style
            description: House style for release notes and changelogs.
            ---
            Write in the present tense. Keep each entry under two lines.
            """,
    },
}

DEFECTS: dict[str, dict[str, str]] = {
    # SKILL.md documents `segment_train`; the runner only knows `train`.
    "segmentation": {
        "SKILL.md": """\
            ---
            name: segmentation
            description: Train a small segmentation model on a folder of masks.
            ---
            ```bash
            pip install -r requirements.txt
            ```

            ```bash
            python scripts/run.py segment_train --data fixtures --epochs 1
            ```
            """,
        "requirements.txt": "numpy\n",
        "scripts/run.py": dedent("""\
            import argparse


            def train(args):
                print("training on", args.data)


            ACTIONS = {"train": train}

            p = argparse.ArgumentParser(prog="run.py")
            p.add_argument("action")
            p.add_argument("--data", required=True)
            p.add_argument("--epochs", type=int, default=10)
            args = p.parse_args()
            ACTIONS[args.action](args)
            """),
        "fixtures/mask-0.txt": "0 1 1 0\n",
    },
    # An argparse choice the script does not offer.
    "image-resize": {
        "SKILL.md": """\
            ---
            name: image-resize
            description: Resize images for thumbnails.
            ---
            ```bash
            python scripts/resize.py --mode crop-fit --size 128
            ```
            """,
        "scripts/resize.py": dedent("""\
            import argparse

            p = argparse.ArgumentParser(prog="resize.py")
            p.add_argument("--mode", choices=["fit", "fill"], required=True)
            p.add_argument("--size", type=int)
            print(p.parse_args())
            """),
    },
    # SKILL.md runs a script the skill does not ship.
    "db-migrate": {
        "SKILL.md": """\
            ---
            name: db-migrate
            description: Apply SQL migrations in order.
            ---
            ```bash
            bash scripts/migrate.sh --dry-run
            ```
            """,
        "scripts/README.md": "migrate.sh was renamed\n",
    },
}


def build(root: Path, skills: dict[str, dict[str, str]]) -> None:
    for name, files in skills.items():
        for rel, text in files.items():
            p = root / "skills" / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(dedent(text))


def doc_test(root: Path, tmp: Path, name: str, host_tools: tuple[str, ...] = ()):
    ex = examine(root / "skills" / name)
    assert ex.valid, ex.problems
    (case,) = ex.cases
    assert case.doc_test
    ws = prepare_workspace(tmp / name / "attempt", ex.skill.path, ex.skill.name,
                           ".agents/skills", [])
    req = ExecutionRequest(prompt=case.prompt, case_id=case.id, workspace=ws.path, home=ws.home,
                           skill_name=ex.skill.name, skill_description=ex.skill.description,
                           skill_dir=ws.skill_dir, steps=case.steps,
                           doc_blocks=doc_blocks(ex.skill.fences(), case.steps),
                           env=base_env(ws.home, {"SKILL_DIR": str(ws.skill_dir)}),
                           limits=Limits(timeout_s=60), raw_log=tmp / name / "raw.jsonl")
    rec = EventRecorder(tmp / name / "events.jsonl", Redactor({}))
    try:
        result = LiteralRuntime().run_doc_test(req, rec, host_tools=host_tools)
    finally:
        rec.close()
    assert result.doc_test is not None  # the runtime reports what each block did
    return result.doc_test.summary(), read_events(tmp / name / "events.jsonl")


@pytest.fixture(scope="module")
def market(tmp_path_factory) -> Path:
    if shutil.which("pdftotext"):
        pytest.skip("pdftotext is installed here; the missing-tool case needs it absent")
    root = tmp_path_factory.mktemp("market")
    build(root, SKILLS)
    build(root, DEFECTS)
    return root


def test_illustrative_marketplace_has_no_failure(market, tmp_path):
    statuses = {n: doc_test(market, tmp_path, n)[0] for n in SKILLS}
    assert {n: r.status for n, r in statuses.items()} == {
        "pdf-tools": "untested", "docx-to-markdown": "untested", "web-viewer": "completed",
        "report-builder": "completed", "writing-style": "untested"}
    assert statuses["pdf-tools"].final_text == "needs pdftotext"
    assert statuses["docx-to-markdown"].final_text == "needs markitdown"
    assert statuses["writing-style"].final_text == ("no self-contained block: SKILL.md has no "
                                                    "shell block")


def test_placeholder_block_is_skipped_with_its_reason(market, tmp_path):
    _, events = doc_test(market, tmp_path, "pdf-tools")
    skipped = [e for e in events if isinstance(e, MessageEvent) and "skipped" in e.text]
    assert len(skipped) == 1
    assert "SKILL.md line 10" in skipped[0].text and "'<input.pdf>'" in skipped[0].text
    ran = [e.input["command"] for e in events if isinstance(e, ToolCallEvent)]
    assert ran == ["pdftotext -layout reference/sample.pdf /tmp/sample.txt"]


def test_blocks_run_from_the_skill_copy(market, tmp_path):
    result, events = doc_test(market, tmp_path, "web-viewer")
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert results[0].ok and "--port" in results[0].output  # scripts/office/serve.py found
    assert not results[1].ok and "FileNotFoundError" in results[1].output  # reader's input
    assert not results[2].ok  # kill with no PID
    assert "1 of 3" in result.final_text and "inconclusive" in result.final_text


def test_failure_after_a_skipped_block_is_not_evidence(market, tmp_path):
    result, events = doc_test(market, tmp_path, "report-builder")
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert "KeyError: 'REPORT_DIR'" in results[0].output  # raised in the skill's own script
    assert result.status == "completed"
    notes = [e.text for e in events if isinstance(e, MessageEvent) and "not_evidence" in e.text]
    assert len(notes) == 1 and "may depend on line 6 (skipped: it exports $REPORT_DIR)" in notes[0]


def test_documented_action_the_runner_lacks_is_a_defect(market, tmp_path):
    result, events = doc_test(market, tmp_path, "segmentation")
    assert result.status == "failed"
    # The install block before it is not run (the host is not changed) and hides nothing.
    skipped = [e.text for e in events if isinstance(e, MessageEvent) and "skipped" in e.text]
    assert len(skipped) == 1 and "installs host software" in skipped[0]
    assert [e.input["command"] for e in events if isinstance(e, ToolCallEvent)] == [
        "python scripts/run.py segment_train --data fixtures --epochs 1"]
    first = result.final_text.splitlines()[0]
    assert first == ("SKILL.md line 10: KeyError: 'segment_train' raised in the skill's "
                     "scripts/run.py:15")
    assert 'ACTIONS[args.action](args)' in result.final_text  # the runner's traceback


def test_unknown_choice_of_a_skill_script_is_a_defect(market, tmp_path):
    result, _ = doc_test(market, tmp_path, "image-resize")
    assert result.status == "failed"
    assert "the skill's resize.py rejects what SKILL.md documents: argument --mode: " \
           "invalid choice: 'crop-fit'" in result.final_text


def test_script_the_skill_lacks_is_a_defect(market, tmp_path):
    result, _ = doc_test(market, tmp_path, "db-migrate")
    assert result.status == "failed"
    assert "SKILL.md runs scripts/migrate.sh, which the skill does not have" in result.final_text


def test_a_declared_host_tool_that_is_missing_is_an_environment_error(market, tmp_path):
    with pytest.raises(RuntimeUnavailable, match=r"SKILL\.md line 16: host tool pdftotext is "
                                                 r"missing although the case declares it"):
        doc_test(market, tmp_path, "pdf-tools", host_tools=("pdftotext",))


class _DocTestRequest(ExecutionRequest):
    """ExecutionRequest as it will be once the case's doc_test / host_tools are wired into it."""

    doc_test: bool = True
    host_tools: tuple[str, ...] = ()


def test_run_dispatches_on_the_request_doc_test_flag(market, tmp_path):
    ex = examine(market / "skills" / "segmentation")
    ws = prepare_workspace(tmp_path / "attempt", ex.skill.path, ex.skill.name,
                           ".agents/skills", [])
    req = _DocTestRequest(prompt="p", case_id="smoke", workspace=ws.path, home=ws.home,
                          skill_name=ex.skill.name, skill_description="d",
                          skill_dir=ws.skill_dir, steps=ex.cases[0].steps,
                          env=base_env(ws.home), limits=Limits(timeout_s=60),
                          raw_log=tmp_path / "raw.jsonl")
    rec = EventRecorder(tmp_path / "events.jsonl", Redactor({}))
    result = LiteralRuntime().run(req, rec)
    rec.close()
    # From the workspace root `python scripts/run.py` would not even be found. The runtime
    # ran every block and reports what each did; the defect is read from its report.
    assert result.status == "completed" and result.doc_test is not None
    assert result.doc_test.summary().status == "failed"
    assert "KeyError: 'segment_train'" in result.final_text
