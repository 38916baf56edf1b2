"""The deep tier of S0: the code of what SKILL.md runs, read as a compiler reads it, never run.

Each test builds a skill the way public marketplaces write them (PEP 723 scripts, a `lib/`
of helpers, TypeScript tools, bash wrappers, plugin path helpers), plants one defect of a
class in two or three differently-worded forms, and expects a defect finding tied to the
SKILL.md line that runs the script and naming the code file and line; the clean forms of
the same skills (what Python, Node and bash accept) give no finding."""

from __future__ import annotations

import os
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.skill.skill_md import load_skill
from aeval.verdicts.static_check import static_check


def build(root: Path, files: dict[str, str], modes: dict[str, int] | None = None) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(dedent(text))
        os.chmod(p, (modes or {}).get(rel, 0o755 if rel.startswith(("scripts/", "bin/"))
                                       else 0o644))
    return root


def findings(root: Path, severity: str = "defect"):
    return [f for f in static_check(load_skill(root)) if f.severity == severity]


def line_of(root: Path, needle: str, rel: str = "SKILL.md") -> int:
    lines = (root / rel).read_text().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if needle in ln)


# ---- Python: a name imported from the skill's own module that the module does not define ------

REPORT_MD = """\
    ---
    name: csv-report
    description: Summarise a CSV file as a markdown table. Use when asked for a CSV report.
    ---
    # CSV report

    Install nothing: the scripts use the standard library.

    ## Summarise

    ```bash
    python3 scripts/report.py data.csv --top 5
    ```

    The table goes to stdout; redirect it to keep it.
    """

FMT = """\
    \"\"\"Markdown rendering for the report.\"\"\"

    WIDTH = 80


    def render_rows(rows):
        return "\\n".join("| " + " | ".join(r) + " |" for r in rows)
    """

REPORT = """\
    #!/usr/bin/env python3
    \"\"\"Summarise a CSV file.\"\"\"
    import argparse
    import csv

    from lib.fmt import WIDTH, {name}


    def main():
        ap = argparse.ArgumentParser()
        ap.add_argument("path")
        ap.add_argument("--top", type=int, default=10)
        args = ap.parse_args()
        with open(args.path) as fh:
            rows = list(csv.reader(fh))[: args.top]
        print({name}(rows)[:WIDTH * 100])


    if __name__ == "__main__":
        main()
    """


def test_a_function_renamed_in_the_skills_own_module_fails_the_script_that_imports_it(tmp_path):
    root = build(tmp_path / "csv-report", {
        "SKILL.md": REPORT_MD, "scripts/lib/__init__.py": "", "scripts/lib/fmt.py": FMT,
        "scripts/report.py": REPORT.format(name="render_table")})
    (f,) = findings(root)
    assert (f.file, f.line, f.kind, f.path) == ("SKILL.md", line_of(root, "scripts/report.py"),
                                                 "broken_import", "scripts/report.py")
    assert "scripts/report.py line 6 imports render_table from scripts/lib/fmt.py, which " \
           "does not define it" in f.problem
    # the name the module does define: clean
    (root / "scripts/report.py").write_text(dedent(REPORT.format(name="render_rows")))
    assert findings(root) == []


def test_a_module_at_the_skill_root_and_a_relative_import_one_level_down(tmp_path):
    """Worded otherwise: `uv run`, the skill's root put on sys.path, a package whose module
    imports a sibling relatively (`from .io import load_json`); the defect is in the
    module, and the finding names it and the script that imports it."""
    root = build(tmp_path / "json-merge", {
        "SKILL.md": """\
            ---
            name: json-merge
            description: Merge JSON config files with overrides. Use to combine configs.
            ---
            # JSON merge

            ```sh
            uv run scripts/merge.py base.json override.json -o merged.json
            ```
            """,
        "common/__init__.py": "",
        "common/io.py": "import json\n\n\ndef read_json(p):\n    return json.load(open(p))\n",
        "common/merge.py": "from .io import load_json\n\n\ndef merge(a, b):\n"
                           "    return {**load_json(a), **load_json(b)}\n",
        "scripts/merge.py": """\
            import sys
            from pathlib import Path

            sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
            from common.merge import merge  # noqa: E402

            print(merge(sys.argv[1], sys.argv[2]))
            """})
    (f,) = findings(root)
    assert f.line == line_of(root, "uv run scripts/merge.py") and f.path == "common/merge.py"
    assert f.problem.startswith("runs scripts/merge.py, which imports common/merge.py: "
                                "common/merge.py line 1 imports load_json from common/io.py")
    (root / "common/io.py").write_text("import json\n\n\ndef load_json(p):\n"
                                       "    return json.load(open(p))\n")
    assert findings(root) == []


@pytest.mark.parametrize("module", [
    "def __getattr__(name):\n    return lambda rows: str(rows)\n",        # module __getattr__
    "from lib._impl import *\n",                                            # a star import
    "for _n in ('render_table',):\n    globals()[_n] = str\n",             # globals() assigned
    "try:\n    from tabulate import tabulate as render_table\nexcept ImportError:\n"
    "    def render_table(rows):\n        return str(rows)\n",                 # defined in a try
    "if True:\n    render_table = str\nelse:\n    render_table = repr\n",   # in an if
])
def test_a_module_that_may_define_the_name_in_ways_a_reader_cannot_see_is_not_judged(
        tmp_path, module):
    root = build(tmp_path / "csv-report", {
        "SKILL.md": REPORT_MD, "scripts/lib/__init__.py": "", "scripts/lib/_impl.py": "",
        "scripts/lib/fmt.py": "WIDTH = 80\n" + module,
        "scripts/report.py": REPORT.format(name="render_table")})
    assert findings(root) == []


def test_a_guarded_import_a_submodule_and_a_script_no_doc_runs_are_not_defects(tmp_path):
    root = build(tmp_path / "csv-report", {
        "SKILL.md": REPORT_MD, "scripts/lib/__init__.py": "", "scripts/lib/fmt.py": FMT,
        "scripts/report.py": dedent(REPORT.format(name="render_rows")).replace(
            "from lib.fmt import WIDTH, render_rows",
            "from lib import fmt\nfrom lib.fmt import WIDTH, render_rows\n"
            "try:\n    from lib.fmt import render_html\nexcept ImportError:\n"
            "    render_html = None"),
        # broken, but nothing the docs run imports it
        "scripts/old_report.py": "from lib.fmt import render_table\ntype Row = list[str]\n"})
    assert findings(root) == [] and findings(root, "warning") == []


# ---- Python: syntax newer than the version the script declares; undefined names ---------------

PEP723 = """\
    #!/usr/bin/env python3
    # /// script
    # requires-python = "{spec}"
    # dependencies = ["requests>=2"]
    # ///
    \"\"\"Fetch release notes.\"\"\"
    import sys

    {body}

    print(sys.argv[1:])
    """

NOTES_MD = """\
    ---
    name: release-notes
    description: Fetch and summarise release notes of a GitHub project. Use for changelogs.
    ---
    # Release notes

    ```bash
    uv run scripts/notes.py owner/repo --since v1.2.0
    ```
    """


@pytest.mark.parametrize("body, added", [
    ("type Tag = tuple[int, int, int]", "3.12"),                                  # PEP 695 alias
    ("def first[T](xs: list[T]) -> T:\n    return xs[0]", "3.12"),               # generic def
    ("print(f\"{\"v\" + sys.argv[0]}\")", "3.12"),                              # nested quotes
    ("match sys.argv[1:]:\n    case [tag]:\n        print(tag)", "3.10"),           # match
])
def test_syntax_newer_than_the_declared_python_is_a_defect(tmp_path, body, added):
    root = build(tmp_path / "release-notes", {
        "SKILL.md": NOTES_MD,
        "scripts/notes.py": PEP723.format(spec=">=3.9", body=body.replace("\n", "\n    "))})
    (f,) = findings(root)
    assert f.kind == "syntax_error" and f.line == line_of(root, "uv run scripts/notes.py")
    assert "scripts/notes.py line 9 is a syntax error" in f.problem
    assert f"added in Python {added}" in f.problem and "requires-python '>=3.9'" in f.problem
    # declared new enough, or not declared at all: not judged
    for spec in (">=3.12", ""):
        text = PEP723.format(spec=spec, body=body.replace("\n", "\n    "))
        if not spec:
            text = text.replace('requires-python = ""', "")
        (root / "scripts/notes.py").write_text(dedent(text))
        assert findings(root) == [], spec


def test_the_skills_pyproject_declares_the_version_when_the_script_does_not(tmp_path):
    root = build(tmp_path / "release-notes", {
        "SKILL.md": NOTES_MD,
        "pyproject.toml": '[project]\nname = "notes"\nversion = "0.1"\n'
                          'requires-python = ">=3.10,<4"\n',
        "scripts/notes.py": "import sys\n\n\nclass Box[T]:\n    item: T\n\n\nprint(sys.argv)\n"})
    (f,) = findings(root)
    assert "scripts/notes.py line 4 is a syntax error" in f.problem
    assert "pyproject.toml" in f.problem


def test_a_plain_syntax_error_and_an_undefined_name_in_a_run_script(tmp_path):
    root = build(tmp_path / "release-notes", {
        "SKILL.md": NOTES_MD,
        "scripts/notes.py": "import sys\n\n\ndef main(argv):\n    return json.dumps(argv)\n\n\n"
                            "print(main(sys.argv))\n"})
    (f,) = findings(root)
    assert f.kind == "undefined_name" and "scripts/notes.py line 5" in f.problem
    assert "`json`" in f.problem
    (root / "scripts/notes.py").write_text("import sys\nprint(sys.argv[1:]\n")
    (f,) = findings(root)
    assert f.kind == "syntax_error" and "scripts/notes.py line" in f.problem


# ---- JavaScript / TypeScript: a relative import that resolves to nothing ----------------------

SLIDES_MD = """\
    ---
    name: slide-export
    description: Export a slide deck outline to HTML slides. Use when asked to build slides.
    ---
    # Slide export

    ```bash
    npx tsx scripts/export.ts outline.md --out deck.html
    ```
    """


@pytest.mark.parametrize("line", [
    'import { slugify } from "./lib/util";',
    "const { slugify } = require('./lib/util.js');",
    'export { slugify } from "../helpers/slug";',
])
def test_a_relative_import_of_a_module_the_skill_does_not_ship_is_a_defect(tmp_path, line):
    root = build(tmp_path / "slide-export", {
        "SKILL.md": SLIDES_MD,
        "scripts/export.ts": f'import {{ readFileSync }} from "node:fs";\n{line}\n\n'
                             "console.log(readFileSync(process.argv[2], 'utf8'));\n"})
    (f,) = findings(root)
    assert f.kind == "broken_import" and f.line == line_of(root, "npx tsx scripts/export.ts")
    assert "scripts/export.ts line 2 imports" in f.problem and "resolves to no file" in f.problem


@pytest.mark.parametrize("line, ships", [
    ('import { slugify } from "./lib/util.js";', "scripts/lib/util.ts"),      # .js for a .ts
    ('import { slugify } from "./lib/util";', "scripts/lib/util/index.ts"),   # index file
    ('import { slugify } from "./lib/util";', "scripts/lib/util.mjs"),
    ('import type { Slug } from "./types";', "scripts/other.ts"),              # type-only
    ('import { slugify } from "slugify";', "scripts/other.ts"),                # a package
])
def test_imports_node_and_typescript_resolve_are_clean(tmp_path, line, ships):
    root = build(tmp_path / "slide-export", {
        "SKILL.md": SLIDES_MD, ships: "export const slugify = (s: string) => s;\n",
        "scripts/export.ts": f"{line}\nconsole.log(process.argv[2]);\n"})
    assert findings(root) == []


def test_a_module_imported_by_the_run_script_is_read_in_turn(tmp_path):
    root = build(tmp_path / "slide-export", {
        "SKILL.md": SLIDES_MD,
        "scripts/lib/render.ts": 'import { theme } from "./themes/dark";\n'
                                 "export const render = (s: string) => theme + s;\n",
        "scripts/export.ts": 'import { render } from "./lib/render.js";\n'
                             "console.log(render(process.argv[2]));\n"})
    (f,) = findings(root)
    assert f.path == "scripts/lib/render.ts"
    assert f.problem.startswith("runs scripts/export.ts, which imports scripts/lib/render.ts: "
                                "scripts/lib/render.ts line 1 imports './themes/dark'")


# ---- bash: shellcheck's parse errors -------------------------------------------------------------

BACKUP_MD = """\
    ---
    name: db-backup
    description: Back up a PostgreSQL database to a dated archive. Use for database backups.
    ---
    # DB backup

    ```bash
    bash scripts/backup.sh --db app --dest backups/
    ```
    """


@pytest.mark.parametrize("broken", [
    'if [ -z "$DB" ]; then\n  echo "no --db" >&2\n  exit 2\n',               # `fi` missing
    'for f in "$DEST"/*.gz; do\n  echo "$f"\n',                              # `done` missing
    'echo "backing up $DB\nexit 0\n',                                       # quote unclosed
])
def test_a_bash_script_bash_cannot_parse_is_a_defect(tmp_path, broken):
    root = build(tmp_path / "db-backup", {
        "SKILL.md": BACKUP_MD,
        "scripts/backup.sh": '#!/usr/bin/env bash\nset -euo pipefail\nDB="${2:-}"\nDEST="${4:-.}"\n'
                             + broken})
    (f,) = findings(root)  # one parse error a file: the first, not its follow-ups
    assert f.kind == "shell_error" and f.line == line_of(root, "bash scripts/backup.sh")
    assert "scripts/backup.sh line" in f.problem and "SC1" in f.problem


def test_shellchecks_style_advice_is_no_finding(tmp_path):
    root = build(tmp_path / "db-backup", {
        "SKILL.md": BACKUP_MD,
        # unquoted expansions, `ls` in a loop, backticks: style and warnings, not errors
        "scripts/backup.sh": "DB=$2\nfor f in `ls $4`; do echo $f; done\n"
                             "pg_dump $DB > $4/$DB-$(date +%F).sql\n"})
    assert findings(root) == [] and findings(root, "warning") == []


# ---- the executable bit, through a marketplace's path helper -------------------------------------

@pytest.mark.parametrize("call", [
    '"$(helper plugin)/skills/lint-fix/scripts/fix.sh" --staged',
    '"${CLAUDE_PLUGIN_ROOT}/skills/lint-fix/scripts/fix.sh" --staged',
    "$(git rev-parse --show-toplevel)/plugins/dev/skills/lint-fix/scripts/fix.sh --staged",
])
def test_a_script_run_through_a_plugin_path_helper_must_be_executable(tmp_path, call):
    root = build(tmp_path / "lint-fix", {
        "SKILL.md": f"""\
            ---
            name: lint-fix
            description: Fix lint errors in staged files. Use before committing.
            ---
            # Lint fix

            ```bash
            {call}
            ```
            """,
        "scripts/fix.sh": '#!/usr/bin/env bash\necho "fixing ${1:-}"\n'},
        modes={"scripts/fix.sh": 0o644})
    (f,) = findings(root)
    assert (f.kind, f.path, f.line) == ("not_executable", "scripts/fix.sh",
                                        line_of(root, "--staged"))
    os.chmod(root / "scripts/fix.sh", 0o755)
    assert findings(root) == []


# ---- what runs all the same is no finding -------------------------------------------------------

def test_names_python_never_looks_up_and_a_stdlib_namesake_are_no_finding(tmp_path):
    """An undefined name in an annotation (lazy, or a string), one under a Python-2 check,
    and `from types import ...` beside a shipped `scripts/types.py` (the standard module is
    loaded at start-up, the namesake never is): the script runs."""
    root = build(tmp_path / "release-notes", {
        "SKILL.md": NOTES_MD,
        "scripts/types.py": "Release = dict\n",
        "scripts/notes.py": dedent("""\
            from __future__ import annotations

            import sys
            from types import SimpleNamespace

            if sys.version_info[0] == 2:
                text_type = unicode
            else:
                text_type = str


            def latest(rows: pd.DataFrame) -> "Release":
                tag: Tag = rows[0]
                return SimpleNamespace(tag=text_type(tag))


            print(latest(sys.argv[1:]))
            """)})
    assert findings(root) == [] and findings(root, "warning") == []


def test_an_import_of_what_a_documented_build_makes_is_no_finding(tmp_path):
    root = build(tmp_path / "slide-export", {
        "SKILL.md": SLIDES_MD.replace("npx tsx", "npm run build\n    node"),
        "scripts/export.ts": 'import { render } from "../dist/render.js";\n'
                             "console.log(render(process.argv[2]));\n"})
    assert findings(root) == []


def test_a_bash_script_whose_interpreter_line_lacks_the_bang_runs_under_bash(tmp_path):
    root = build(tmp_path / "db-backup", {
        "SKILL.md": BACKUP_MD,
        "scripts/backup.sh": '# /usr/bin/env bash\nset -eu\npg_dump "$2" > "$4/$2.sql"\n'})
    assert findings(root) == []


def test_a_script_a_linked_reference_runs_is_read_and_the_finding_names_both_lines(tmp_path):
    """A runbook in references/ runs the script in a block (a defect, tied to the runbook's
    line and the SKILL.md line linking it); its prose's inline mention of another script
    only warns."""
    root = build(tmp_path / "db-backup", {
        "SKILL.md": dedent(BACKUP_MD) + "\nRestoring: see [the runbook](references/restore.md).\n",
        "references/restore.md": "# Restore\n\n```bash\nbash scripts/restore.sh latest\n```\n\n"
                                 "Old dumps: `bash scripts/legacy.sh --all` also works.\n",
        "scripts/backup.sh": '#!/usr/bin/env bash\necho "backup"\n',
        "scripts/restore.sh": '#!/usr/bin/env bash\nif [ -n "$1" ]; then\n  echo "$1"\n',
        "scripts/legacy.sh": '#!/usr/bin/env bash\ncase "$1" in\n  --all) echo all ;;\n'})
    (f,) = findings(root)
    assert (f.file, f.line, f.via, f.path) == ("references/restore.md", 4,
                                               line_of(root, "the runbook"), "scripts/restore.sh")
    (w,) = findings(root, "warning")
    assert (w.file, w.path) == ("references/restore.md", "scripts/legacy.sh")


def test_the_deep_tier_stops_at_its_bounds_on_a_skill_that_runs_hundreds_of_scripts(tmp_path):
    from aeval.verdicts.deep_check import MAX_FINDINGS
    block = "".join(f"python3 scripts/t{i}.py\n" for i in range(300))
    files = {f"scripts/t{i}.py": "print(undefined_total)\n" for i in range(300)}
    root = build(tmp_path / "bulk-tools", {
        "SKILL.md": "---\nname: bulk-tools\ndescription: Many small tools. Use for chores.\n"
                    f"---\n# Bulk tools\n\n```bash\n{block}```\n", **files})
    got = findings(root)
    assert 0 < len(got) <= MAX_FINDINGS and all(f.kind == "undefined_name" for f in got)
