#!/usr/bin/env bash
# old_logs.sh <dir> [days]: rotated logs older than <days> (default 14), and their total size.
set -euo pipefail
dir="${1:?usage: old_logs.sh <dir> [days]}"
days="${2:-14}"
find "$dir" -xdev -type f \( -name '*.gz' -o -name '*.[0-9]' -o -name '*.old' \) \
  -mtime +"$days" -printf '%s\t%p\n' 2>/dev/null \
  | sort -rn \
  | awk -F'\t' '{ total += $1; printf "%10.1f KiB  %s\n", $1 / 1024, $2 } END { printf "total: %.1f MiB\n", total / 1048576 }'
