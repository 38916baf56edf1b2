"""Issue 49, class 1, through zero-key `aeval run` (literal runtime, the real sandbox): a
skill whose script refuses the reader's context is `untested: needs <context>` with the
script's words, never `fail`; the doc test runs in a git checkout, so a release skill that
checks the git state passes; and the planted counterparts (a renamed flag, a module that
lost a function, a shipped template that is gone, a renamed argparse flag) still fail.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from textwrap import dedent

import pytest

from aeval.deployments.cli.main import main

pytestmark = pytest.mark.usefixtures("prefect_harness")

CHECK_RELEASE = """\
    #!/usr/bin/env bash
    # Is this a repository we can release from?
    set -euo pipefail
    case "${1:-}" in
      ""|--upstream) ;;
      *) echo "usage: check_release.sh [--upstream]" >&2
         echo "error: unknown option: $1" >&2; exit 2 ;;
    esac
    git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
      { echo "error: not inside a git repository" >&2; exit 1; }
    echo "branch: $(git rev-parse --abbrev-ref HEAD)"
    echo "head:   $(git log -1 --format=%s)"
    if [ -n "$(git status --porcelain)" ]; then echo "warning: uncommitted changes"; fi
    """

DRAFT_NOTES = """\
    #!/usr/bin/env bash
    set -euo pipefail
    since=$(git describe --tags --abbrev=0 2>/dev/null || git rev-list --max-parents=0 HEAD)
    echo "## Changes since ${since:0:12}"
    git log --format='- %s' "$since"..HEAD
    """


def release(flag: str = "") -> dict[str, str]:
    return {
        "SKILL.md": f"""\
            ---
            name: release-notes
            description: Prepare a release of the current repository - check the release
              state, then draft release notes from the git history since the last tag.
            ---
            # Release notes

            First, check the release state:

            ```bash
            bash {{baseDir}}/scripts/check_release.sh{flag}
            ```

            Then draft the notes (they go to stdout; paste them into the release):

            ```bash
            bash {{baseDir}}/scripts/draft_notes.sh
            ```
            """,
        "scripts/check_release.sh": CHECK_RELEASE,
        "scripts/draft_notes.sh": DRAFT_NOTES,
    }


ADD_COMPONENT = """\
    #!/usr/bin/env bash
    # Add a component from the skill's templates to the reader's React app.
    set -euo pipefail
    name="$1"
    tpl="$(dirname "$0")/../templates/Component.tsx"
    [ -f "$tpl" ] || { echo "error: template $tpl not found" >&2; exit 1; }
    [ -f package.json ] ||
      { echo "✖ package.json not found. cd into your React app first." >&2; exit 1; }
    mkdir -p src/components
    sed "s/__NAME__/$name/g" "$tpl" > "src/components/$name.tsx"
    echo "created src/components/$name.tsx"
    """


def frontend(template: bool = True) -> dict[str, str]:
    files = {
        "SKILL.md": """\
            ---
            name: react-components
            description: Scaffold typed React components into an existing Vite app, from
              the skill's templates.
            ---
            # React components

            From your app's root folder:

            ```bash
            bash scripts/add_component.sh PricingCard
            ```
            """,
        "scripts/add_component.sh": ADD_COMPONENT,
    }
    if template:
        files["templates/Component.tsx"] = ("export function __NAME__() {\n"
                                            "  return <div className=\"__NAME__\" />;\n}\n")
    return files


GHLIB = """\
    import json
    import os
    import sys
    import urllib.request
    from pathlib import Path

    LOGIN = Path.home() / ".config" / "pr-digest" / "token"


    def auth_token():
        token = os.environ.get("GITHUB_TOKEN") or (LOGIN.read_text().strip()
                                                   if LOGIN.is_file() else "")
        if not token:
            sys.exit("error: GITHUB_TOKEN is not set and you are not logged in "
                     "(run `pr-digest login` or export a token with repo scope)")
        return token


    def fetch_pulls(repo, state, token):
        req = urllib.request.Request(f"https://api.github.com/repos/{repo}/pulls?state={state}",
                                     headers={"Authorization": f"Bearer {token}"})
        return json.load(urllib.request.urlopen(req, timeout=20))
    """

PR_DIGEST = """\
    import argparse

    from ghlib import {name}, fetch_pulls

    ap = argparse.ArgumentParser(prog="pr_digest.py")
    ap.add_argument("--repo", required=True)
    ap.add_argument("--state", default="open", choices=["open", "closed", "all"])
    args = ap.parse_args()
    for pr in fetch_pulls(args.repo, args.state, {name}()):
        print(f"#{{pr['number']}} {{pr['title']}}")
    """


def github(name: str = "auth_token") -> dict[str, str]:
    return {
        "SKILL.md": """\
            ---
            name: pr-digest
            description: Summarize a GitHub repository's open pull requests for a standup.
            ---
            # PR digest

            Needs a GitHub token (`GITHUB_TOKEN`) or `pr-digest login`.

            ```bash
            python3 scripts/pr_digest.py --repo acme/storefront --state open
            ```
            """,
        "scripts/ghlib.py": GHLIB,
        "scripts/pr_digest.py": PR_DIGEST.format(name=name),
    }


PROFILE = """\
    import argparse
    import csv
    import sys
    from pathlib import Path

    ap = argparse.ArgumentParser(prog="profile.py", description="Profile a CRM sales export.")
    ap.add_argument("csv")
    ap.add_argument("--{flag}", type=int, default=5)
    args = ap.parse_args()
    if not Path(args.csv).is_file():
        sys.exit(f"error: {{args.csv}} does not exist - export it from the CRM first")
    rows = list(csv.DictReader(open(args.csv)))
    print(len(rows), "rows")
    """


def data(flag: str = "top") -> dict[str, str]:
    return {
        "SKILL.md": """\
            ---
            name: sales-profile
            description: Profile a CRM sales export (row count, top accounts by revenue).
            ---
            # Sales profile

            See the options:

            ```bash
            python3 scripts/profile.py --help
            ```

            Profile your export:

            ```bash
            python3 scripts/profile.py exports/sales.csv --top 5
            ```
            """,
        "scripts/profile.py": PROFILE.format(flag=flag),
    }


def run(tmp: Path, skills: dict[str, dict[str, str]]) -> tuple[int, dict[str, dict]]:
    mp, out = tmp / "mp", tmp / "store"
    for name, files in skills.items():
        for rel, text in files.items():
            p = mp / "skills" / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(dedent(text))
            os.chmod(p, 0o644)
    code = main(["run", str(mp), "--runtime", "literal", "--out", str(out), "-q"])
    (rd,) = (out / "runs").iterdir()
    run_ = json.loads((rd / "run.json").read_text())
    return code, {s["name"]: s["cases"][0] for s in run_["skills"]}


def test_a_script_refusing_the_readers_context_is_untested_naming_it_and_git_is_supplied(
        tmp_path):
    code, cases = run(tmp_path, {"release-notes": release(), "react-components": frontend(),
                                 "pr-digest": github(), "sales-profile": data()})
    found = {n: (c["status"], c["reason"]) for n, c in cases.items()}
    # the doc test runs in a git checkout, as CI does: the release skill's checks run
    assert found["release-notes"][0] == "pass", found
    assert found["react-components"] == ("untested", (
        "needs the reader's package.json (scripts/add_component.sh says \"✖ package.json "
        "not found. cd into your React app first.\")")), found
    status, reason = found["pr-digest"]
    assert status == "untested", found
    assert reason.startswith("needs GITHUB_TOKEN (scripts/pr_digest.py says \"error: "
                             "GITHUB_TOKEN is not set and you are not logged in"), reason
    # its --help block ran: a silent pass before, though the profile itself never ran
    assert found["sales-profile"] == ("untested", (
        "needs the reader's exports/sales.csv (scripts/profile.py says \"error: exports/"
        "sales.csv does not exist - export it from the CRM first\")")), found
    assert code == 0, found


def test_the_planted_counterparts_still_fail(tmp_path):
    code, cases = run(tmp_path, {
        "release-notes": release(" --remote origin"),     # a flag the script never had
        "react-components": frontend(template=False),     # its shipped template is gone
        "pr-digest": github("get_token"),                 # ghlib has no get_token
        "sales-profile": data("limit")})                  # --top renamed --limit
    found = {n: (c["status"], c["reason"]) for n, c in cases.items()}
    assert {n: s for n, (s, _) in found.items()} == {
        "release-notes": "fail", "react-components": "fail", "pr-digest": "fail",
        "sales-profile": "fail"}, found
    assert "--remote" in found["release-notes"][1]
    assert "templates/Component.tsx not found" in found["react-components"][1]
    # S0's deep tier names it before anything runs; the run itself says it the same way
    assert re.search(r"get_token.*ghlib|cannot import name 'get_token'", found["pr-digest"][1])
    assert "--top" in found["sales-profile"][1]
    assert code == 1
