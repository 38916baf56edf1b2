#!/usr/bin/env python3
"""What the token in GITHUB_TOKEN may do: its scopes, expiry and rate limit."""

from __future__ import annotations

import argparse
import os
import sys
import urllib.error
import urllib.request

API = os.environ.get("GITHUB_API_URL", "https://api.github.com")


def ask(token: str) -> dict[str, str]:
    req = urllib.request.Request(f"{API}/rate_limit", headers={
        "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28"})
    with urllib.request.urlopen(req, timeout=15) as resp:
        return {k.lower(): v for k, v in resp.headers.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--needs", default="", help="comma-separated scopes the job needs")
    args = ap.parse_args()
    token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
    if not token:
        print("token_scopes.py: GITHUB_TOKEN is not set; export the token you want to check",
              file=sys.stderr)
        return 1
    try:
        headers = ask(token)
    except urllib.error.HTTPError as exc:
        print(f"token_scopes.py: the API refused the token ({exc.code} {exc.reason})",
              file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"token_scopes.py: cannot reach {API}: {exc}", file=sys.stderr)
        return 1
    scopes = [s.strip() for s in headers.get("x-oauth-scopes", "").split(",") if s.strip()]
    print(f"rate limit: {headers.get('x-ratelimit-remaining')}/{headers.get('x-ratelimit-limit')}")
    expiry = headers.get("github-authentication-token-expiration")
    print(f"expires: {expiry or 'never'}")
    if "x-oauth-scopes" not in headers:
        print("fine-grained token: no scopes to list; check its permissions in the settings")
        return 0
    print("scopes: " + (", ".join(scopes) or "(none)"))
    needs = {s.strip() for s in args.needs.split(",") if s.strip()}
    extra = sorted(set(scopes) - needs) if needs else []
    for scope in extra:
        print(f"broader than needed: {scope}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
