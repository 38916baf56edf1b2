#!/usr/bin/env bash
# Group conventional-commit subjects into changelog sections, and compute the next version.
#
#   ./scripts/changelog.sh group commits.txt        # Markdown sections on stdout
#   ./scripts/changelog.sh bump 1.4.2 minor         # prints 1.5.0
#   ./scripts/changelog.sh help
set -euo pipefail

usage() {
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
}

group() {
  local file="$1"
  [ -f "$file" ] || { echo "error: $file not found" >&2; exit 1; }
  local section prefix
  for section in "Features:feat" "Fixes:fix" "Performance:perf" "Documentation:docs"; do
    prefix="${section#*:}"
    if grep -Eq "^${prefix}(\([^)]*\))?!?: " "$file"; then
      echo "### ${section%%:*}"
      echo
      grep -E "^${prefix}(\([^)]*\))?!?: " "$file" \
        | sed -E "s/^${prefix}(\(([^)]*)\))?!?: (.*)/- \3 (\2)/; s/ \(\)$//"
      echo
    fi
  done
  if grep -Eq '^[a-z]+(\([^)]*\))?!: |BREAKING CHANGE' "$file"; then
    echo "### Breaking changes"
    echo
    grep -E '^[a-z]+(\([^)]*\))?!: |BREAKING CHANGE' "$file" | sed 's/^/- /'
    echo
  fi
}

bump() {
  local version="$1" part="$2" major minor patch
  IFS=. read -r major minor patch <<<"$version"
  case "$part" in
    major) echo "$((major + 1)).0.0" ;;
    minor) echo "${major}.$((minor + 1)).0" ;;
    patch) echo "${major}.${minor}.$((patch + 1))" ;;
    *) echo "error: part must be major, minor or patch, not '$part'" >&2; exit 2 ;;
  esac
}

case "${1:-help}" in
  group) shift; group "$@" ;;
  bump) shift; bump "$@" ;;
  help|-h|--help) usage ;;
  *) echo "unknown command: $1 (try: $0 help)" >&2; exit 2 ;;
esac
