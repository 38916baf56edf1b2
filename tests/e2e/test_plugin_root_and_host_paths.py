"""Two readings of a plugin-style marketplace's shell that made clean skills `fail` (issue 45
class 3, issue 49 class 1), zero-key `aeval run` (literal runtime, real bubblewrap):

- a skill that points ``SKILL_DIR`` at its scripts through Claude Code's plugin root in one
  block (``SKILL_DIR="${CLAUDE_PLUGIN_ROOT}/skills/<name>/scripts"``) and does so again in a
  later block: the second assignment is the scripts folder again, never scripts/scripts
  (the plugin root's spelling was run as ``$SKILL_DIR``, which the first block had already
  changed);
- a documented argument that is a path of the reader's machine (``/var/log``,
  ``/srv/backups``): no case sees it, whatever the host running aeval has, so a script that
  refuses it, or fails quietly on it, needs the reader's path: never `fail`.

- a script given a file that an earlier block failed to make (``gh pr view ... > pr.json``
  without gh leaves an empty pr.json) is no evidence; ``-`` (standard input) is an operand,
  never an option the parser lacks; a script that refuses to run outside the reader's
  project, naming the folder it ran in ("no package.json in <folder>; run it from the root
  of your site's repository"), needs the reader's package.json.

The same skills with a real defect still fail: a script that crashes on the skill's own
sample, and one that crashes on a system file every case sees (``/etc/hosts``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from tests.unit.test_static_prose import build

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

ACCESS_SKILL = """\
---
name: access-triage
description: Summarise an nginx access log - status codes, the busiest paths, crawler share.
  Use for "the site was slow at 3am" or a 5xx spike.
---
# Access triage

Point the skill at its scripts first (Claude Code sets `CLAUDE_PLUGIN_ROOT`):

```bash
SKILL_DIR="${CLAUDE_PLUGIN_ROOT}/skills/access-triage/scripts"
```

## Summary

```bash
python3 "$SKILL_DIR/summarise.py" /var/log/nginx/access.log --top 10
```

Try it on the sample:

```bash
SKILL_DIR="${CLAUDE_PLUGIN_ROOT}/skills/access-triage/scripts"
python3 "$SKILL_DIR/summarise.py" "$SKILL_DIR/../samples/access.log" --top 3
```
"""

SUMMARISE = """\
import argparse
import collections
import sys
from pathlib import Path

p = argparse.ArgumentParser(prog="summarise.py")
p.add_argument("log")
p.add_argument("--top", type=int, default=10)
a = p.parse_args()
log = Path(a.log)
if not log.is_file():
    sys.exit(f"summarise.py: no such log: {log}")
codes = collections.Counter(line.split('"')[2].split()[0] for line in log.open())
for code, n in codes.most_common(a.top):
    print(f"{code} {n}")
"""

SAMPLE = ('203.0.113.9 - - [02/May/2024:03:00:01 +0000] "GET / HTTP/1.1" 200 512 "-" "curl"\n'
          '203.0.113.9 - - [02/May/2024:03:00:02 +0000] "GET /api HTTP/1.1" 502 0 "-" "curl"\n')

DISK_SKILL = """\
---
name: old-files
description: List rotated logs and old backups older than N days with their total size,
  before a clean-up. Use when a disk fills up.
---
# Old files

Rotated logs older than two weeks:

```bash
bash "${CLAUDE_PLUGIN_ROOT}/skills/old-files/scripts/old_files.sh" /var/log 14
```

Backups older than a month:

```bash
bash "${CLAUDE_PLUGIN_ROOT}/skills/old-files/scripts/old_files.sh" /srv/backups 30
```

Any folder works; the skill's own samples:

```bash
bash "${CLAUDE_PLUGIN_ROOT}/skills/old-files/scripts/old_files.sh" samples 0
```
"""

# fails quietly on a folder it cannot read: `find` exits 1, pipefail makes it the script's
OLD_FILES = """\
#!/usr/bin/env bash
set -euo pipefail
dir="${1:?usage: old_files.sh <dir> [days]}"
days="${2:-14}"
find "$dir" -type f -mtime +"$days" -printf '%s\\t%p\\n' 2>/dev/null \\
  | sort -rn \\
  | awk -F'\\t' '{ t += $1; print $2 } END { printf "total: %.1f MiB\\n", t / 1048576 }'
"""

HOSTS_SKILL = """\
---
name: hosts-check
description: Check /etc/hosts for duplicate names before editing it. Use when a name
  resolves to the wrong address.
---
# Hosts check

```bash
python3 "${CLAUDE_PLUGIN_ROOT}/skills/hosts-check/scripts/dupes.py" /etc/hosts
```
"""

DUPES = """\
import collections
import sys

names = collections.Counter()
for line in open(sys.argv[1]):
    fields = line.split("#")[0].split()
    names.update(fields[1:])
print(sorted(n for n, c in names.items() if c > 1)[0])  # IndexError when there is none
"""


PR_SKILL = """\
---
name: pr-lines
description: Count the lines a pull request changes per file, lock files left out, and
  summarise its reviews. Use before asking for a review of a large change.
---
# PR lines

```bash
gh pr view --json number,title,reviews > pr.json
```

```bash
python3 scripts/reviews.py pr.json
```

```bash
gh pr diff | python3 scripts/lines.py -
```

The bundled examples:

```bash
python3 scripts/reviews.py samples/pr.json
python3 scripts/lines.py - < samples/change.diff
python3 scripts/site_check.py
```
"""

REVIEWS = """\
import json
import sys

try:
    pr = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit(f"reviews.py: cannot read {sys.argv[1]}: {e}")
print(pr["title"], len(pr["reviews"]), "review(s)")
"""

LINES = """\
import argparse
import sys

p = argparse.ArgumentParser(prog="lines.py")
p.add_argument("diff", help="a unified diff, or - for standard input")
a = p.parse_args()
text = sys.stdin.read() if a.diff == "-" else open(a.diff).read()
print(sum(1 for ln in text.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")))
"""

SITE_CHECK = """\
import os
import sys

if not os.path.exists("package.json"):
    sys.exit(f"site_check.py: no package.json in {os.getcwd()}; run it from the root of "
             "your site's repository")
"""


def skills(out: Path) -> dict[str, dict]:
    (rd,) = (out / "runs").iterdir()
    return {s["name"]: s for s in json.loads((rd / "run.json").read_text())["skills"]}


def marketplace(root: Path, summarise: str = SUMMARISE) -> Path:
    skills_dir = root / "plugins" / "ops" / "skills"
    build(skills_dir / "access-triage", {"SKILL.md": ACCESS_SKILL,
                                         "scripts/summarise.py": summarise,
                                         "samples/access.log": SAMPLE})
    build(skills_dir / "pr-lines", {
        "SKILL.md": PR_SKILL, "scripts/reviews.py": REVIEWS, "scripts/lines.py": LINES,
        "scripts/site_check.py": SITE_CHECK,
        "samples/pr.json": json.dumps({"title": "Cache by size", "reviews": [{"state": "OK"}]}),
        "samples/change.diff": "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"})
    build(skills_dir / "old-files", {"SKILL.md": DISK_SKILL, "scripts/old_files.sh": OLD_FILES,
                                     "samples/a.log.1": "rotated\n"})
    return root


def test_a_reassigned_skill_dir_and_the_readers_paths_are_no_fail(tmp_path, capsys):
    mp, out = marketplace(tmp_path / "mp"), tmp_path / "store"
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 0, console
    assert "scripts/scripts" not in console, console
    got = skills(out)
    # each ran its sample and passed: nothing was taken on the reader's word
    assert got["access-triage"]["status"] == "pass", got["access-triage"]
    assert got["old-files"]["status"] == "pass", got["old-files"]
    assert got["pr-lines"]["status"] in ("pass", "untested"), got["pr-lines"]
    assert "does not accept it" not in console
    (rd,) = (out / "runs").iterdir()
    metadata = "".join(p.read_text() for p in rd.rglob("grading.json"))
    assert "/var/log" in metadata and "the reader supplies" in metadata


def test_the_same_styles_with_a_real_defect_still_fail(tmp_path, capsys):
    broken = SUMMARISE.replace("most_common(a.top)", "most_common(a.top_n)")  # a rename
    assert broken != SUMMARISE
    mp, out = marketplace(tmp_path / "mp", broken), tmp_path / "store"
    build(mp / "plugins" / "ops" / "skills" / "hosts-check",
          {"SKILL.md": HOSTS_SKILL, "scripts/dupes.py": DUPES})
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 1, console
    got = skills(out)
    assert got["access-triage"]["status"] == "fail", got["access-triage"]
    assert got["hosts-check"]["status"] == "fail", got["hosts-check"]
    assert got["old-files"]["status"] == "pass", got["old-files"]
    assert "scripts/summarise.py" in console and "scripts/scripts" not in console
