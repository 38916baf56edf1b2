"""The doc test's workspace as a git checkout: what a CI job always has.

A reader runs a skill inside their own repository, and every CI job runs in a git checkout,
so a doc test supplies that context honestly: before any block runs, the workspace (the
skill copy and the case's files in it) becomes a fresh git repository with one commit (of
every file up to 10 MB; a larger one stays untracked, so the attempt's disk holds no second
copy of it). A
release script's ``git rev-parse --is-inside-work-tree`` then finds a work tree, as in CI;
what a real checkout has beyond that (the reader's tags, remotes, history) stays the
reader's, and a script that refuses to run without it is ``untested: needs <context>``
(`aeval.verdicts.context`).

git runs inside the attempt's sandbox like every command of the case, with a neutral author
and committer from the environment and no system or host configuration (HOME is the
attempt's private one); a host without git leaves the workspace as it was, said in the log.
"""

from __future__ import annotations

from pathlib import Path

from aeval.isolation.redact import Redactor
from aeval.isolation.sandbox import Sandbox
from aeval.isolation.shell import run_command

IDENTITY = {"GIT_AUTHOR_NAME": "aeval doc test", "GIT_AUTHOR_EMAIL": "doc-test@aeval.invalid",
            "GIT_COMMITTER_NAME": "aeval doc test",
            "GIT_COMMITTER_EMAIL": "doc-test@aeval.invalid",
            "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
"""The commit's author and committer (no real person), a fixed date, and no system config."""

COMMAND = ("command -v git >/dev/null || { echo 'git is not installed: the doc test runs "
           "without a git checkout'; exit 0; }\n"
           "git -c init.defaultBranch=main init -q .\n"
           # a large file stays untracked: the commit never doubles a model or a data set
           "find . -path ./.git -prune -o -type f -size +10M -printf '/%P\\n' "
           ">> .git/info/exclude\n"
           "git add -A\n"
           "git -c commit.gpgsign=false commit -q --no-verify --allow-empty "
           "-m 'the skill as shipped (aeval doc test)'\n")


def git_checkout(workspace: Path, env: dict[str, str], timeout_s: float, cap: int,
                 redactor: Redactor | None = None, sandbox: Sandbox | None = None) -> str:
    """Make ``workspace`` a git repository with one commit of everything in it, inside
    ``sandbox``; returns the install log's entry. Never raises for git's own failure: the
    doc test then runs without the checkout, and a script that needs it says so."""
    r = run_command(COMMAND, workspace, {**env, **IDENTITY}, timeout_s, cap,
                    redactor=redactor, sandbox=sandbox)
    return (f"$ git init && git add -A && git commit  # the doc test's git checkout, exit "
            f"{r.exit_code}, {r.duration_s:.1f}s\n{r.combined()}\n")
