"""A script SKILL.md runs directly whose interpreter line misspells its interpreter
(``#!/usr/bin/env pyhton3``) is a defect of the skill on the line that runs it, in S0 and in
the doc test alike: not a tool the reader installs ("needs pyhton3"). A real interpreter,
with a version, through ``env -S``, or one aeval does not know, stays usable."""

from __future__ import annotations

import pytest

from aeval.skill.skill_md import load_skill
from aeval.verdicts.diagnosis import diagnose
from aeval.verdicts.doctest import interpreter_problem
from aeval.verdicts.static_check import static_check
from tests.unit.test_doctest import run_block

LINT = """\
import sys

def main():
    for path in sys.argv[1:]:
        print(f"{path}: no secret-dependent branch")

main()
"""


def _skill(tmp_path, shebang: str):
    d = tmp_path / "constant-time-review"
    (d / "scripts").mkdir(parents=True)
    (d / "SKILL.md").write_text(
        "---\nname: constant-time-review\ndescription: Review crypto code for timing leaks.\n"
        "---\n# Constant-time review\n\nLint the comparison helpers first:\n\n```bash\n"
        "{baseDir}/scripts/ct_lint.py src/compare.c\n```\n")
    script = d / "scripts" / "ct_lint.py"
    script.write_text(f"{shebang}\n{LINT}")
    script.chmod(0o755)
    return d, script


@pytest.mark.parametrize("shebang, near", [("#!/usr/bin/env pyhton3", "python3"),
                                           ("#!/usr/bin/env pythn3", "python3"),
                                           ("#!/bin/bsah", "bash"),
                                           ("#!/usr/bin/env noed", "node")])
def test_a_misspelt_interpreter_is_a_defect_on_the_line_that_runs_the_script(tmp_path,
                                                                             shebang, near):
    d, script = _skill(tmp_path, shebang)
    assert f"a misspelling of {near}?" in interpreter_problem(script)
    found = [f for f in static_check(load_skill(d)) if f.severity == "defect"]
    assert [(f.line, f.kind, f.path) for f in found] == [(10, "not_executable",
                                                          "scripts/ct_lint.py")], found
    code = "$SKILL_DIR/scripts/ct_lint.py src/compare.c"
    exit_code, output = run_block(code, d)
    dg = diagnose(code, exit_code, output, d, frozenset(), code)
    assert dg.kind == "defect" and "a misspelling of" in dg.reason, dg


@pytest.mark.parametrize("shebang", ["#!/usr/bin/env python3", "#!/usr/bin/python3.11",
                                     "#!/usr/bin/env -S uv run --script",
                                     "#!/usr/bin/env PYTHONUTF8=1 python3",
                                     "#!/usr/bin/env crystal", "#!/bin/bash -eu",
                                     # real interpreters one letter from a listed one
                                     "#!/bin/tcsh -f", "#!/usr/bin/env pythonw",
                                     "#!/usr/bin/env python3m", "#!/usr/bin/env rubyw",
                                     "#!/usr/bin/env nodejs", "#!/usr/bin/env perls"])
def test_a_usable_interpreter_line_is_no_finding(tmp_path, shebang):
    _, script = _skill(tmp_path, shebang)
    assert interpreter_problem(script) is None
