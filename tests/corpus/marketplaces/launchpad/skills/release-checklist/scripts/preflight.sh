#!/usr/bin/env bash
# Checks before tagging a release.
set -uo pipefail

manifest=package.json
changelog=CHANGELOG.md
while [ $# -gt 0 ]; do
  case "$1" in
    --manifest) manifest="$2"; shift 2 ;;
    --changelog) changelog="$2"; shift 2 ;;
    *) echo "preflight.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

failed=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; failed=1; fi; }

version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -1)
top=$(grep -m1 -o '^## \[[^]]*\]' "$changelog" | tr -d '#[] ')
check "manifest version ($version) is the changelog's top entry ($top)" '[ "$version" = "$top" ]'
check "the top entry has a date" 'grep -m1 "^## \[" "$changelog" | grep -Eq "[0-9]{4}-[0-9]{2}-[0-9]{2}"'
check "no TODO in the changelog" '! grep -q TODO "$changelog"'
exit $failed
