#!/usr/bin/env bash
# backtest.sh <prices.csv> [sma.py options]: check the CSV, then run the backtest.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
csv="${1:?usage: backtest.sh <prices.csv> [--fast N --slow N --cost-bps B]}"
shift
if ! head -1 "$csv" | grep -q 'date' || ! head -1 "$csv" | grep -q 'close'; then
  echo "backtest.sh: $csv needs a header with date and close columns" >&2
  exit 1
fi
exec python3 "$here/sma.py" "$csv" "$@"
