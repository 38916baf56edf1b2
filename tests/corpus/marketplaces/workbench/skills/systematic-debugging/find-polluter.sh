#!/usr/bin/env bash
# Bisect a test suite for the test that leaves a file or folder behind.
# Usage: ./find-polluter.sh <path_to_check> <test_file_pattern> [runner]
#   path_to_check      the file or folder that appears, e.g. '.git' or 'tmp/cache.db'
#   test_file_pattern  a find -path pattern, e.g. 'src/**/*.test.ts'
#   runner             the command that runs one test file (default: npm test --)
set -uo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  sed -n '3,6p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi

CHECK="$1"
PATTERN="$2"
RUNNER="${3:-npm test --}"

if [ -e "$CHECK" ]; then
  echo "$CHECK already exists before any test ran: remove it first" >&2
  exit 1
fi

mapfile -t FILES < <(find . -path "./$PATTERN" -type f | sort)
echo "checking ${#FILES[@]} test file(s) for the one that creates $CHECK"

for i in "${!FILES[@]}"; do
  file="${FILES[$i]}"
  echo "[$((i + 1))/${#FILES[@]}] $file"
  $RUNNER "$file" >/dev/null 2>&1 || true
  if [ -e "$CHECK" ]; then
    echo
    echo "FOUND POLLUTER: $file creates $CHECK"
    echo "  rerun alone: $RUNNER $file"
    exit 1
  fi
done

echo "no polluter: no test file created $CHECK"
