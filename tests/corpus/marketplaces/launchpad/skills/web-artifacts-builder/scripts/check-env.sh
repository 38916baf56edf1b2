#!/usr/bin/env bash
# Check that Node.js (and pnpm, if installed) are recent enough for the artifact tooling.
set -euo pipefail

min_node=18
while [ $# -gt 0 ]; do
  case "$1" in
    --min-node) min_node="$2"; shift 2 ;;
    -h|--help) echo "usage: check-env.sh [--min-node N]"; exit 0 ;;
    *) echo "check-env.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

if ! command -v node >/dev/null 2>&1; then
  echo "Node.js is not installed. Install Node $min_node or newer." >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt "$min_node" ]; then
  echo "Node $major found; Node $min_node or newer is required." >&2
  exit 1
fi
echo "node: $(node --version) (>= $min_node)"
if command -v pnpm >/dev/null 2>&1; then
  echo "pnpm: $(pnpm --version)"
else
  echo "pnpm: not installed (step 1 installs it)"
fi
