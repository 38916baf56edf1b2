"""Format a Linear issue (the JSON the GraphQL API returns) for a chat reply or a commit
message.

    python3 scripts/format_issue.py issue.json [--format markdown|oneline|commit]
"""

from __future__ import annotations

import argparse
import json
import sys


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    issue = data.get("data", {}).get("issue", data)
    for key in ("identifier", "title", "state"):
        if key not in issue:
            sys.exit(f"error: {path} has no issue.{key}; pass the API's JSON response")
    return issue


def markdown(issue: dict) -> str:
    labels = ", ".join(n["name"] for n in issue.get("labels", {}).get("nodes", [])) or "none"
    assignee = (issue.get("assignee") or {}).get("name", "unassigned")
    lines = [f"**{issue['identifier']}** {issue['title']}",
             f"State: {issue['state']['name']} · Assignee: {assignee} · Labels: {labels}"]
    if issue.get("description"):
        lines += ["", issue["description"].strip()]
    if issue.get("url"):
        lines += ["", issue["url"]]
    return "\n".join(lines)


def oneline(issue: dict) -> str:
    return f"{issue['identifier']} [{issue['state']['name']}] {issue['title']}"


def commit(issue: dict) -> str:
    return f"{issue['title']}\n\nFixes {issue['identifier']}"


FORMATS = {"markdown": markdown, "oneline": oneline, "commit": commit}


def main() -> int:
    p = argparse.ArgumentParser(prog="format_issue.py", description=__doc__.splitlines()[0])
    p.add_argument("file", help="JSON from the Linear API (or just the issue object)")
    p.add_argument("--format", choices=list(FORMATS), default="markdown")
    args = p.parse_args()
    print(FORMATS[args.format](load(args.file)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
