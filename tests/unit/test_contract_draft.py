"""aeval.skill.contract_draft: the template from static reading, the checks on a drafted contract,
what is left to fill, and writing that never loses a contract."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aeval.skill.contract import EvalConfig, parse_config
from aeval.skill.contract_draft import (
    TODO_MARK,
    DraftRejected,
    _to_workspace,
    check_draft,
    draft_input,
    template_config,
    unfilled,
    write_contract,
)
from aeval.skill.skill_md import load_skill
from aeval.verdicts.doctest import BlockOutcome
from aeval.verdicts.self_contained import steps_from_doc_test

SKILL_MD = """---
name: pdf-forms
description: Fill PDF forms from a JSON file of field values. Use to fill or list form fields.
---

# PDF forms

Install the dependency once:

```bash
pip install pypdf
```

List the fields of a form, then fill it:

```bash
python3 scripts/fields.py list fixtures/w9.pdf
python3 scripts/fields.py fill fixtures/w9.pdf --values fixtures/values.json -o outputs/w9.pdf
```

For your own form:

```bash
python3 scripts/fields.py fill <your-form.pdf> --values <values.json>
```

```console
$ python3 scripts/fields.py list fixtures/w9.pdf
name (text)
```

See [the field types](references/types.md).
"""


@pytest.fixture
def skill(tmp_path: Path):
    d = tmp_path / "pdf-forms"
    (d / "scripts").mkdir(parents=True)
    (d / "fixtures").mkdir()
    (d / "references").mkdir()
    (d / "SKILL.md").write_text(SKILL_MD)
    (d / "scripts" / "fields.py").write_text("import sys\n")
    (d / "fixtures" / "w9.pdf").write_bytes(b"%PDF-1.4\n")
    (d / "fixtures" / "values.json").write_text("{}")
    (d / "references" / "types.md").write_text("# Types\n")
    return load_skill(d)


def test_the_template_runs_the_runnable_blocks_from_the_workspace(skill):
    # what the doc test found: the install skipped, the two-liner ran, the placeholder skipped
    config, skipped = template_config(skill, steps_from_doc_test(skill, [
        BlockOutcome(11, "skipped", "installs host software"), BlockOutcome(17, "ok"),
        BlockOutcome(24, "skipped", "placeholder: angle-bracket placeholder '<your-form.pdf>'")]))
    (case,) = config["evals"]
    todo = case["steps"].pop()  # the placeholder block: the author's to make runnable
    assert todo.startswith(f"# {TODO_MARK}: SKILL.md line 24: placeholder:")
    assert case["steps"] == [
        'python3 "$SKILL_DIR/scripts/fields.py" list fixtures/w9.pdf\n'
        'python3 "$SKILL_DIR/scripts/fields.py" fill fixtures/w9.pdf --values '
        'fixtures/values.json -o outputs/w9.pdf']
    assert case["files"] == ["fixtures"]
    # the install and the placeholder block are left out with the reason; a console block
    # is no shell block at all
    assert [s.split(": ", 1)[1].split(" ", 1)[0] for s in skipped] == [
        "installs", "placeholder:"]
    # not run at all (the doc test could not start): no block becomes a step
    config, _ = template_config(skill, None, "the doc test could not run")
    assert all(s.startswith(f"# {TODO_MARK}") for s in config["evals"][0]["steps"])
    assert all(s.startswith("SKILL.md line ") for s in skipped)
    EvalConfig.model_validate(config)


def test_what_is_left_to_fill_is_named_by_field(skill):
    config, _ = template_config(skill, steps_from_doc_test(skill, [
        BlockOutcome(11, "skipped", "installs"), BlockOutcome(17, "ok"),
        BlockOutcome(24, "skipped", "placeholder: <x>")]))
    left = {p.field: p.message for p in unfilled(config, "eval.config")}
    assert set(left) == {"evals[0].prompt", "evals[0].expected_outcome", "evals[0].steps[1]",
                         "evals[0].assertions[1]", "triggers.should[0]", "triggers.should_not[0]"}
    assert "SKILL.md line 24: placeholder: <x>" in left["evals[0].steps[1]"]
    config["evals"][0]["prompt"] = "Fill the W-9 in fixtures/ with my values."
    assert "evals[0].prompt" not in {p.field for p in unfilled(config, "eval.config")}


@pytest.mark.parametrize(("line", "expected"), [
    ("python3 scripts/fields.py list x.pdf", 'python3 "$SKILL_DIR/scripts/fields.py" list x.pdf'),
    ("./scripts/fields.py list", '"$SKILL_DIR/scripts/fields.py" list'),
    ("python3 $SKILL_DIR/scripts/fields.py list", "python3 $SKILL_DIR/scripts/fields.py list"),
    ("cat references/types.md | head", 'cat "$SKILL_DIR/references/types.md" | head'),
    ("cp fixtures/w9.pdf outputs/", "cp fixtures/w9.pdf outputs/"),  # copied: same name
    ("python3 -m scripts.fields", "python3 -m scripts.fields"),  # a module, not a path
    ("ls scripts", 'ls "$SKILL_DIR/scripts"'),  # the skill's folder, named bare
    ("echo list w9", "echo list w9"),  # words that name nothing of the skill
    ("ls /tmp/scripts/fields.py", "ls /tmp/scripts/fields.py"),  # absolute: not the skill's
])
def test_skill_paths_become_skill_dir_paths(skill, line, expected):
    assert _to_workspace(line, skill) == expected


def test_a_drafted_contract_is_checked_against_the_skill(skill):
    def config(**case):
        return EvalConfig.model_validate({"evals": [{
            "id": "fill", "prompt": "p", "expected_outcome": "o",
            "assertions": ["a readable form", {"type": "file_exists", "path": "outputs/w9.pdf"}],
            **case}]})

    checked = check_draft(config(files=["fixtures/w9.pdf"]), skill, cases=1)
    assert [type(a).__name__ for a in checked.evals[0].assertions] == ["FileExists", "str"]
    with pytest.raises(DraftRejected, match=r"evals\[0\].files\[0\]: 'fixtures/w-9.pdf'"):
        check_draft(config(files=["fixtures/w-9.pdf"]), skill, cases=1)
    with pytest.raises(DraftRejected, match="empty"):
        check_draft(config(assertions=[]), skill, cases=1)
    two = EvalConfig.model_validate({"evals": [
        {"id": i, "prompt": "p", "expected_outcome": "o", "assertions": ["x"]} for i in "ab"]})
    with pytest.raises(DraftRejected, match="2 cases, at most 1"):
        check_draft(two, skill, cases=1)


def test_the_drafting_input_is_bounded_and_lists_the_files(skill):
    (skill.path / "SKILL.md").write_text(SKILL_MD + "x" * 200_000)
    text = draft_input(skill, 3)
    assert len(text) < 70_000
    assert "characters left out" in text
    assert "scripts/fields.py" in text and "references/types.md" in text


def test_writing_keeps_an_existing_contract_and_is_atomic(skill, tmp_path):
    config, _ = template_config(skill)
    with pytest.raises(FileExistsError):
        (skill.path / "eval.config.yaml").write_text("evals: []\n")
        write_contract(skill.path, config)
    target, kept = write_contract(skill.path, config, force=True)
    assert kept == skill.path / "eval.config.yaml.orig"
    assert kept.read_text() == "evals: []\n"
    assert not (skill.path / "eval.config.yaml").exists()
    parse_config(target)
    assert not [p for p in os.listdir(skill.path) if p.startswith(".eval.config")]


def test_a_contract_that_is_a_link_is_moved_not_followed(skill, tmp_path):
    outside = tmp_path / "shared.config"
    outside.write_text('{"evals": []}')
    (skill.path / "eval.config").symlink_to(outside)
    config, _ = template_config(skill)
    _, kept = write_contract(skill.path, config, force=True)
    assert kept.is_symlink() and outside.read_text() == '{"evals": []}'
    assert json.loads((skill.path / "eval.config").read_text())["evals"][0]["prompt"] \
        .startswith(TODO_MARK)
