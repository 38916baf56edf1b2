"""Zero-key `aeval run` (literal runtime, real bubblewrap, real Prefect) on the two skills
of issues 49 and 45 that used to fail: SKILL.md's prose shorthand (`use
`scripts/make_report.py monthly``) for a script its blocks give to Python, which has no exec
bit and needs none; and a block with a placeholder holding a space (`--teams <team
slugs>`), which bash cannot parse. Neither is a `fail`, and the run does not exit 1."""

from __future__ import annotations

import json
from textwrap import dedent

import pytest

from aeval.deployments.cli.main import main
from tests.integration.test_shell_as_bash import DIGEST
from tests.unit.test_prose_shorthand import MAKE_REPORT, WEEKLY
from tests.unit.test_static_prose import build

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

PR_DIGEST = """\
---
name: pr-digest
description: Summarise a week of pull requests for the teams you lead. Use for the Monday
  status mail.
---
# PR digest

For the teams you lead:

```bash
python3 scripts/digest.py --teams <team slugs>
```

For example, the core team's last two weeks:

```bash
python3 scripts/digest.py --teams core --since 14d
```
"""


def test_prose_shorthand_and_a_spaced_placeholder_are_no_fail(tmp_path, capsys):
    mp, out = tmp_path / "mp", tmp_path / "store"
    build(mp / "weekly-report", {"SKILL.md": WEEKLY, "scripts/make_report.py": MAKE_REPORT})
    build(mp / "pr-digest", {"SKILL.md": PR_DIGEST,
                             "scripts/digest.py": dedent(DIGEST)})
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out)])
    console = capsys.readouterr().out
    assert code != 1, console
    assert "not executable" not in console and "with the documented arguments" not in console
    (rd,) = (out / "runs").iterdir()
    skills = {s["name"]: s for s in json.loads((rd / "run.json").read_text())["skills"]}
    assert skills["pr-digest"]["status"] == "pass", skills["pr-digest"]
    assert skills["weekly-report"]["status"] in ("pass", "untested"), skills["weekly-report"]
