"""A crash while the skill's script parses one of the skill's own files names that file (issue
46, item 4): the doc test's reason says which file is not valid JSON, YAML or TOML, from the
traceback's evidence (the error's own text, a literal on the frame's line, or the constant it
uses), never from a guess. Each block runs for real, as the literal runtime runs it."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from aeval.verdicts.diagnosis import diagnose
from tests.unit.test_doctest import run_block

COUNT = dedent("""\
    import json
    import sys
    from pathlib import Path

    HERE = Path(__file__).resolve().parent.parent
    CONFIG = HERE / "config.json"


    def main():
        words = open(sys.argv[1]).read().split()
        stop = set()
        cfg = json.load(open(CONFIG))
        stop = set(cfg.get("stopwords", []))
        print(len([w for w in words if w not in stop]))


    main()
    """)


def skill(tmp_path: Path, files: dict[str, str]) -> Path:
    d = tmp_path / "word-count"
    for rel, text in {"SKILL.md": "---\nname: word-count\ndescription: Count words.\n---\n",
                      **files}.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(text)
    (d / "notes.txt").write_text("the cat and the hat\n")
    return d


def diagnosed(d: Path, code: str):
    code_rc, output = run_block(code, d)
    assert code_rc != 0, output
    return diagnose(code, code_rc, output, d), output


def test_a_broken_json_config_loaded_through_a_constant_is_named(tmp_path):
    d = skill(tmp_path, {"scripts/count.py": COUNT,
                         "config.json": '{"stopwords": ["the", "and",]}\n',
                         "references/schema.json": "{}\n"})
    diag, output = diagnosed(d, "python scripts/count.py notes.txt")
    assert "JSONDecodeError" in output and "config.json" not in output.split("Error:")[-1]
    assert diag.kind == "defect"
    assert diag.reason.startswith("json.decoder.JSONDecodeError: Expecting value: line 1 ")
    assert diag.reason.endswith("raised in the skill's scripts/count.py:12, loading the "
                                "skill's config.json, which is not valid JSON")


def test_a_broken_yaml_template_named_by_the_error_itself(tmp_path):
    report = dedent("""\
        import os
        import sys

        import yaml

        path = os.path.join(os.path.dirname(__file__), "..", "templates", sys.argv[1])
        with open(path) as fh:
            layout = yaml.safe_load(fh)
        print(layout["title"])
        """)
    d = skill(tmp_path, {"scripts/report.py": report,
                         "templates/weekly.yaml": "title: Weekly\nsections: [a, b\n",
                         "templates/monthly.yaml": "title: Monthly\nsections: [a, b]\n"})
    diag, output = diagnosed(d, "python scripts/report.py weekly.yaml")
    assert 'weekly.yaml", line' in output  # PyYAML names the stream
    assert diag.reason.endswith("loading the skill's templates/weekly.yaml, which is not "
                                "valid YAML")


def test_a_broken_toml_read_by_a_helper_is_named_from_the_calling_frame(tmp_path):
    fit = dedent("""\
        import sys
        import tomllib
        from pathlib import Path

        SETTINGS = Path(__file__).parent / "defaults" / "settings.toml"


        def load(path):
            with open(path, "rb") as fh:
                return tomllib.load(fh)


        cfg = load(SETTINGS)
        print(cfg["model"]["epochs"], sys.argv[1:])
        """)
    d = skill(tmp_path, {"scripts/fit.py": fit,
                         "scripts/defaults/settings.toml": "[model]\nepochs = \n"})
    diag, _ = diagnosed(d, "python scripts/fit.py notes.txt")
    assert "TOMLDecodeError" in diag.reason
    assert diag.reason.endswith("loading the skill's scripts/defaults/settings.toml, which "
                                "is not valid TOML")


def test_no_file_is_named_without_evidence(tmp_path):
    """The reader's input (a path from argv), or a file the frame names that parses: the
    reason stays as it was, whatever broken JSON the skill also ships."""
    reader = dedent("""\
        import json
        import sys

        data = json.load(open(sys.argv[1]))
        print(len(data))
        """)
    d = skill(tmp_path, {"scripts/load.py": reader,
                         "examples/broken.json": "{oops\n"})
    (tmp_path / "input.json").write_text("[1, 2,\n")  # the reader's, not the skill's
    diag, _ = diagnosed(d, f"python scripts/load.py {tmp_path / 'input.json'}")
    assert diag.reason.endswith("raised in the skill's scripts/load.py:4")

    valid = COUNT.replace('cfg = json.load(open(CONFIG))',
                          'cfg = json.loads(open(CONFIG).read() + "}")')
    d2 = skill(tmp_path / "two", {"scripts/count.py": valid,
                                  "config.json": '{"stopwords": ["the"]}\n'})
    diag, _ = diagnosed(d2, "python scripts/count.py notes.txt")
    assert "JSONDecodeError" in diag.reason and "loading" not in diag.reason


def test_two_broken_candidates_name_none(tmp_path):
    pick = dedent("""\
        import json
        import sys

        name = "prod.json" if "--prod" in sys.argv else "dev.json"
        cfg = json.load(open("config/" + name))
        print(cfg)
        """)
    d = skill(tmp_path, {"scripts/pick.py": pick, "config/prod.json": "{,}\n",
                         "config/dev.json": "[\n"})
    diag, _ = diagnosed(d, "python scripts/pick.py")
    assert diag.reason.endswith("raised in the skill's scripts/pick.py:5")
