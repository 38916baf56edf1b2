#!/usr/bin/env bash
# du_top.sh <path> [count]: the largest entries directly under <path>, in MiB.
set -euo pipefail

path="${1:?usage: du_top.sh <path> [count]}"
count="${2:-10}"

if [ ! -d "$path" ]; then
  echo "du_top.sh: not a directory: $path" >&2
  exit 1
fi
case "$count" in
  ''|*[!0-9]*) echo "du_top.sh: count must be a number, got '$count'" >&2; exit 2 ;;
esac

# -x: stay on one filesystem; errors (unreadable folders) are counted, not shown
errors=0
listing="$(du -x -m -d 1 "$path" 2>/dev/null)" || errors=1
printf '%s\n' "$listing" | sort -rn | awk -F'\t' -v n="$count" -v p="$path" '$2 != p && shown < n { printf "%8d MiB  %s\n", $1, $2; shown++ }'
total="$(printf '%s\n' "$listing" | awk -F'\t' -v p="$path" '$2 == p { print $1 }')"
echo "total: ${total:-0} MiB under $path"
if [ "$errors" -ne 0 ]; then
  echo "(some folders could not be read; run with sudo for a full count)"
fi
