# /// script
# requires-python = ">=3.9"
# dependencies = [
#     "python-dateutil>=2.8",
# ]
# ///
"""Digest of a pull request's reviews from `gh pr view --json ...` output."""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

from dateutil import parser as dateparser


def latest_reviews(reviews: list[dict]) -> dict[str, dict]:
    """The latest review of each reviewer (COMMENTED reviews do not change a verdict)."""
    latest: dict[str, dict] = {}
    for review in sorted(reviews, key=lambda r: dateparser.isoparse(r["submittedAt"])):
        login = review["author"]["login"]
        if login.endswith("[bot]"):
            continue
        if review["state"] == "COMMENTED" and login in latest:
            continue
        latest[login] = review
    return latest


def digest(pr: dict, group_by: str) -> str:
    lines = [f"# PR #{pr['number']}: {pr['title']} (by @{pr['author']['login']})", ""]
    latest = latest_reviews(pr.get("reviews", []))
    if group_by == "reviewer":
        for login, review in sorted(latest.items()):
            lines.append(f"- @{login}: {review['state'].lower().replace('_', ' ')}")
    else:
        by_state: dict[str, list[str]] = defaultdict(list)
        for login, review in latest.items():
            by_state[review["state"]].append(login)
        for state in ("CHANGES_REQUESTED", "APPROVED", "COMMENTED"):
            if by_state[state]:
                names = ", ".join(f"@{n}" for n in sorted(by_state[state]))
                lines.append(f"- {state.lower().replace('_', ' ')}: {names}")
    comments = [c for c in pr.get("comments", []) if not c["author"]["login"].endswith("[bot]")]
    lines += ["", f"{len(comments)} comment(s) from people."]
    blocking = [n for n, r in latest.items() if r["state"] == "CHANGES_REQUESTED"]
    decision = pr.get("reviewDecision") or "REVIEW_REQUIRED"
    if blocking:
        lines.append("Blocked by: " + ", ".join(f"@{n}" for n in sorted(blocking)))
    lines.append(f"Review decision: {decision}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("pr_json", help="output of gh pr view --json number,title,author,reviews,...")
    ap.add_argument("--group-by", choices=["state", "reviewer"], default="state")
    args = ap.parse_args()
    try:
        with open(args.pr_json, encoding="utf-8") as fh:
            pr = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        print(f"digest.py: cannot read {args.pr_json}: {exc}", file=sys.stderr)
        return 1
    print(digest(pr, args.group_by))
    return 0


if __name__ == "__main__":
    sys.exit(main())
