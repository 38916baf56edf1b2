#!/usr/bin/env bash
# Keep the newest KEEP dumps in DIR; -n: dry run.
set -euo pipefail

usage() { echo "usage: prune.sh -o DIR -k KEEP [-n]" >&2; exit 2; }

dir="" keep="" dry=0
while getopts ":o:k:n" opt; do
  case "$opt" in
    o) dir="$OPTARG" ;;
    k) keep="$OPTARG" ;;
    n) dry=1 ;;
    *) usage ;;
  esac
done
[[ -n "$dir" && -n "$keep" ]] || usage
[[ "$keep" =~ ^[0-9]+$ ]] || { echo "prune.sh: KEEP must be a number: $keep" >&2; exit 2; }

if [[ ! -d "$dir" ]]; then
  echo "prune.sh: no backup folder $dir (nothing to prune)"
  exit 0
fi
mapfile -t dumps < <(ls -1t "$dir"/*.dump 2>/dev/null || true)
for old in "${dumps[@]:$keep}"; do
  if (( dry )); then echo "would remove $old"; else rm -f -- "$old"; echo "removed $old"; fi
done
echo "kept $(( ${#dumps[@]} < keep ? ${#dumps[@]} : keep )) of ${#dumps[@]}"
