#!/usr/bin/env bash
# The scale matrix's per-case rows of several commits side by side, in one sitting: each
# commit in its own worktree and venv, the commits alternating round by round so that the
# machine's load falls on all of them alike.
#
#   bash benchmarks/scale_commits.sh 2a1420f 2e9f2d4 HEAD            # 2 rounds, 1,000 cases
#   ROUNDS=3 SIZES=1000 CONFIGS='run-*-embedded' bash benchmarks/scale_commits.sh A B
#
# Worktrees and venvs go under ${SCALE_DIR:-/var/tmp/aeval-scale-commits} (kept for reruns);
# one JSON per commit and round there, the table of each run on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${SCALE_DIR:-/var/tmp/aeval-scale-commits}"
ROUNDS="${ROUNDS:-2}"
mkdir -p "$DIR"
for c in "$@"; do
  sha="$(git rev-parse --short "$c")"
  tree="$DIR/$sha"
  if [ ! -d "$tree" ]; then
    git worktree add -q --detach "$tree" "$sha"
    python3 -m venv "$tree/.venv"
    "$tree/.venv/bin/pip" install -q -e "$tree[dask]"
  fi
done
for round in $(seq 1 "$ROUNDS"); do
  for c in "$@"; do
    sha="$(git rev-parse --short "$c")"
    echo "=== round $round, $sha, $(date -u +%T) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$DIR/$sha/.venv/bin/python" "$DIR/$sha/benchmarks/scale.py" --sizes "${SIZES:-1000}" \
      --configs "${CONFIGS:-run-threads-embedded,run-dask-embedded}" \
      --json "$DIR/$sha-round$round.json"
  done
done
